import { and, asc, gt, lt, sql } from "drizzle-orm";
import { sqlBatch, type Db } from "../db/client.js";
import type { TaskRow } from "../db/rows.js";
import { taskArchive, taskArchiveCounts, tasks } from "../db/schema.js";
import { idFloor } from "../lib/ids.js";
import { historyChunkKey } from "../lib/storage-keys.js";
import { startOfUtcDay } from "../lib/time.js";
import { putChunk, readChunk, type Segments } from "./chunk.js";
import { jsonSlices } from "../db/json-slices.js";

export interface ArchiveRun {
  /** Records read from D1 a page (and at most a chunk's size): 1,000 rows of up to ~12 KB each stay well inside a Worker's memory. */
  pageSize?: number;
  /** Pages a run: each costs one read and one batch of D1, so a run stays far below D1's 1,000 queries an invocation. */
  maxPages?: number;
}

/** A chunk never spans a gap between two of its ids' issue times longer than this: a straggler (a task long held by a pause) gets a chunk of its own instead of widening a neighbour's. */
const GAP_MS = 3_600_000;

interface Written {
  key: string;
  accountId: string;
  rows: TaskRow[];
  bytes: number;
  segments: Segments;
}

/**
 * The hourly move of task history out of D1 (issue 27): every task issued and finished more than
 * `afterMs` before `now` leaves `tasks` for a gzip NDJSON chunk of its account in R2, indexed by one
 * row of `task_archive` (worker/task-history/reads.ts answers from there). A page is moved only once
 * its chunks are written and read back whole; the index rows, the per-day counts and the deletion
 * of the rows are then one D1 batch, so a reader that looks in D1 first and in the index after
 * finds every record in one of them, never in neither. Run again after a failure, a page lands on
 * the same keys (named by their ids) and nothing is counted twice (the batch that counts is the
 * batch that deletes). Also the migration of a deployment that kept every record in D1: the first
 * runs move its history page by page, oldest first. Returns how many records moved.
 */
export async function archiveTasks(db: Db, bucket: R2Bucket, afterMs: number, now: number, run: ArchiveRun = {}): Promise<number> {
  const pageSize = run.pageSize ?? 1000;
  const maxPages = run.maxPages ?? 100;
  const cutoff = now - afterMs;
  let moved = 0;
  let after = "";
  for (let pages = 0; pages < maxPages; pages++) {
    // Finished and issued before the cutoff, in id order (the primary key); an unfinished old task
    // stays and is stepped over, not read again by the next page.
    const page = await db
      .select()
      .from(tasks)
      .where(and(gt(tasks.id, after), lt(tasks.id, idFloor(cutoff)), lt(tasks.finishedAt, cutoff)))
      .orderBy(asc(tasks.id))
      .limit(pageSize);
    if (!page.length) break;
    after = page.at(-1)!.id;
    const written = await Promise.all(chunksOf(page).map((rows) => writeChunk(bucket, rows)));
    try {
      await commitMove(db, written, now);
    } catch (e) {
      // Chunks no index row names are never read; left behind they would hold records past their retention.
      const orphans = await unindexed(db, written).catch(() => []);
      if (orphans.length) await bucket.delete(orphans).catch(() => undefined);
      throw e;
    }
    moved += page.length;
    if (page.length < pageSize) break;
  }
  return moved;
}

/** A page's rows by account, in id order, cut where the issue times leave a gap. */
export function chunksOf(page: TaskRow[]): TaskRow[][] {
  const byAccount = new Map<string, TaskRow[][]>();
  for (const row of page) {
    const runs = byAccount.get(row.accountId) ?? [];
    const last = runs.at(-1);
    const prev = last?.at(-1);
    if (last && prev && row.issuedAt - prev.issuedAt <= GAP_MS) last.push(row);
    else runs.push([row]);
    byAccount.set(row.accountId, runs);
  }
  return [...byAccount.values()].flat();
}

