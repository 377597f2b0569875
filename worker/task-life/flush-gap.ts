/**
 * How long after one D1 batch of records the next may start (RECORD_FLUSH_MS): what arrives in
 * between rides along. Nobody waits on a batch (callers are answered from the shard), so the gap
 * costs only the age of D1's copy, and of what follows a batch: triggers and dead letters.
 */
export const DEFAULT_RECORD_FLUSH_MS = 100;

export function recordFlushMs(env: { RECORD_FLUSH_MS?: string }): number {
  const n = Number(env.RECORD_FLUSH_MS ?? DEFAULT_RECORD_FLUSH_MS);
  return Number.isFinite(n) && n >= 0 && n <= 10_000 ? n : DEFAULT_RECORD_FLUSH_MS;
}
