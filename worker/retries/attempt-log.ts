/**
 * A retried task's log: every attempt's lines under a marker line. The attempts before the last
 * are kept by the dispatcher while the task waits (runs.ts), each cut to its last lines, so the log
 * of five attempts stays about the size of one.
 */
export const attemptMarker = (n: number) => `--- attempt ${n} ---`;

/** Lines kept of each attempt before the last. */
export const EARLIER_LINES_KEPT = 400;

/** One finished attempt's lines, with its marker, as the next attempt keeps them. */
export function earlierAttempt(n: number, lines: string[]): string[] {
  const cut = lines.length - EARLIER_LINES_KEPT;
  const kept = cut > 0 ? [`… ${cut} lines of attempt ${n} cut …`, ...lines.slice(cut)] : lines;
  return [attemptMarker(n), ...kept];
}

/** The whole log: the earlier attempts' lines, then the last attempt's under its own marker. */
export const withEarlier = (earlier: string[] | undefined, attempt: number, last: string[]): string[] =>
  earlier?.length ? [...earlier, attemptMarker(attempt), ...last] : last;

/** The lines the dispatcher records for an attempt that ran past its timeout (no agent report). */
export const TIMED_OUT_LINE = "[dispatcher] the task ran past its timeout";

/** A log whose last attempt was uploaded to R2 (too large for a frame) gets the earlier attempts put in front, there. */
export async function prependEarlier(bucket: R2Bucket, key: string, earlier: string[], attempt: number): Promise<void> {
  const obj = await bucket.get(key);
  const last = obj ? ((await obj.json()) as string[]) : [];
  if (last[0] === attemptMarker(1)) return; // done already, by a commit that failed after it
  await bucket.put(key, JSON.stringify(withEarlier(earlier, attempt, last)), { httpMetadata: { contentType: "application/json" } });
}

/** Reads an uploaded attempt's lines back (before the next attempt's upload replaces them). */
export async function uploadedLines(bucket: R2Bucket, key: string): Promise<string[]> {
  const obj = await bucket.get(key);
  return obj ? ((await obj.json()) as string[]) : ["[dispatcher] this attempt's log was not found"];
}
