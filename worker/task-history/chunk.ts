import { z } from "zod";
import type { TaskRow } from "../db/rows.js";
import { decodeSegments, encodeSegments, segmentIndexOf, segmentKey, type Segments } from "../db/archive-segments.js";

/**
 * A chunk of archived task records as R2 keeps it: one record a line, each the row as D1 read it
 * (JSON columns decoded), so a read of an archived task answers from the same object a read of a
 * live one does and its shape cannot drift. The lines are gzip-compressed in segments of
 * `SEGMENT_RECORDS`, each a gzip member of its own, one after the other; the index row keeps where
 * each begins (a key cut from its first id, and its byte offset: archive-segments.ts). A task get
 * then reads one segment with a ranged R2 read, tens of KiB at most, however large the chunk; a list
 * reads the whole object. Records are
 * repetitive JSON (ids, statuses, times, the same headers), which gzip takes to a small fraction
 * (docs/benchmarks.md, "Task history").
 */
export const SEGMENT_RECORDS = 50;

export type { Segments } from "../db/archive-segments.js";

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

export async function encodeChunk(rows: TaskRow[]): Promise<{ body: Uint8Array; segments: Segments; ndjsonChars: number }> {
  const parts: Uint8Array[] = [];
  const segments: Segments = [];
  let offset = 0;
  let ndjsonChars = 0;
  for (let i = 0; i < rows.length; i += SEGMENT_RECORDS) {
    const slice = rows.slice(i, i + SEGMENT_RECORDS);
    const text = slice.map((r) => JSON.stringify(r)).join("\n") + "\n";
    ndjsonChars += text.length;
    const part = await gzip(text);
    segments.push([segmentKey(rows[i - 1]?.id, slice[0]!.id), offset]);
    parts.push(part);
    offset += part.byteLength;
  }
  const body = new Uint8Array(offset);
  let at = 0;
  for (const part of parts) {
    body.set(part, at);
    at += part.byteLength;
  }
  return { body, segments, ndjsonChars };
}

export class DamagedChunk extends Error {}

/**
 * The records of one segment (one gzip member); a line that is not a record makes it damaged (never
 * half a page). With `mention`, only the lines that hold it as a JSON string are parsed: a record
 * whose account or function is `mention` was written with `JSON.stringify`, so its line holds
 * `JSON.stringify(mention)`, and a line without it cannot be one. A list of one function of many
 * skips parsing and checking most lines, the larger part of a segment's cost (docs/benchmarks.md,
 * "A shard's archive at size"); the lines skipped are not checked, which a read of them by id does.
 */
