import type { StoreBindings } from "../bindings.js";
import type { Db } from "../db/client.js";
import { usage } from "../db/schema.js";
import { headPruned, pruneHead, type PruneRun } from "../db/rowid-head.js";
import { DAY_MS } from "../lib/time.js";

/**
 * Days a usage row is kept (USAGE_DEDUP_DAYS overrides). Usage rows are a retried task's failed
 * attempts only (retries/attempt-records.ts, keyed `<task id>#<attempt>`); a task's own outcome is
 * metered by the update that finishes its row (migrations/0024), with no row of its own. Nobody
 * reads these rows: usage_totals (kept by an insert trigger) is. A row is there so that the same
 * attempt recorded twice counts once (its key, `on conflict do nothing`), and an attempt is recorded
 * again only by the shard that holds it, while it has no answer from D1: a lost batch answer is
 * retried within seconds, a D1 outage holds them for as long as it lasts (hours in the worst
 * incidents on record), and during an outage the sweep cannot reach D1 either. Two days are far
 * beyond both. Rows written by a Worker older than migration 0024 (a task's own, without `#`) go
 * the same way.
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
