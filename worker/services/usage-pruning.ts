import type { StoreBindings } from "../bindings.js";
import type { Db } from "../db/client.js";
import { usage } from "../db/schema.js";
import { headPruned, pruneHead, type PruneRun } from "../db/rowid-head.js";
import { DAY_MS } from "../lib/time.js";

/**
 * Days a usage row is kept (USAGE_DEDUP_DAYS overrides). A usage row is not what anyone reads:
 * usage_totals (kept by an insert trigger) is. The row is there so that the same outcome committed
 * twice counts once (its task id is the key, `on conflict do nothing`), and an outcome is committed
 * again only by the shard that holds it, while it has no answer from D1: a lost batch answer is
 * retried within seconds, a D1 outage holds outcomes for as long as it lasts (hours in the worst
 * incidents on record), and during an outage the sweep cannot reach D1 either. Two days are far
 * beyond both. An outcome is metered through its task's row (dispatch/records.ts), so once the
 * record has left D1 for the archive (task-history/window.ts) its outcome committed again meters
 * nothing, row or no row. Two, not seven: at a week these rows were the largest share of what D1
 * holds for each task a second (docs/dispatch.md, "Task history past one database").
 */
export const DEFAULT_USAGE_DEDUP_DAYS = 2;

export function usageDedupMs(env: Pick<StoreBindings, "USAGE_DEDUP_DAYS">): number {
  const days = Number(env.USAGE_DEDUP_DAYS ?? DEFAULT_USAGE_DEDUP_DAYS);
  return (Number.isFinite(days) && days > 0 ? days : DEFAULT_USAGE_DEDUP_DAYS) * DAY_MS;
}

/** Rows a statement deletes: two bound parameters, well under D1's 30 s (10,000 rows with two index entries each). */
export const USAGE_PRUNE_PAGE = 10_000;
/**
 * Statements a run: 2 million rows an hour, about 550 outcomes a second, in 200 of the 1,000 D1 queries
 * one invocation may make (the sweep's other work shares them); a longer backlog goes on at the next run.
 */
export const USAGE_PRUNE_MAX_PAGES = 200;

/** One page of the oldest usage rows that finished before `cutoff` (db/rowid-head.ts: rows are inserted as their tasks finish). */
export const usagePruned = (cutoff: number, page: number) => headPruned(usage, usage.finishedAt, cutoff, page);

/**
 * The usage rows whose outcomes finished more than `keepMs` before `now`, deleted in pages (part of
 * the hourly sweep). usage_totals, and so quotas, `GET /v1/usage` and the console, do not change: its
 * trigger fires on insert only. Idempotent. Returns how many rows were deleted.
 */
export async function pruneUsage(db: Db, keepMs: number, now: number, o: PruneRun = {}): Promise<number> {
  return pruneHead(db, (n) => usagePruned(now - keepMs, n), o, { page: USAGE_PRUNE_PAGE, maxPages: USAGE_PRUNE_MAX_PAGES });
}