async function writeChunk(bucket: R2Bucket, rows: TaskRow[]): Promise<Written> {
  const key = historyChunkKey(rows[0]!.accountId, rows[0]!.id, rows.at(-1)!.id);
  const { bytes, segments } = await putChunk(bucket, key, rows);
  const back = await readChunk(bucket, key, segments);
  if (back.length !== rows.length || back.some((r, i) => r.id !== rows[i]!.id)) throw new Error(`the archived chunk ${key} did not read back as written`);
  return { key, accountId: rows[0]!.accountId, rows, bytes, segments };
}

/** Index rows, counts and the deletion as one batch, each statement one JSON parameter whatever the page's size. */
async function commitMove(db: Db, written: Written[], now: number): Promise<void> {
  const index = written.map((w) => ({
    key: w.key,
    accountId: w.accountId,
    firstId: w.rows[0]!.id,
    lastId: w.rows.at(-1)!.id,
    records: w.rows.length,
    bytes: w.bytes,
    segments: JSON.stringify(w.segments),
    functions: JSON.stringify([...new Set(w.rows.map((r) => r.functionId))].sort()),
    purgeDue: earliestUnpurged(w.rows),
  }));
  const counts = new Map<string, { accountId: string; functionId: string; day: number; tasks: number }>();
  for (const r of written.flatMap((w) => w.rows)) {
    const day = startOfUtcDay(r.issuedAt);
    const k = `${r.accountId} ${r.functionId} ${day}`;
    const c = counts.get(k) ?? { accountId: r.accountId, functionId: r.functionId, day, tasks: 0 };
    c.tasks++;
    counts.set(k, c);
  }
  const ids = written.flatMap((w) => w.rows.map((r) => r.id));
  const field = (name: string) => sql.raw(`json_extract(value, '$.${name}')`);
  await sqlBatch(db, [
    ...jsonSlices(index).map((json) => sql`insert into ${taskArchive} (key, account_id, first_id, last_id, records, bytes, segments, functions, purge_due, archived_at)
        select ${field("key")}, ${field("accountId")}, ${field("firstId")}, ${field("lastId")}, ${field("records")}, ${field("bytes")},
               ${field("segments")}, ${field("functions")}, ${field("purgeDue")}, ${now}
        from json_each(${json}) where true
        on conflict (key) do nothing`),
    ...jsonSlices([...counts.values()]).map((json) => sql`insert into ${taskArchiveCounts} (account_id, function_id, day, tasks)
        select ${field("accountId")}, ${field("functionId")}, ${field("day")}, ${field("tasks")}
        from json_each(${json}) where true
        on conflict (account_id, function_id, day) do update set tasks = tasks + excluded.tasks`),
    ...jsonSlices(ids).map((json) => sql`delete from ${tasks} where id in (select value from json_each(${json})) and finished_at is not null`),
  ]);
}

/**
 * After a failed move, the chunks whose index rows did not land: only those may go. A batch whose
 * answer was lost may have committed, and then its chunks hold the only copy of their records; when
 * even that cannot be read, nothing is deleted (an unindexed chunk is never read, only kept).
 */
async function unindexed(db: Db, written: Written[]): Promise<string[]> {
  const keys = written.map((w) => w.key);
  const landed = new Set<string>();
  for (const json of jsonSlices(keys)) {
    const rows = await db.select({ key: taskArchive.key }).from(taskArchive).where(sql`${taskArchive.key} in (select value from json_each(${json}))`);
    for (const r of rows) landed.add(r.key);
  }
  return keys.filter((k) => !landed.has(k));
}

/** When retention next has work in these records: the earliest finish of those not purged yet. */
export function earliestUnpurged(rows: TaskRow[]): number | null {
  let due: number | null = null;
  for (const r of rows) if (r.purgedAt == null && r.finishedAt != null && (due === null || r.finishedAt < due)) due = r.finishedAt;
  return due;
}
