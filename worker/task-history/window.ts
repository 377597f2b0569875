import type { StoreBindings } from "../bindings.js";
import { DAY_MS, HOUR_MS } from "../lib/time.js";

/** The rolling period of `weekTasks`: 7 × 24 hours. */
export const WEEK_MS = 7 * DAY_MS;

/**
 * How long a finished task's record stays in D1 before the archive sweep may move it:
 * TASK_ARCHIVE_AFTER_HOURS (default 1), or TASK_ARCHIVE_AFTER_DAYS, the setting's earlier name, when
 * only that is set. Never less than an hour. No count needs D1's rows for longer: a function's and an
 * endpoint's `todaysTasks` and `weekTasks` add the archived tasks' issue times (issue-minutes.ts), an
 * account's `todayTasks` the archive's per-day counts (counts.ts), and every read of a task by id
 * asks the archive after D1. The hour keeps what is asked most (a task's first minutes: its public
 * result's 5, an Idempotency-Key's replay, a trigger's parent, a dead letter's failed task) one D1
 * read away. A value below the floor, or not a number, takes the floor's place or the default.
 */
export const DEFAULT_ARCHIVE_AFTER_HOURS = 1;
export const MIN_ARCHIVE_AFTER_MS = HOUR_MS;

export function archiveAfterMs(env: Pick<StoreBindings, "TASK_ARCHIVE_AFTER_HOURS" | "TASK_ARCHIVE_AFTER_DAYS">): number {
  const hours = env.TASK_ARCHIVE_AFTER_HOURS ?? (env.TASK_ARCHIVE_AFTER_DAYS === undefined ? undefined : String(Number(env.TASK_ARCHIVE_AFTER_DAYS) * 24));
  const ms = Number(hours ?? DEFAULT_ARCHIVE_AFTER_HOURS) * HOUR_MS;
  if (!Number.isFinite(ms)) return DEFAULT_ARCHIVE_AFTER_HOURS * HOUR_MS;
  return Math.max(MIN_ARCHIVE_AFTER_MS, ms);
}

/**
 * How long an account's records past the window may wait for a full chunk (1,000 records) before
 * they move however few: TASK_ARCHIVE_HOLD_HOURS, 168 (7 days) by default, never less than an hour.
 * A longer hold makes a small account's chunks fuller, so its archived records cost D1 fewer bytes
 * for good; a shorter one keeps fewer of its full rows in D1 meanwhile (docs/dispatch.md, "Small
 * accounts"). The sweep moves the hold's accounts 50 to a read and a batch, up to 2,000 chunks a run.
 */
export const DEFAULT_ARCHIVE_HOLD_HOURS = 7 * 24;

export function archiveHoldMs(env: Pick<StoreBindings, "TASK_ARCHIVE_HOLD_HOURS">): number {
  const ms = Number(env.TASK_ARCHIVE_HOLD_HOURS ?? DEFAULT_ARCHIVE_HOLD_HOURS) * HOUR_MS;
  if (!Number.isFinite(ms)) return DEFAULT_ARCHIVE_HOLD_HOURS * HOUR_MS;
  return Math.max(HOUR_MS, ms);
}
