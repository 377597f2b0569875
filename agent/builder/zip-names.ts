import { ZipRefusedError } from "./zip-refused.js";

/** The longest name of one folder or file: Linux's NAME_MAX (ext4 and every common file system). */
export const MAX_NAME_PART_BYTES = 255;
/**
 * The longest entry name (or symlink target). The build's host folder and `/src` come before it,
 * and a full path may have at most 4,096 bytes (PATH_MAX): 1,024 leaves the host's part room and is
 * far beyond what real sources need (deep node_modules paths stay under 300).
 */
export const MAX_NAME_BYTES = 1024;
/** Folders an entry may be nested in. */
export const MAX_NAME_DEPTH = 100;

const SHOWN_CHARS = 120;

/**
 * An entry name as a build log shows it: quoted and escaped (control characters too), and shortened
 * when long, as zip names may have 64 KiB and a build's failure reason at most 4 KiB.
 */
export function shownName(name: string): string {
  return JSON.stringify(name.length <= SHOWN_CHARS ? name : `${name.slice(0, 80)}…${name.slice(-30)}`);
}

/**
 * Refuses a name (an entry's, or a symlink's target) that no file system could hold where the build
 * unpacks it, before any file is touched: the refusal speaks of the zip, not of the host.
 */
export function checkNameFits(name: string, what: string): void {
  const bytes = Buffer.byteLength(name);
  if (bytes > MAX_NAME_BYTES) throw new ZipRefusedError(`${what} is ${bytes} bytes long; names may have at most ${MAX_NAME_BYTES} bytes`);
  const parts = name.split("/").filter((p) => p !== "");
  if (parts.length - 1 > MAX_NAME_DEPTH) throw new ZipRefusedError(`${what} is nested ${parts.length - 1} folders deep; at most ${MAX_NAME_DEPTH} are allowed`);
  const long = parts.find((p) => Buffer.byteLength(p) > MAX_NAME_PART_BYTES);
  if (long !== undefined) {
    throw new ZipRefusedError(`${what} has a folder or file name of ${Buffer.byteLength(long)} bytes (${shownName(long)}); each may have at most ${MAX_NAME_PART_BYTES} bytes`);
  }
}
