/**
 * A build's log is bounded (docs/security.md, "Build logs"). The build record carries its first
 * and last lines with one marker line between them; the whole text is kept up to a cap, with a
 * note where it was cut. The agent bounds what it sends to these numbers and the Worker bounds
 * what it stores to them again, trusting nothing it is sent.
 */
export const BUILD_LOG_HEAD_LINES = 500;
export const BUILD_LOG_TAIL_LINES = 500;
/**
 * The head and the tail each hold at most this many bytes (as JSON), so the record's row stays far
 * below D1's row limit however long the lines are (a line is at most 8 KiB: 500 of them would not).
 */
export const BUILD_LOG_PART_BYTES = 256 * 1024;
/** The whole log (GET /v1/build/<id>/log) keeps this many bytes of lines, then a note. */
export const BUILD_LOG_TEXT_BYTES = 4 * 1024 * 1024;
/** Room past the text cap for the cut note and the failure reason that follow the kept lines. */
export const BUILD_LOG_TRAILER_BYTES = 64 * 1024;

/** The one line between the head and the tail of the build record. */
export const cutMarker = (lines: number) => `… ${lines} lines cut …`;

/** The note that ends a whole log cut at its cap. */
export const textCutNote = (lines: number) =>
  `… ${lines} lines cut: the whole log keeps its first ${BUILD_LOG_TEXT_BYTES} bytes (GET /v1/build/<id> shows the last lines) …`;

/** The line a failed build's log ends with, whoever decided the failure. */
export const failureLine = (reason: string | undefined) => `build failed: ${reason ?? "no reason given"}`;

/** The first and last lines of a log, and how many lines it has in all (`lines`, cut ones included). */
export interface LogEnds {
  head: string[];
  tail: string[];
  lines: number;
}

export const emptyEnds = (): LogEnds => ({ head: [], tail: [], lines: 0 });

const jsonBytes = (line: string) => new TextEncoder().encode(JSON.stringify(line)).length + 1;

/**
 * Adds lines numbered from `first` (0 = the log's first line), in whatever order batches come: a
 * line already held is skipped (a batch sent twice is taken once), numbers never seen are cut lines.
 * The head holds lines 0, 1, 2… while it has room; the tail holds the last lines after it, always
 * ending at the last line seen, so exactly `lines - head - tail` lines lie between them. A late
 * line that fits neither (it belongs in the cut middle) is dropped: it is already counted.
 */
export function appendToEnds(ends: LogEnds, first: number, lines: readonly string[]): LogEnds {
  const head = [...ends.head];
  let tail = [...ends.tail];
  let count = ends.lines;
  let headBytes = head.reduce((n, l) => n + jsonBytes(l), 0);
  const headTakes = (line: string) => head.length < BUILD_LOG_HEAD_LINES && headBytes + jsonBytes(line) <= BUILD_LOG_PART_BYTES;
  const toHead = (line: string) => {
    head.push(line);
    headBytes += jsonBytes(line);
  };
  lines.forEach((line, k) => {
    const i = first + k;
    const tailFirst = count - tail.length;
    if (i < head.length || (i >= tailFirst && i < count && tail.length)) return;
    if (i === head.length && headTakes(line)) {
      toHead(line);
      count = Math.max(count, i + 1);
      // Lines that came early now follow the head without a gap.
      while (tail.length && count - tail.length === head.length && headTakes(tail[0]!)) toHead(tail.shift()!);
    } else if (i >= count) {
      if (i > count) tail = []; // lines went missing: what came before them is no longer the last lines
      tail.push(line);
      count = i + 1;
    } else if (i === tailFirst - 1) tail.unshift(line);
  });
  let tailBytes = tail.reduce((n, l) => n + jsonBytes(l), 0);
  let drop = Math.max(0, tail.length - BUILD_LOG_TAIL_LINES);
  for (let i = 0; i < drop; i++) tailBytes -= jsonBytes(tail[i]!);
  while (drop < tail.length && tailBytes > BUILD_LOG_PART_BYTES) tailBytes -= jsonBytes(tail[drop++]!);
  return { head, tail: drop ? tail.slice(drop) : tail, lines: count };
}

/** How many lines lie between the head and the tail. */
export const cutOf = (ends: LogEnds) => ends.lines - ends.head.length - ends.tail.length;

/** The record's `log`: the head, the marker when lines were cut, the tail. */
export function endsAsLog(ends: LogEnds): string[] {
  const cut = cutOf(ends);
  return cut > 0 ? [...ends.head, cutMarker(cut), ...ends.tail] : [...ends.head, ...ends.tail];
}
