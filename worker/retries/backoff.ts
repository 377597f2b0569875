/** No backoff is longer than this, however many attempts and whatever the jitter. */
export const MAX_BACKOFF_MS = 3_600_000;

/**
 * The wait before attempt `attempt` (2 for the first retry): backoffSeconds × 2^(attempt−2), ±20 %
 * jitter so that tasks that failed together do not all come back together, at most one hour.
 */
export function backoffMs(backoffSeconds: number, attempt: number, random: () => number = Math.random): number {
  const base = backoffSeconds * 1000 * 2 ** Math.max(0, attempt - 2);
  return Math.round(Math.min(MAX_BACKOFF_MS, base * (0.8 + 0.4 * random())));
}
