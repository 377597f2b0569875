import { sql, type SQL } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { sqlBatch, type Db } from "./client.js";
import { QueryBudget } from "./query-budget.js";

/**
 * One page of a table that grows at its end with rows of about rising times: the oldest `page` rows
 * by rowid, up to the first whose `time` is `cutoff` or later. Rowids follow insertion, so the head
 * of the table is its oldest rows and no index on the time is needed (one would cost bytes on every
 * row). Each page reads at most `page` rows. A row inserted late with an older time stays until the
 * rows before it are old enough: kept longer, never deleted early, as every deleted row is itself
 * older than the cutoff.
 */
export const headPruned = (table: SQLiteTable, time: SQLiteColumn, cutoff: number, page: number): SQL => {
  const name = sql.identifier(time.name);
  return sql`with head as (select rowid as r, ${name} as t from ${table} order by rowid limit ${page})
  delete from ${table} where rowid in (select r from head where r < coalesce((select min(r) from head where t >= ${cutoff}), 9223372036854775807))
  returning 1 as n`;
};

/** How a pruning run goes: rows a statement, statements a run at most, and the invocation's budget it draws from. */
export interface PruneRun {
  page?: number;
  maxPages?: number;
  budget?: QueryBudget;
}

/** Deletes the table's head older than the statement's cutoff page by page, one query a page, within `o`'s caps; returns how many rows went. */
export async function pruneHead(db: Db, statement: (page: number) => SQL, o: PruneRun, defaults: { page: number; maxPages: number }): Promise<number> {
  const page = o.page ?? defaults.page;
  const budget = (o.budget ?? new QueryBudget(Infinity)).part(o.maxPages ?? defaults.maxPages);
  let deleted = 0;
  while (budget.take()) {
    const [rows = []] = await sqlBatch(db, [statement(page)]);
    deleted += rows.length;
    if (rows.length < page) break;
  }
  return deleted;
}
