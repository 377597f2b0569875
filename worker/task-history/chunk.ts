import { z } from "zod";
import type { TaskRow } from "../db/rows.js";

/**
 * A chunk of archived task records as R2 keeps it: one record a line, each the row as D1 read it
 * (JSON columns decoded), so a read of an archived task answers from the same object a read of a
 * live one does and its shape cannot drift. The lines are gzip-compressed in segments of
 * `SEGMENT_RECORDS`, each a gzip member of its own, one after the other; the index row keeps where
 * each begins (its first id and byte offset). A task get then reads one segment with a ranged R2
 * read, tens of KiB at most, however large the chunk; a list reads the whole object. Records are
 * repetitive JSON (ids, statuses, times, the same headers), which gzip takes to a small fraction
 * (docs/benchmarks.md, "Task history").
 */
export const SEGMENT_RECORDS = 50;

/** Where each segment begins: its first record's id and its byte offset in the object, in order. */
export type Segments = [firstId: string, offset: number][];

/** What a line must hold to be taken for a record; the rest is the row's other columns as written. */
const archivedRecord = z.looseObject({
  id: z.string(),
  accountId: z.string(),
  functionId: z.string(),
  issuedAt: z.number(),
  finishedAt: z.number(),
});

async function gzip(text: string): Promise<Uint8Array> {
  const zipped = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(zipped).arrayBuffer());
}

export async function encodeChunk(rows: TaskRow[]): Promise<{ body: Uint8Array; segments: Segments }> {
  const parts: Uint8Array[] = [];
  const segments: Segments = [];
  let offset = 0;
  for (let i = 0; i < rows.length; i += SEGMENT_RECORDS) {
    const slice = rows.slice(i, i + SEGMENT_RECORDS);
    const part = await gzip(slice.map((r) => JSON.stringify(r)).join("\n") + "\n");
    segments.push([slice[0]!.id, offset]);
    parts.push(part);
    offset += part.byteLength;
  }
  const body = new Uint8Array(offset);
  let at = 0;
  for (const part of parts) {
    body.set(part, at);
    at += part.byteLength;
  }
  return { body, segments };
}

export class DamagedChunk extends Error {}

/** The records of one segment (one gzip member); a line that is not a record makes it damaged (never half a page). */
async function decodeSegment(bytes: Uint8Array): Promise<TaskRow[]> {
  let text: string;
  try {
    text = await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
  } catch {
    throw new DamagedChunk("an archived chunk holds a segment that is not gzip");
  }
  const out: TaskRow[] = [];
  for (const line of text.split("\n")) {
    if (!line) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      throw new DamagedChunk("an archived chunk holds a line that is not JSON");
    }
    const record = archivedRecord.safeParse(parsed);
    if (!record.success) throw new DamagedChunk("an archived chunk holds a line that is not a task record");
    out.push(record.data as unknown as TaskRow);
  }
  return out;
}

/** Every record of a chunk, segment by segment (a gzip reader stops at the end of the first member). */
export async function readChunk(bucket: R2Bucket, key: string, segments: Segments): Promise<TaskRow[]> {
  const object = await bucket.get(key);
  if (!object) throw new DamagedChunk(`the archived chunk ${key} is missing from storage`);
  const bytes = new Uint8Array(await object.arrayBuffer());
  const out: TaskRow[] = [];
  for (const [i, [, offset]] of segments.entries()) out.push(...(await decodeSegment(bytes.subarray(offset, segments[i + 1]?.[1] ?? bytes.byteLength))));
  return out;
}

/** The segment of a chunk that would hold `id` (the last one beginning at or before it), read alone. */
export async function readSegmentOf(bucket: R2Bucket, key: string, segments: Segments, id: string): Promise<TaskRow[]> {
  let i = -1;
  while (i + 1 < segments.length && segments[i + 1]![0] <= id) i++;
  if (i < 0) return [];
  const offset = segments[i]![1];
  const end = segments[i + 1]?.[1];
  const object = await bucket.get(key, { range: end === undefined ? { offset } : { offset, length: end - offset } });
  if (!object) throw new DamagedChunk(`the archived chunk ${key} is missing from storage`);
  return decodeSegment(new Uint8Array(await object.arrayBuffer()));
}

/**
 * Puts a chunk. Stored as plain gzip bytes, with no Content-Encoding: nothing on the way may
 * decompress it for us, since every reader inflates it itself, segment by segment.
 */
export async function putChunk(bucket: R2Bucket, key: string, rows: TaskRow[]): Promise<{ bytes: number; segments: Segments }> {
  const { body, segments } = await encodeChunk(rows);
  await bucket.put(key, body, { httpMetadata: { contentType: "application/gzip" } });
  return { bytes: body.byteLength, segments };
}
