/**
 * Where each gzip segment of an archived chunk begins (worker/task-history/chunk.ts), as its index
 * row and its R2 object keep it: [key, byte offset] a segment, in order.
 *
 * A segment's key is the shortest prefix of its first record's id that sorts after every id of the
 * segment before it, and "" for the first segment. A record of the chunk is then in the last
 * segment whose key is at or before its id: it is at or past its own segment's key (a prefix of the
 * segment's first id), and before the next one's (which sorts after it). Ids share their leading
 * time characters, so a key is ~10 characters rather than an id's 30. Chunks written before keys
 * were cut carry whole first ids, which obey the same rule, in JSON.
 *
 * The text form is `key:offset,key:offset`, offsets in base 36: ~16 bytes a segment where JSON of
 * whole ids took ~40, which is most of a busy chunk's index row (docs/dispatch.md).
 */
export type Segments = [key: string, offset: number][];

/** The key of a segment whose first id is `first`, after a segment whose last id is `before`. */
export function segmentKey(before: string | undefined, first: string): string {
  if (before === undefined) return "";
  if (!(first > before)) throw new Error("a chunk's records must be in id order");
  let i = 0;
  while (i < before.length && first[i] === before[i]) i++;
  return first.slice(0, i + 1);
}

/**
 * Which of a chunk's segments would hold `id`: the last whose key is at or before it (the rule
 * above), or -1 when there are no segments or the id sorts before them all.
 */
export function segmentIndexOf(segments: Segments, id: string): number {
  let i = -1;
  while (i + 1 < segments.length && segments[i + 1]![0] <= id) i++;
  return i;
}

const KEY = /^[0-9a-z]*$/;
const OFFSET = /^[0-9a-z]{1,11}$/;

export const encodeSegments = (segments: Segments): string => segments.map(([key, offset]) => `${key}:${offset.toString(36)}`).join(",");

function fromJson(text: string): Segments | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed)) return undefined;
  const out: Segments = [];
  for (const pair of parsed) {
    if (!Array.isArray(pair) || pair.length !== 2) return undefined;
    const [key, offset] = pair as unknown[];
    if (typeof key !== "string" || !Number.isSafeInteger(offset) || (offset as number) < 0) return undefined;
    out.push([key, offset as number]);
  }
  return out;
}

/**
 * Whether the segments could be a chunk's: the first at byte 0, and keys and offsets rising, so a
 * read's range is never empty or backwards and an id picks one segment.
 */
const ordered = (s: Segments) => s.every(([key, offset], i) => (i === 0 ? offset === 0 : key > s[i - 1]![0] && offset > s[i - 1]![1]));

/** Segments from their text (either form); undefined when the text is not segments. */
export function decodeSegments(text: string): Segments | undefined {
  const segments = parse(text);
  return segments && ordered(segments) ? segments : undefined;
}

function parse(text: string): Segments | undefined {
  if (text.startsWith("[")) return fromJson(text);
  if (text === "") return [];
  const out: Segments = [];
  for (const pair of text.split(",")) {
    const at = pair.indexOf(":");
    const key = pair.slice(0, at);
    const offset = pair.slice(at + 1);
    if (at < 0 || !KEY.test(key) || !OFFSET.test(offset)) return undefined;
    out.push([key, parseInt(offset, 36)]);
  }
  return out;
}
