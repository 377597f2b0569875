import { sql } from "drizzle-orm";
import type { StoreBindings } from "../bindings.js";
import { sqlBatch, type Db } from "../db/client.js";
import { DAY_MS } from "../lib/time.js";
import { QueryBudget } from "../db/query-budget.js";

/**
 * Days a usage row is kept (USAGE_DEDUP_DAYS overrides). A usage row is not what anyone reads:
 * usage_totals (kept by an insert trigger) is. The row is there so that the same outcome committed
 * twice counts once (its task id is the key, `on conflict do nothing`), and an outcome is committed
 * again only by the shard that holds it, while it has no answer from D1: a lost batch answer is
 * retried within seconds, a D1 outage holds outcomes for as long as it lasts (hours in the worst
 * incidents on record), and during an outage the sweep cannot reach D1 either. Seven days is far
 * beyond both, and shorter than the task retention (30 days), so usage rows never outlive the data.
 */
export const DEFAULT_USAGE_DEDUP_DAYS = 7;

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

/**
 * One page: the oldest `page` rows by rowid, up to the first that finished at `cutoff` or later.
 * Rowids follow insertion, and rows are inserted as their tasks finish, so the head of the table is
 * its oldest rows and no index on finished_at is needed (one would cost bytes on every row). Each page
 * reads at most `page` rows. A row inserted late with an older time (an outcome held through an
 * outage) stays until the rows before it are old enough: kept longer, never deleted early, as every
 * deleted row is itself older than the cutoff.
 */
export const usagePruned = (cutoff: number, page: number) => sql`with head as (select rowid as r, finished_at as f from usage order by rowid limit ${page})
  delete from usage where rowid in (select r from head where r < coalesce((select min(r) from head where f >= ${cutoff}), 9223372036854775807))
  returning 1 as n`;

/**
 * The usage rows whose outcomes finished more than `keepMs` before `now`, deleted in pages (part of
 * the hourly sweep). usage_totals, and so quotas, `GET /v1/usage` and the console, do not change: its
 * trigger fires on insert only. Idempotent. Returns how many rows were deleted.
 */
export async function pruneUsage(db: Db, keepMs: number, now: number, o: { page?: number; maxPages?: number; budget?: QueryBudget } = {}): Promise<number> {
  const page = o.page ?? USAGE_PRUNE_PAGE;
  const cutoff = now - keepMs;
  const budget = (o.budget ?? new QueryBudget(Infinity)).part(o.maxPages ?? USAGE_PRUNE_MAX_PAGES);
  let deleted = 0;
  while (budget.take()) {
    const [rows = []] = await sqlBatch(db, [usagePruned(cutoff, page)]);
    deleted += rows.length;
    if (rows.length < page) break;
  }
  return deleted;
}
