import type { StoreBindings } from "../bindings.js";
import { DAY_MS } from "../lib/time.js";

/**
 * Days a finished task's record stays in D1 before the hourly sweep moves it to the archive
 * (TASK_ARCHIVE_AFTER_DAYS overrides). Never fewer than 8: a function's and an endpoint's
 * `weekTasks` count the last 7 days × 24 hours from D1's rows, a rolling window that per-day counts
 * cannot answer exactly; 8 keeps every task of that window (and today's) in D1, where the counts
 * and their indexes already are. A value below the floor, or not a number, takes the floor's place
 * or the default, never an archive of records a count still needs.
 */
export const DEFAULT_ARCHIVE_AFTER_DAYS = 8;
export const MIN_ARCHIVE_AFTER_DAYS = 8;

export function archiveAfterMs(env: Pick<StoreBindings, "TASK_ARCHIVE_AFTER_DAYS">): number {
  const days = Number(env.TASK_ARCHIVE_AFTER_DAYS ?? DEFAULT_ARCHIVE_AFTER_DAYS);
  if (!Number.isFinite(days)) return DEFAULT_ARCHIVE_AFTER_DAYS * DAY_MS;
  return Math.max(MIN_ARCHIVE_AFTER_DAYS, days) * DAY_MS;
}
