import { sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { pruneHead, type PruneRun } from "../db/rowid-head.js";
import { taskArchiveMinutes } from "../db/schema.js";
import { minuteOf } from "./issue-minutes.js";
import { WEEK_MS } from "./window.js";

/** Rows a statement deletes: two bound parameters, 10,000 rows with one or two index entries each, well under D1's 30 s. */
export const ISSUE_PRUNE_PAGE = 10_000;
/**
 * Statements a run: 1,000,000 rows an hour in 100 of the sweep's queries. A minute row holds a minute's tasks of a function, so a minute of the service leaves as
 * many rows as functions ran in it: 16,600 a minute at most, about twice what the rate one D1
 * database holds makes in its worst mix (one task a function-minute, ~156 tasks a second: 9,400 a
 * minute; docs/dispatch.md, "What the window bounds now").
 */
export const ISSUE_PRUNE_MAX_PAGES = 100;

/**
 * One page of the oldest minutes wholly before `cutoff`: the head of the table's key (minute,
 * scope), so each page reads only what it deletes.
 */
export const archivedMinutesPruned = (cutoff: number, page: number) =>
  sql`delete from ${taskArchiveMinutes} where (minute, scope) in
    (select minute, scope from ${taskArchiveMinutes} where minute < ${minuteOf(cutoff)} order by minute, scope limit ${page})
  returning 1 as n`;

/**
 * The issue times of archived tasks that have left the week, deleted in pages (part of the hourly
 * sweep): the minutes of task_archive_minutes wholly past it, by their key. The counts read only the
 * last 7 × 24 hours, so nothing they answer changes. Returns how many rows were deleted.
 */
export async function pruneArchivedIssues(db: Db, now: number, o: PruneRun = {}): Promise<number> {
  return pruneHead(db, (n) => archivedMinutesPruned(now - WEEK_MS, n), o, { page: ISSUE_PRUNE_PAGE, maxPages: ISSUE_PRUNE_MAX_PAGES });
}
