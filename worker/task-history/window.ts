import type { StoreBindings } from "../bindings.js";
import { DAY_MS } from "../lib/time.js";

/** The rolling period of `weekTasks`: 7 × 24 hours. */
export const WEEK_MS = 7 * DAY_MS;

/**
 * Days a finished task's record stays in D1 before the archive sweep moves it to the archive
 * (TASK_ARCHIVE_AFTER_DAYS overrides). Never fewer than 1: an account's `todayTasks` (since 00:00
 * UTC) counts D1's rows, and a day keeps every task issued today there. A function's and an
 * endpoint's `todaysTasks` and `weekTasks` need no more: the move keeps the issue times of the
 * week's archived tasks (task_archive_issues), and the counts add them to D1's rows. A value below
 * the floor, or not a number, takes the floor's place or the default, never an archive of records a
 * count still needs.
 */
export const DEFAULT_ARCHIVE_AFTER_DAYS = 1;
export const MIN_ARCHIVE_AFTER_DAYS = 1;

export function archiveAfterMs(env: Pick<StoreBindings, "TASK_ARCHIVE_AFTER_DAYS">): number {
  const days = Number(env.TASK_ARCHIVE_AFTER_DAYS ?? DEFAULT_ARCHIVE_AFTER_DAYS);
  if (!Number.isFinite(days)) return DEFAULT_ARCHIVE_AFTER_DAYS * DAY_MS;
  return Math.max(MIN_ARCHIVE_AFTER_DAYS, days) * DAY_MS;
}
