import { MAX_STORAGE_BYTES, STORAGE_HEADER, type StorageChange } from "../../shared/schemas/storage.js";

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Takes the function's `GC-Storage` response header off its headers (it is not part of the
 * result) and says what it does to the function's storage: an empty value clears it; a base64
 * value of at most 1 MiB sets it; anything else is not stored and the task's log says why.
 */
export function takeStorage(headers: Record<string, string>, log: string[]): { change: StorageChange; bytes?: Buffer } | undefined {
  const name = Object.keys(headers).find((k) => k.toLowerCase() === STORAGE_HEADER);
  if (name === undefined) return undefined;
  const value = (headers[name] ?? "").trim();
  delete headers[name];
  if (value === "") return { change: { op: "clear" } };
  if (value.length % 4 !== 0 || !BASE64.test(value)) {
    log.push("[runtime] GC-Storage not stored: the header's value is not base64");
    return undefined;
  }
  const bytes = Buffer.from(value, "base64");
  if (bytes.length > MAX_STORAGE_BYTES) {
    log.push(`[runtime] GC-Storage not stored: ${bytes.length} bytes is more than the 1 MiB a function may store`);
    return undefined;
  }
  if (bytes.length === 0) return { change: { op: "clear" } };
  return { change: { op: "set", size: bytes.length, value }, bytes };
}
