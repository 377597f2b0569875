import type { TaskRow } from "../db/rows.js";
import type { TaskScope } from "../tasks/counts.js";
import { DAY_MS, startOfUtcDay } from "../lib/time.js";
import type { HeldTasks } from "./held-tasks.js";
import type { RecordCounts } from "../shard-history/record-counts.js";

/**
 * What a shard adds to D1's aggregates of a scope while D1 lags behind it (issue 26, read your own
 * writes): answered from the shard's memory, summed by the Worker (held-reads.ts) over the shards
 * that may hold the scope's tasks.
 */
export interface HeldCounts {
  /** Rows D1 does not have yet: issued since 00:00 UTC, in the last 7 days, at all, and of those the unfinished. */
  today: number;
  week: number;
  total: number;
  pending: number;
  /** Rows D1 has, unfinished there, that finished here: D1's pending count leaves them out. */
  finishedHere: string[];
  /**
   * The rows counted in `pending`: D1's pending count leaves them out too, so that a batch landing
   * between the two reads does not count them twice (each is at most an account's cap of ids).
   */
  pendingHere: string[];
}

export const NO_HELD_COUNTS: HeldCounts = { today: 0, week: 0, total: 0, pending: 0, finishedHere: [], pendingHere: [] };

const inScope = (row: TaskRow, s: TaskScope) =>
  row.accountId === s.accountId && (!s.functionId || row.functionId === s.functionId) && (!s.endpointId || row.endpointId === s.endpointId);

/**
 * `accepted`: whether the shard's outcome log holds the task's outcome (its finished view may not be made yet).
 * `issuedBefore`: today's and the week's count only the tasks issued before it (the shards count the
 * rest of a function's or an endpoint's from their issue: held-reads.ts).
 */
export function heldCounts(held: HeldTasks, accepted: (taskId: string) => boolean, scope: TaskScope, now: number, issuedBefore = Infinity, recorded?: RecordCounts): HeldCounts {
  // Rowless tasks are in the shard's totals from their creation, held or not (record-counts.ts).
  const out: HeldCounts = { today: 0, week: 0, total: recorded?.total(scope) ?? 0, pending: 0, finishedHere: [], pendingHere: [] };
  const today = startOfUtcDay(now);
  const week = now - 7 * DAY_MS;
  for (const { row, view, inD1, rowless } of held.entries()) {
    if (!inScope(row, scope)) continue;
    const finished = row.finishedAt != null || view !== undefined || accepted(row.id);
    if (inD1) {
      if (finished) out.finishedHere.push(row.id);
      continue;
    }
    if (!rowless) out.total++;
    if (row.issuedAt >= today && row.issuedAt < issuedBefore) out.today++;
    if (row.issuedAt >= week && row.issuedAt < issuedBefore) out.week++;
    if (!finished) {
      out.pending++;
      out.pendingHere.push(row.id);
    }
  }
  return out;
}

/**
 * The account's rows D1 does not have yet, issued since `since`, counted per function and UTC day
 * (day 0 holds `since`): those it will have, held here, and every rowless one (record-counts.ts).
 */
export function heldIssued(held: HeldTasks, accountId: string, since: number, recorded?: RecordCounts): { functionId: string; day: number; count: number }[] {
  const counts = new Map<string, { functionId: string; day: number; count: number }>();
  for (const c of recorded?.days(accountId, since) ?? []) counts.set(`${c.functionId}/${c.day}`, c);
  for (const { row, inD1, rowless } of held.entries()) {
    if (inD1 || rowless || row.accountId !== accountId || row.issuedAt < since) continue;
    const day = Math.floor((row.issuedAt - since) / DAY_MS);
    const key = `${row.functionId}/${day}`;
    const c = counts.get(key) ?? { functionId: row.functionId, day, count: 0 };
    c.count++;
    counts.set(key, c);
  }
  return [...counts.values()];
}
