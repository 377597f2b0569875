import { z } from "zod";
import type { TaskRow } from "../db/rows.js";

/**
 * A chunk of archived task records as R2 keeps it: one record a line, each the row as D1 read it
 * (JSON columns decoded), gzip-compressed. A read of an archived task answers from the same object
 * a read of a live one does, so its shape cannot drift. Records are repetitive JSON (ids, statuses,
 * times, the same headers), which gzip takes to about a fifth (docs/benchmarks.md, "Task history").
 */

/** What a line must hold to be taken for a record; the rest is the row's other columns as written. */
const archivedRecord = z.looseObject({
  id: z.string(),
  accountId: z.string(),
  functionId: z.string(),
  issuedAt: z.number(),
  finishedAt: z.number(),
});

export async function encodeChunk(rows: TaskRow[]): Promise<Uint8Array> {
  const text = rows.map((r) => JSON.stringify(r)).join("\n") + "\n";
  const zipped = new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(zipped).arrayBuffer());
}

export class DamagedChunk extends Error {}

/** The records of a chunk; a line that is not a record makes the whole chunk damaged (never half a page). */
export async function decodeChunk(body: ReadableStream<Uint8Array>): Promise<TaskRow[]> {
  const text = await new Response(body.pipeThrough(new DecompressionStream("gzip"))).text();
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

/** A chunk's records read from R2; a chunk the index names must exist, so a missing one is damage too. */
export async function readChunk(bucket: R2Bucket, key: string): Promise<TaskRow[]> {
  const object = await bucket.get(key);
  if (!object) throw new DamagedChunk(`the archived chunk ${key} is missing from storage`);
  return decodeChunk(object.body);
}

/**
 * Puts a chunk. Stored as plain gzip bytes, with no Content-Encoding: nothing on the way may
 * decompress it for us, since every reader inflates it itself (decodeChunk).
 */
export async function putChunk(bucket: R2Bucket, key: string, rows: TaskRow[]): Promise<number> {
  const body = await encodeChunk(rows);
  await bucket.put(key, body, { httpMetadata: { contentType: "application/gzip" } });
  return body.byteLength;
}
