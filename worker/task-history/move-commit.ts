import { and, eq, sql, type SQL } from "drizzle-orm";
import { rowOf, sqlBatch, type Db } from "../db/client.js";
import type { TaskRow } from "../db/rows.js";
import { taskArchive, taskArchiveChains, taskArchiveCounts, taskArchiveFunctions, taskArchivePending, taskArchiveTotals, tasks } from "../db/schema.js";
import { historyChunkKey } from "../lib/storage-keys.js";
import { startOfUtcDay } from "../lib/time.js";
import { checkReadBack, putChunk, type Segments } from "./chunk.js";
import { encodeSegments } from "../db/archive-segments.js";
import { chunkRow } from "./chunk-names.js";
import { jsonSlices } from "../db/json-slices.js";
import type { QueryBudget } from "../db/query-budget.js";
import { issueMinutesAdded } from "./issue-minutes.js";
import { archivedDaysPruned } from "./counts.js";

/**
 * The archive's move, from a read of D1's rows on (archiver.ts): the chunks written to R2, and the one
 * D1 batch that indexes and counts them and deletes their rows, or leaves everything as it was.
 */

export interface Written {
  key: string;
  accountId: string;
  rows: TaskRow[];
  bytes: number;
  segments: Segments;
  ndjsonChars: number;
}

export async function writeChunk(bucket: R2Bucket, rows: TaskRow[]): Promise<Written> {
  const key = historyChunkKey(rows[0]!.accountId, rows[0]!.id, rows.at(-1)!.id, rows.length);
  const { bytes, segments, ndjsonChars } = await putChunk(bucket, key, rows);
  await checkReadBack(bucket, key, segments, rows);
  return { key, accountId: rows[0]!.accountId, rows, bytes, segments, ndjsonChars };
}

/**
 * The chunks' index rows (each chunk's own, one per function of it), the counts (per function, per
 * function and day, per chain; the days no read reaches any more go), the issue times of their
 * tasks of the last week (the week's counts read them with D1's rows) and the deletion of their rows
 * as one batch, each list one JSON parameter (a chunk's ids are more than D1's 100 bound parameters).
 */
async function commitMove(db: Db, chunks: Written[], now: number, marks: Mark[]): Promise<void> {
  const rows = chunks.flatMap((w) => w.rows);
  const perDay = tally(rows, (r) => ({ accountId: r.accountId, functionId: r.functionId, day: startOfUtcDay(r.issuedAt) }));
  const perFunction = tally(rows, (r) => ({ accountId: r.accountId, functionId: r.functionId }));
  const perChain = tally(
    rows.filter((r) => r.chainId !== null),
    (r) => ({ chainId: r.chainId!, accountId: r.accountId }),
  );
  const field = (name: string) => sql.raw(`json_extract(value, '$.${name}')`);
  await sqlBatch(db, [
    ...chunks.flatMap((w) => {
      const { firstId, lastId } = ofWritten(w);
      return [
        // No name: the row's columns make it (chunk-names.ts). A row for these records already there
        // (a batch whose answer was lost, run again) fails the guards below, as their rows are gone.
        sql`insert into ${taskArchive} (account_id, first_id, last_id, records, bytes, segments, purge_due, archived_at)
          values (${w.accountId}, ${firstId}, ${lastId}, ${w.rows.length}, ${w.bytes}, ${encodeSegments(w.segments)}, ${earliestUnpurged(w.rows)}, ${now})`,
        ...unchangedGuards(w),
        ...jsonSlices([...new Set(w.rows.map((r) => r.functionId))]).map((json) => sql`insert into ${taskArchiveFunctions} (function_id, last_id, account_id)
          select value, ${lastId}, ${w.accountId} from json_each(${json}) where true
          on conflict do nothing`),
      ];
    }),
    ...jsonSlices(perFunction).map((json) => sql`insert into ${taskArchiveTotals} (account_id, function_id, tasks)
        select ${field("accountId")}, ${field("functionId")}, ${field("tasks")}
        from json_each(${json}) where true
        on conflict (account_id, function_id) do update set tasks = tasks + excluded.tasks`),
    ...jsonSlices(perDay).map((json) => sql`insert into ${taskArchiveCounts} (account_id, function_id, day, tasks)
        select ${field("accountId")}, ${field("functionId")}, ${field("day")}, ${field("tasks")}
        from json_each(${json}) where true
        on conflict (account_id, function_id, day) do update set tasks = tasks + excluded.tasks`),
    ...archivedDaysPruned(chunks.map((w) => w.accountId), now),
    ...jsonSlices(perChain).map((json) => sql`insert into ${taskArchiveChains} (chain_id, account_id, tasks)
        select ${field("chainId")}, ${field("accountId")}, ${field("tasks")}
        from json_each(${json}) where true
        on conflict (chain_id) do update set tasks = tasks + excluded.tasks`),
    ...issueMinutesAdded(rows, now),
    ...jsonSlices(rows.map((r) => r.id)).map((json) => sql`delete from ${tasks} where id in (select value from json_each(${json})) and finished_at is not null`),
    sql`delete from ${taskArchivePending} where at = ${now} and exists (select 1 from json_each(${JSON.stringify(marks.map((m) => [m.accountId, m.firstId]))}) j
      where json_extract(j.value, '$[0]') = account_id and json_extract(j.value, '$[1]') = first_id)`,
  ]);
}

