/** The longest synchronous wait a caller may ask for (as for `?wait` on results). */
export const MAX_PREFER_WAIT_S = 30;

/**
 * The seconds of an RFC 7240 `Prefer: wait=<seconds>` preference (0 when absent or malformed),
 * capped at MAX_PREFER_WAIT_S. Other preferences beside it (`respond-async`, …) are ignored.
 */
export function preferredWait(header: string | undefined | null): number {
  if (!header) return 0;
  for (const part of header.split(/[,;]/)) {
    const m = /^\s*wait\s*=\s*"?(\d{1,6})"?\s*$/i.exec(part);
    if (m) return Math.min(Number(m[1]), MAX_PREFER_WAIT_S);
  }
  return 0;
}
