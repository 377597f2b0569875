import fs from "node:fs/promises";
import path from "node:path";
import type { Args, Context } from "./command.js";
import { UsageError } from "./errors.js";

/** Bytes from an option's value: inline text, `@file`, or `-` for stdin; undefined when not given. */
export async function readBytesOption(ctx: Context, a: Args, option: string): Promise<Uint8Array | undefined> {
  const raw = a.str(option);
  if (raw === undefined) return undefined;
  if (raw === "-") {
    const chunks: Buffer[] = [];
    for await (const c of ctx.stdin) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(String(c)));
    return Buffer.concat(chunks);
  }
  if (raw.startsWith("@")) {
    const file = path.resolve(ctx.cwd, raw.slice(1));
    return fs.readFile(file).catch(() => {
      throw new UsageError(`cannot read --${option} file ${raw.slice(1)}`, a.command);
    });
  }
  return Buffer.from(raw, "utf8");
}

/** `--data` as bytes (see readBytesOption). */
export const readDataBytes = (ctx: Context, a: Args) => readBytesOption(ctx, a, "data");

export function parseQuery(a: Args): URLSearchParams {
  const q = new URLSearchParams();
  for (const item of a.list("query")) {
    const eq = item.indexOf("=");
    if (eq <= 0) throw new UsageError(`--query takes key=value, got "${item}"`, a.command);
    q.append(item.slice(0, eq), item.slice(eq + 1));
  }
  return q;
}

export function parseHeaders(a: Args): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const item of a.list("header")) {
    const colon = item.indexOf(":");
    if (colon <= 0) throw new UsageError(`--header takes "Name: value", got "${item}"`, a.command);
    headers[item.slice(0, colon).trim().toLowerCase()] = item.slice(colon + 1).trim();
  }
  return headers;
}

/**
 * The task's body: `--data` is JSON (checked here, sent as application/json); `--data-binary` is
 * any bytes, sent as they are with `--content-type` (default application/octet-stream).
 */
export async function taskBody(ctx: Context, a: Args): Promise<{ bytes: Uint8Array; contentType: string } | undefined> {
  if (a.has("data") && a.has("data-binary")) throw new UsageError("give --data (JSON) or --data-binary (any bytes), not both", a.command);
  const binary = await readBytesOption(ctx, a, "data-binary");
  if (binary !== undefined) return { bytes: binary, contentType: a.str("content-type") ?? "application/octet-stream" };
  const bytes = await readDataBytes(ctx, a);
  if (bytes === undefined) {
    if (a.has("content-type")) throw new UsageError("--content-type goes with --data-binary", a.command);
    return undefined;
  }
  const text = Buffer.from(bytes).toString("utf8");
  try {
    JSON.parse(text);
  } catch (err) {
    throw new UsageError(`--data must be valid JSON (${(err as Error).message}); send other bodies with --data-binary and --content-type`, a.command);
  }
  return { bytes, contentType: a.str("content-type") ?? "application/json" };
}
