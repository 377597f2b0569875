import type { Db } from "../db/client.js";
import { headPruned, pruneHead, type PruneRun } from "../db/rowid-head.js";
import { taskArchiveIssues } from "../db/schema.js";
import { WEEK_MS } from "./window.js";

/** Rows a statement deletes: two bound parameters, 10,000 rows with two index entries each, well under D1's 30 s. */
export const ISSUE_PRUNE_PAGE = 10_000;
/** Statements a run: 500,000 issue times an hour (about 140 archived tasks a second) in 50 of the sweep's queries. */
export const ISSUE_PRUNE_MAX_PAGES = 50;

/** One page of the oldest kept issue times past `cutoff` (db/rowid-head.ts: the move inserts them about in issue order). */
export const archivedIssuesPruned = (cutoff: number, page: number) => headPruned(taskArchiveIssues, taskArchiveIssues.issuedAt, cutoff, page);

/**
 * The issue times of archived tasks (task_archive_issues) that have left the week, deleted in pages
 * (part of the hourly sweep): the counts read only those of the last 7 × 24 hours, so nothing they
 * answer changes. The move writes a chunk's times together, a busy account's chunks an hour or so
 * after their day and a quiet account's up to a week later, oldest first; a time inserted behind
 * newer ones waits for them (kept longer, never deleted early). Returns how many rows were deleted.
 */
export async function pruneArchivedIssues(db: Db, now: number, o: PruneRun = {}): Promise<number> {
  return pruneHead(db, (n) => archivedIssuesPruned(now - WEEK_MS, n), o, { page: ISSUE_PRUNE_PAGE, maxPages: ISSUE_PRUNE_MAX_PAGES });
}
