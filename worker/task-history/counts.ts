import { and, eq, gte, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { taskArchiveChains, taskArchiveCounts, taskArchiveTotals, tasks } from "../db/schema.js";
import { jsonSlices } from "../db/json-slices.js";
import { DAY_MS, startOfUtcDay } from "../lib/time.js";

/**
 * The counts of archived tasks (archiver.ts keeps them per function, per function and UTC day of
 * issue, and per chain, in the batch that moves the records): what the counts of D1's rows no longer
 * see once records leave it.
 */

/** Every archived task of the account, or of one of its functions: a statement for taskCounts' batch. */
export const archivedTotal = (db: Db, scope: { accountId: string; functionId?: string | undefined }) =>
  db
    .select({ n: sql<number>`coalesce(sum(${taskArchiveTotals.tasks}), 0)` })
    .from(taskArchiveTotals)
    .where(and(eq(taskArchiveTotals.accountId, scope.accountId), scope.functionId ? eq(taskArchiveTotals.functionId, scope.functionId) : undefined));

/**
 * The account's archived tasks issued on the UTC day that starts at `day`, as an expression for
 * the statement that counts D1's rows of that day (tasks/counts.ts): one statement, so a record
 * the move takes in between counts once. Read through the table's own key `(account, day, function)` (WITHOUT ROWID).
 */
export const archivedOnDay = (accountId: string, day: number): SQL =>
  sql`(select coalesce(sum(${taskArchiveCounts.tasks}), 0) from ${taskArchiveCounts} where ${taskArchiveCounts.accountId} = ${accountId} and ${taskArchiveCounts.day} = ${day})`;

/**
 * The UTC days of per-day counts that anything reads: the console's usage page charts the last 30
 * (today and the 29 before it), its functions page 7, and an account's metrics today.
 */
export const ARCHIVED_DAYS_READ = 30;

/**
 * Statements for the move's batch (move-commit.ts): these accounts' per-day counts from before the
 * days anything reads, and one day more (a read begun before midnight still finds its first day),
 * deleted. Each account's rows are a range of the table's key `(account, day, function)`, so the
 * statement reads only what it deletes. An account that keeps running so keeps about a month of
 * rows, a function's day each, however long its history; one that stopped keeps what its last move
 * left, at most the same.
 */
export const archivedDaysPruned = (accountIds: string[], now: number): SQL[] =>
  jsonSlices([...new Set(accountIds)]).map(
    (json) => sql`delete from ${taskArchiveCounts} where ${taskArchiveCounts.accountId} in (select value from json_each(${json})) and ${taskArchiveCounts.day} < ${startOfUtcDay(now) - ARCHIVED_DAYS_READ * DAY_MS}`,
  );

/** The account's archived tasks per function and UTC day since `first` (a day's start), `day` counted from it. */
export async function archivedDays(db: Db, accountId: string, first: number): Promise<{ functionId: string; day: number; count: number }[]> {
  const rows = await db
    .select({ functionId: taskArchiveCounts.functionId, day: taskArchiveCounts.day, count: taskArchiveCounts.tasks })
    .from(taskArchiveCounts)
    .where(and(eq(taskArchiveCounts.accountId, accountId), gte(taskArchiveCounts.day, first)));
  return rows.map((r) => ({ ...r, day: (r.day - first) / DAY_MS }));
}

/** The chain's tasks (those with its `chain_id`), in D1 and archived, read in one statement so that a move in between counts none twice. */
export async function chainTasks(db: Db, chainId: string): Promise<number> {
  const [row] = await db
    .select({ n: sql<number>`count(*) + coalesce((select ${taskArchiveChains.tasks} from ${taskArchiveChains} where ${taskArchiveChains.chainId} = ${chainId}), 0)` })
    .from(tasks)
    .where(eq(tasks.chainId, chainId));
  return row?.n ?? 0;
}