async function decodeSegment(bytes: Uint8Array, mention?: string): Promise<TaskRow[]> {
  let text: string;
  try {
    text = await new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"))).text();
  } catch {
    throw new DamagedChunk("an archived chunk holds a segment that is not gzip");
  }
  const out: TaskRow[] = [];
  const needle = mention === undefined ? undefined : JSON.stringify(mention);
  for (const line of text.split("\n")) {
    if (!line || (needle !== undefined && !line.includes(needle))) continue;
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

/**
 * The segments the object was written with (its own metadata), else those the index row names (a
 * chunk written before objects carried them). Retention rewrites a chunk in place and updates its
 * index row after: a reader between the two holds the old offsets for the new bytes, and the
 * object's own are the ones that fit them.
 */
function ownSegments(object: R2Object, indexed: Segments): Segments {
  const raw = object.customMetadata?.segments;
  if (raw === undefined) return indexed;
  const own = decodeSegments(raw);
  if (!own) throw new DamagedChunk(`the archived chunk ${object.key} names segments that are not segments`);
  return own;
}

const sameSegments = (a: Segments, b: Segments) => a.length === b.length && a.every(([id, at], i) => id === b[i]![0] && at === b[i]![1]);

async function decodeWhole(object: R2ObjectBody, segments: Segments): Promise<TaskRow[]> {
  const bytes = new Uint8Array(await object.arrayBuffer());
  const out: TaskRow[] = [];
  for (const [i, [, offset]] of segments.entries()) out.push(...(await decodeSegment(bytes.subarray(offset, segments[i + 1]?.[1] ?? bytes.byteLength))));
  return out;
}

/** Every record of a chunk, segment by segment (a gzip reader stops at the end of the first member). */
export async function readChunk(bucket: R2Bucket, key: string, segments: Segments): Promise<TaskRow[]> {
  const object = await bucket.get(key);
  if (!object) throw new DamagedChunk(`the archived chunk ${key} is missing from storage`);
  return decodeWhole(object, ownSegments(object, segments));
}

/**
 * A chunk read with one request and decoded a segment at a time, as a page asks for them: a page
 * filled from a chunk's newest segments parses none of the others. Holds the gzip bytes only; a
 * reader that reads a segment again keeps what it decoded itself.
 */
export class OpenChunk {
  private constructor(
    /** The object's own segments: a segment holds ids at or above its key, every segment before it ids below. */
    readonly segments: Segments,
    private readonly bytes: Uint8Array,
  ) {}

  static async read(bucket: R2Bucket, key: string, indexed: Segments): Promise<OpenChunk> {
    const object = await bucket.get(key);
    if (!object) throw new DamagedChunk(`the archived chunk ${key} is missing from storage`);
    return new OpenChunk(ownSegments(object, indexed), new Uint8Array(await object.arrayBuffer()));
  }

  /** The records of segment `i`, in id order: those that name `mention` (an account or function id) when given, and maybe others. */
  records(i: number, mention?: string): Promise<TaskRow[]> {
    return decodeSegment(this.bytes.subarray(this.segments[i]![1], this.segments[i + 1]?.[1] ?? this.bytes.byteLength), mention);
  }
}

/** The segment of a chunk that would hold `id` (the last one beginning at or before it), read alone. */
export async function readSegmentOf(bucket: R2Bucket, key: string, segments: Segments, id: string): Promise<TaskRow[]> {
  const i = segmentIndexOf(segments, id);
  if (i < 0) return [];
  const offset = segments[i]![1];
  const end = segments[i + 1]?.[1];
  const object = await bucket.get(key, { range: end === undefined ? { offset } : { offset, length: end - offset } });
  if (!object) throw new DamagedChunk(`the archived chunk ${key} is missing from storage`);
  if (sameSegments(ownSegments(object, segments), segments)) return decodeSegment(new Uint8Array(await object.arrayBuffer()));
  // Rewritten since its index row was read (retention): the whole object, with the segments it carries.
  const whole = await bucket.get(key);
  if (!whole) throw new DamagedChunk(`the archived chunk ${key} is missing from storage`);
  const own = ownSegments(whole, segments);
  const records = await decodeWhole(whole, own);
  const j = segmentIndexOf(own, id);
  const first = own[j]?.[0];
  const next = own[j + 1]?.[0];
  return records.filter((r) => first !== undefined && r.id >= first && (next === undefined || r.id < next));
}

/** R2 keeps up to 2 KB of custom metadata an object; a chunk's segments (20 for 1,000 records) take ~300 B. */
const MAX_SEGMENTS_METADATA = 1_800;

/**
 * Puts a chunk. Stored as plain gzip bytes, with no Content-Encoding: nothing on the way may
 * decompress it for us, since every reader inflates it itself, segment by segment. The object
 * carries its segments too (readers trust those over an index row that may lag a rewrite).
 */
export async function putChunk(bucket: R2Bucket, key: string, rows: TaskRow[]): Promise<{ bytes: number; segments: Segments; ndjsonChars: number }> {
  const { body, segments, ndjsonChars } = await encodeChunk(rows);
  const own = encodeSegments(segments);
  await bucket.put(key, body, { httpMetadata: { contentType: "application/gzip" }, customMetadata: own.length <= MAX_SEGMENTS_METADATA ? { segments: own } : {} });
  return { bytes: body.byteLength, segments, ndjsonChars };
}

/** Reads a chunk just put back whole: it must hold these records' ids, in order (a truncated or damaged put fails here, before anything points at it). */
export async function checkReadBack(bucket: R2Bucket, key: string, segments: Segments, rows: TaskRow[]): Promise<void> {
  const back = await readChunk(bucket, key, segments);
  if (back.length !== rows.length || back.some((r, i) => r.id !== rows[i]!.id)) throw new Error(`the archived chunk ${key} did not read back as written`);
}
