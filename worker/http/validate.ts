import type { Context } from "hono";
import type { z } from "zod";
import { ApiError, validationFailed, type ErrorDetail } from "../errors.js";
import { MAX_JSON_BYTES } from "../../shared/schemas/task.js";

type ContentTypeRule = "required" | "optional";

/** Turns zod issues into the `details` of the error body: one entry per offending field. */
export function issuesToDetails(issues: z.core.$ZodIssue[], root = "body"): ErrorDetail[] {
  const details: ErrorDetail[] = [];
  for (const issue of issues) {
    const base = formatPath(issue.path);
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) details.push({ field: base ? `${base}.${key}` : key, message: "is not a known field" });
    } else {
      details.push({ field: base || root, message: issue.message });
    }
  }
  return details;
}

function formatPath(path: PropertyKey[]): string {
  let out = "";
  for (const p of path) out += typeof p === "number" ? `[${p}]` : out ? `.${String(p)}` : String(p);
  return out;
}

export function parseWith<S extends z.ZodType>(schema: S, value: unknown, root = "body"): z.output<S> {
  const result = schema.safeParse(value);
  if (!result.success) throw validationFailed(issuesToDetails(result.error.issues, root));
  return result.data;
}

const isJsonType = (ct: string | undefined) => !!ct && /^application\/json\s*(;|$)/i.test(ct.trim());

/** The body's bytes, refused with 413 past `limit` (declared or counted); never more is buffered. */
export async function readBytesLimited(req: Request, limit: number): Promise<Uint8Array> {
  const declared = req.headers.get("content-length");
  if (declared && Number(declared) > limit) throw tooLarge(limit);
  if (!req.body) return new Uint8Array(0);
  // A declared length within the limit frames the body (the runtime reads exactly that many
  // bytes), so one native read replaces a promise per chunk: the common case, and a hot one.
  if (declared && /^\d+$/.test(declared)) {
    const bytes = new Uint8Array(await req.arrayBuffer());
    if (bytes.byteLength > limit) throw tooLarge(limit);
    return bytes;
  }
  const reader = req.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.byteLength;
  }
  return all;
}

/**
 * The bytes as UTF-8 text, or undefined when they are not valid UTF-8. `keepBom` keeps a leading
 * byte-order mark, for text that must be handed on byte for byte.
 */
export function utf8OrUndefined(bytes: Uint8Array, keepBom = false): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: keepBom }).decode(bytes);
  } catch {
    return undefined;
  }
}

export async function readTextLimited(req: Request, limit: number): Promise<string> {
  const text = utf8OrUndefined(await readBytesLimited(req, limit));
  if (text === undefined) throw new ApiError("invalid_json", "the body is not valid UTF-8");
  return text;
}

const tooLarge = (limit: number) =>
  new ApiError("payload_too_large", `the body exceeds ${Math.round(limit / 1024 / 1024)} MiB`);

/** Parses a JSON text; `undefined` for an empty body. */
export function parseJsonText(text: string): unknown {
  if (text.trim() === "") return undefined;
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ApiError("invalid_json", `the body is not valid JSON: ${(e as Error).message}`);
  }
}

export function requireJsonContentType(c: Context, rule: ContentTypeRule) {
  const ct = c.req.header("content-type");
  if (rule === "required" ? !isJsonType(ct) : ct !== undefined && ct.trim() !== "" && !isJsonType(ct))
    throw new ApiError("unsupported_media_type", "Content-Type must be application/json");
}

/**
 * A JSON object body validated by `schema`. `contentType: "required"` where the specification
 * lists the header; `emptyAs` lets all-optional bodies be omitted.
 */
export async function jsonBody<S extends z.ZodType>(
  c: Context,
  schema: S,
  opts: { contentType: ContentTypeRule; emptyAs?: Record<string, never> } = { contentType: "required" },
): Promise<z.output<S>> {
  requireJsonContentType(c, opts.contentType);
  const value = parseJsonText(await readTextLimited(c.req.raw, MAX_JSON_BYTES));
  if (value === undefined) {
    if (opts.emptyAs) return parseWith(schema, opts.emptyAs);
    throw new ApiError("invalid_json", "a JSON body is required");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw validationFailed([{ field: "body", message: "must be a JSON object" }]);
  return parseWith(schema, value);
}

/** Query parameters as single strings; a repeated parameter is refused rather than guessed at. */
export function queryObject(c: Context): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, values] of Object.entries(c.req.queries())) {
    if (values.length > 1) throw validationFailed([{ field: key, message: "must be given once" }]);
    out[key] = values[0]!;
  }
  return out;
}

export const query = <S extends z.ZodType>(c: Context, schema: S): z.output<S> => parseWith(schema, queryObject(c), "query");

/**
 * List filters that the specification sends "in a JSON body" on GET. The same names are accepted
 * as query parameters; a body value wins over a query value.
 */
export async function listFilters<S extends z.ZodType>(c: Context, schema: S): Promise<z.output<S>> {
  const fromQuery: Record<string, unknown> = queryObject(c);
  const text = await readTextLimited(c.req.raw, MAX_JSON_BYTES);
  // As for the other bodies without a required Content-Type: it may be omitted, not contradicted.
  // A bodiless GET is not judged by a stray header.
  if (text.trim() !== "") requireJsonContentType(c, "optional");
  const body = parseJsonText(text);
  if (body !== undefined && (typeof body !== "object" || body === null || Array.isArray(body)))
    throw validationFailed([{ field: "body", message: "must be a JSON object" }]);
  return parseWith(schema, { ...fromQuery, ...(body as Record<string, unknown> | undefined) });
}