/** A read's mark (taskArchivePending): an account read, and the first id the read found of it. */
export interface Mark {
  accountId: string;
  firstId: string;
}

/**
 * Reads the records `where` selects, in account and id order, up to `limit`, and marks each account
 * read (taskArchivePending) in the same batch: its first and last id as the read finds them, when
 * it has at least `least` (a chunk's worth, or one when whatever it has moves). The mark costs no
 * query of the run's budget, and is there before any chunk of the read is put in R2.
 */
export async function readMarked(db: Db, where: SQL | undefined, o: { limit: number; least: number; now: number }): Promise<TaskRow[]> {
  const [, raw = []] = await sqlBatch(db, [
    sql`insert into ${taskArchivePending} (account_id, first_id, last_id, at)
      select account_id, min(id), max(id), ${o.now}
      from (select ${tasks.accountId} as account_id, ${tasks.id} as id from ${tasks} where ${where} order by ${tasks.accountId}, ${tasks.id} limit ${o.limit}) where true
      group by account_id having count(*) >= ${o.least}
      on conflict do nothing`,
    sql`select * from ${tasks} where ${where} order by ${tasks.accountId}, ${tasks.id} limit ${o.limit}`,
  ]);
  return raw.map((r) => rowOf(tasks, r));
}

/**
 * Commits the written chunks (commitMove) and drops the read's marks. On failure deletes each chunk
 * whose index row did not land, as `budget` allows: a chunk no index row names is never read, and
 * left behind it would hold records past their retention. False when the rows changed under the
 * move (its guard): the next run moves them. Any other failure is thrown.
 */
export async function committed(db: Db, bucket: R2Bucket, written: Written[], now: number, marks: Mark[], budget: QueryBudget): Promise<boolean> {
  try {
    await commitMove(db, written, now, marks);
    return true;
  } catch (e) {
    for (const w of written) {
      const lost = budget.take() && !(await indexed(db, w).catch(() => true));
      if (lost) await bucket.delete(w.key).catch(() => undefined);
    }
    if (changedUnder(e)) return false;
    throw e;
  }
}

/**
 * Statements that fail the move's batch (and so roll it all back) unless every row of the chunk is
 * still in D1 as the move read it: there, finished, and unpurged if it was. Each sets the chunk's
 * index row's `records` to null (a NOT NULL column) when its slice of the chunk's ids finds fewer.
 * Archive sweeps may overlap (one still running when the next fires), and live retention may purge a
 * row between the move's read and its batch: the counts and the issue times are added from the rows
 * as read, so without this a record moved by two runs would count twice (in two chunks, for a
 * partial chunk whose runs saw different cutoffs), and a purge would be lost under an unpurged copy.
 * The batch that fails here moves nothing, and the rows stay for the next run.
 */
function unchangedGuards(w: Written) {
  const row = writtenRow(w);
  return jsonSlices(w.rows.map((r) => [r.id, r.purgedAt == null ? 1 : 0])).map((json) => {
    const expected = (JSON.parse(json) as unknown[]).length;
    return sql`update ${taskArchive} set records = case when (
        select count(*) = ${expected}
        from json_each(${json}) j join ${tasks} t on t.id = json_extract(j.value, '$[0]')
        where t.finished_at is not null and (t.purged_at is null) = json_extract(j.value, '$[1]')
      ) then records end
      where ${row}`;
  });
}

/** Whether a move's batch failed for its guard (unchangedGuards): its rows changed under it, and another run or the next moves them. */
const changedUnder = (e: unknown) => /NOT NULL constraint failed: task_archive\.records/.test(String(e instanceof Error ? `${e.message} ${String(e.cause ?? "")}` : e));

/** The rows counted by what `keyOf` says of them: one entry per distinct key, with its `tasks`. */
function tally<K extends Record<string, string | number>>(rows: TaskRow[], keyOf: (r: TaskRow) => K): (K & { tasks: number })[] {
  const counts = new Map<string, K & { tasks: number }>();
  for (const r of rows) {
    const k = keyOf(r);
    const name = Object.values(k).join(" ");
    const c = counts.get(name) ?? { ...k, tasks: 0 };
    c.tasks++;
    counts.set(name, c);
  }
  return [...counts.values()];
}

/**
 * After a failed move, whether the chunk's index row landed: only a chunk without one may go. A
 * batch whose answer was lost may have committed, and then the chunk holds the only copy of its
 * records; when even that cannot be read, nothing is deleted (an unindexed chunk is never read, only
 * kept).
 */
async function indexed(db: Db, w: Written): Promise<boolean> {
  return (await db.select({ records: taskArchive.records }).from(taskArchive).where(writtenRow(w))).length > 0;
}

const ofWritten = (w: Written) => ({ accountId: w.accountId, firstId: w.rows[0]!.id, lastId: w.rows.at(-1)!.id });
/** The index row of the chunk just written, as the move wrote it: its range and its count. */
const writtenRow = (w: Written) => and(chunkRow(ofWritten(w)), eq(taskArchive.records, w.rows.length));

/** When retention next has work in these records: the earliest finish of those not purged yet. */
export function earliestUnpurged(rows: TaskRow[]): number | null {
  let due: number | null = null;
  for (const r of rows) if (r.purgedAt == null && r.finishedAt != null && (due === null || r.finishedAt < due)) due = r.finishedAt;
  return due;
}
