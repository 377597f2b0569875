import { taskInputKey } from "../lib/storage-keys.js";
import { JsonScanner, jsonEscaped } from "../lib/json-scan.js";
import { base64Of } from "../http/task-body.js";
import { utf8OrUndefined } from "../http/validate.js";
import type { StagedInput } from "../tasks/row.js";
import type { TaskRow } from "../db/rows.js";
import type { TaskInput } from "../../shared/schemas/task.js";

/** Results up to this size are handed over by value: their input stays small enough for its row. */
export const SMALL_RESULT_BYTES = 16 * 1024;

const contentTypeOf = (headers: TaskRow["resultHeaders"]) =>
  Object.entries(headers ?? {}).find(([k]) => k.toLowerCase() === "content-type")?.[1] ?? "application/octet-stream";

/** A small result as the chained task's input, by the rules below, in memory. */
export function smallResultAsInput(bytes: Uint8Array, resultHeaders: TaskRow["resultHeaders"]): TaskInput {
  const text = utf8OrUndefined(bytes, true);
  if (text === undefined) return { method: "POST", query: {}, headers: { "content-type": contentTypeOf(resultHeaders) }, body: base64Of(bytes), bodyEncoding: "base64" };
  let body: string;
  try {
    JSON.parse(text);
    body = text;
  } catch {
    body = JSON.stringify(text);
  }
  return { method: "POST", query: {}, headers: { "content-type": "application/json" }, body };
}

/**
 * How a stored result becomes a chained task's body, by the trigger rules: text that parses as
 * JSON as it is, other text as a JSON string (both application/json), anything that is not UTF-8
 * byte for byte (base64 on the way) with the result's own Content-Type.
 */
export interface HandOver {
  byStream: true;
  form: "json" | "string" | "base64";
  contentType: string;
  /** The length of the chained task's input JSON in that form, which R2 needs before the put. */
  inputBytes: number;
}

const encoder = new TextEncoder();
const utf8Length = (text: string) => encoder.encode(text).byteLength;

function inputEnds(h: Pick<HandOver, "form" | "contentType">): [string, string] {
  const head = `{"method":"POST","query":{},"headers":{"content-type":${JSON.stringify(h.contentType)}},"body":"${h.form === "string" ? '\\"' : ""}`;
  const tail = h.form === "string" ? '\\""}' : h.form === "base64" ? '","bodyEncoding":"base64"}' : '"}';
  return [head, tail];
}

/**
 * Reads a stored result once, piece by piece and holding none of it, to learn its hand-over
 * form and the input's length in it. A result that is not UTF-8 is known as such at its first
 * bad byte, and the read stops there. A small result is read whole and handed over by value
 * (the input itself); one that is gone, as an empty body.
 */
export async function handOverOf(bucket: R2Bucket, key: string, resultHeaders: TaskRow["resultHeaders"]): Promise<HandOver | TaskInput> {
  const object = await bucket.get(key);
  if (!object) return smallResultAsInput(new Uint8Array(0), resultHeaders);
  if (object.size <= SMALL_RESULT_BYTES) return smallResultAsInput(new Uint8Array(await object.arrayBuffer()), resultHeaders);
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const json = new JsonScanner();
  let once = 0;
  let twice = 0;
  const scan = (text: string) => {
    json.write(text);
    const escaped = jsonEscaped(text);
    once += utf8Length(escaped);
    twice += utf8Length(jsonEscaped(escaped));
  };
  const reader = object.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      scan(decoder.decode(value, { stream: true }));
    }
    scan(decoder.decode());
  } catch {
    await reader.cancel().catch(() => undefined);
    return withLength({ form: "base64", contentType: contentTypeOf(resultHeaders) }, 4 * Math.ceil(object.size / 3));
  }
  return json.end() ? withLength({ form: "json", contentType: "application/json" }, once) : withLength({ form: "string", contentType: "application/json" }, twice);
}

function withLength(h: Pick<HandOver, "form" | "contentType">, body: number): HandOver {
  const [head, tail] = inputEnds(h);
  return { ...h, byStream: true, inputBytes: utf8Length(head) + body + utf8Length(tail) };
}

/**
 * Writes a chained task's input straight from its parent's stored result into the task's own
 * input object, streamed in the form `handOverOf` found: the dispatcher never holds the body,
 * and the copy lives and is deleted with the chained task (retention, a chain's limit), not with
 * its parent. The agent fetches it as any large input.
 */
export async function stageHandOver(bucket: R2Bucket, resultKey: string, h: HandOver, accountId: string, taskId: string): Promise<StagedInput> {
  const object = await bucket.get(resultKey);
  if (!object) throw new Error(`the result ${resultKey} went missing during its hand-over`);
  const [head, tail] = inputEnds(h);
  const fixed = new FixedLengthStream(h.inputBytes);
  const inputKey = taskInputKey(accountId, taskId);
  await Promise.all([bucket.put(inputKey, fixed.readable, { httpMetadata: { contentType: "application/json" }, customMetadata: { streamedFrom: resultKey } }), writeInput(object.body, fixed.writable, h.form, head, tail)]);
  return { id: taskId, input: null, inputKey };
}

async function writeInput(body: ReadableStream<Uint8Array>, out: WritableStream<Uint8Array>, form: HandOver["form"], head: string, tail: string): Promise<void> {
  const writer = out.getWriter();
  try {
    await writeForm(body, writer, form, head, tail);
  } catch (e) {
    // The put waiting on the other end fails too, instead of waiting for bytes that never come.
    await writer.abort(e).catch(() => undefined);
    throw e;
  }
}

async function writeForm(body: ReadableStream<Uint8Array>, writer: WritableStreamDefaultWriter<Uint8Array>, form: HandOver["form"], head: string, tail: string): Promise<void> {
  const write = (text: string) => (text ? writer.write(encoder.encode(text)) : undefined);
  await write(head);
  const decoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true });
  const text = (piece: string) => (form === "json" ? jsonEscaped(piece) : jsonEscaped(jsonEscaped(piece)));
  let carry = new Uint8Array(0);
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    if (form !== "base64") {
      await write(text(decoder.decode(chunk, { stream: true })));
      continue;
    }
    // Base64 in whole groups of three bytes; the rest waits for the next piece.
    const joined = new Uint8Array(carry.length + chunk.length);
    joined.set(carry);
    joined.set(chunk, carry.length);
    const whole = joined.length - (joined.length % 3);
    await write(base64Of(joined.subarray(0, whole)));
    carry = joined.slice(whole);
  }
  await write(form === "base64" ? base64Of(carry) : text(decoder.decode()));
  await write(tail);
  await writer.close();
}
