import { ApiError } from "../errors.js";
import { parseJsonText, readBytesLimited, utf8OrUndefined } from "./validate.js";
import { MAX_TASK_BODY_BYTES, type TaskInput } from "../../shared/schemas/task.js";

export type TaskBody = Pick<TaskInput, "body" | "bodyEncoding">;

/** `application/json` and any `*\/*+json`: the only bodies the service validates. */
export function saysJson(contentType: string | null): boolean {
  const type = contentType?.split(";")[0]?.trim().toLowerCase() ?? "";
  return type === "application/json" || /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+\+json$/.test(type);
}

/**
 * A task's body as the function will get it, byte for byte (task creation, /gc calls): any
 * Content-Type, at most 10 MiB. Only a body whose Content-Type says JSON must be valid JSON. Text
 * that is valid UTF-8 travels as is; anything else as base64, marked so.
 */
export async function readTaskBody(req: Request): Promise<TaskBody> {
  return taskBodyOf(await readBytesLimited(req, MAX_TASK_BODY_BYTES), req.headers.get("content-type"));
}

/** Bytes already read (a stored schedule payload) as a task's body, by the rules of readTaskBody. */
export function taskBodyOf(bytes: Uint8Array, contentType: string | null): TaskBody {
  if (bytes.byteLength === 0) return { body: null };
  if (saysJson(contentType)) {
    const text = utf8OrUndefined(bytes);
    if (text === undefined) throw new ApiError("invalid_json", "the body says it is JSON but is not valid UTF-8");
    // Whitespace alone is no body; invalid JSON answers 400 invalid_json from the parser.
    return parseJsonText(text) === undefined ? { body: null } : { body: text };
  }
  const text = utf8OrUndefined(bytes, true);
  return text === undefined ? { body: base64Of(bytes), bodyEncoding: "base64" } : { body: text };
}

export function base64Of(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}
