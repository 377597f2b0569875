import { and, asc, desc, eq, gt, lt, sql, type SQL } from "drizzle-orm";
import { chunks, rowOf, sqlBatch, type Db } from "../db/client.js";
import type { TaskRow } from "../db/rows.js";
import { taskArchive, taskArchiveChains, taskArchiveCounts, taskArchiveFunctions, taskArchivePending, taskArchiveTotals, tasks } from "../db/schema.js";
import { idFloor } from "../lib/ids.js";
import { historyChunkKey } from "../lib/storage-keys.js";
import { DAY_MS, startOfUtcDay } from "../lib/time.js";
import { putChunk, readChunk, type Segments } from "./chunk.js";
import { jsonSlices } from "../db/json-slices.js";
import { QueryBudget } from "../db/query-budget.js";
import { issueMinutesAdded } from "./issue-minutes.js";

export interface ArchiveRun {
  /** Records a chunk, at most: one account's, read in one page (1,000 rows of up to ~12 KB each stay well inside a Worker's memory). */
  chunkSize?: number;
  /**
   * Full chunks an account's read fetches, and its batch commits, at most: a read and a batch move
   * this many chunks. 2 by default (2,000 rows of up to ~12.9 KB each, ~26 MB at worst, half a
   * Worker's 128 MB).
   */
  chunksPerRead?: number;
  /** D1 queries a run may make (each look, read and move counts), at most. */
  maxQueries?: number;
  /**
   * Characters of NDJSON a run encodes, at most: no new read once they are spent. The run's CPU
   * time grows with them (JSON, gzip and the read back), and a scheduled invocation has a CPU limit
   * (wrangler.toml's `limits.cpu_ms`).
   */
  maxChars?: number;
  /** The invocation's budget the run draws from (the archive sweep's, shared by its parts). */
  budget?: QueryBudget;
  /** How long past the window an account's records may wait for a full chunk before they move however few. */
  holdMs?: number;
}

export const DEFAULT_HOLD_MS = 7 * DAY_MS;
export const DEFAULT_CHUNKS_PER_READ = 2;
/**
 * D1 queries a run makes at most. A read and a batch move two chunks: about 850 chunks, 850,000
 * records a run (three runs an hour: ~700 tasks a second) when a look finds the busy accounts, down
 * to ~280 when every chunk needs a look and a read of its own. The archive's retention
 * (retention.ts) takes 35 of the same invocation's 900 first (one batch of index updates per 25
 * chunks; retention is a rule, the move only keeps D1 small, so in its backlog the move gets less).
 */
export const MOVE_MAX_QUERIES = 850;
/**
 * NDJSON a run encodes at most: 1,000,000,000 characters (about 1 GB). bench/task-history.ts
 * measured 43.8 s of workerd CPU for a run of 840 chunks of its records (978 characters each: ~822
 * million), the Worker's own CPU with local D1's and R2's (an upper bound): ~53 ms a million, so a
 * run stays near ~55 s, under wrangler.toml's `limits.cpu_ms` of 120,000. Records of this size reach
 * MOVE_MAX_QUERIES about when they reach this; larger inline payloads reach this first.
 */
export const MOVE_MAX_CHARS = 1_000_000_000;

/** The NDJSON a run has encoded, against its most. */
class Encoded {
  chars = 0;
  constructor(private readonly max: number) {}
  spent(): boolean {
    return this.chars >= this.max;
  }
}

interface Written {
  key: string;
  accountId: string;
  rows: TaskRow[];
  bytes: number;
  segments: Segments;
  ndjsonChars: number;
}

/**
 * The hourly move of task history out of D1 (issue 27): tasks issued and finished more than
 * `afterMs` before `now` leave `tasks` for gzip NDJSON chunks of their account in R2, each indexed
 * by one row of `task_archive` (worker/task-history/reads.ts answers from there).
 *
 * Chunks are an account's, and full: a chunk per record would cost D1 an index row per record,
 * which is what the move saves. An account moves a chunk once it has a full one (`chunkSize`
 * records past the window), or all it has once its oldest has waited `holdMs` past the window: a
 * busy account's records move every hour in chunks of 1,000, a quiet one's about once a week in one
 * chunk. Two looks find them, each through the primary key: the newest records past the window
 * (the busy accounts are most of them), and those past the hold (oldest first: every account found
 * there moves whatever it has, so nothing stays longer).
 *
 * A chunk is moved only once it is written and read back whole; its index row, the per-day counts
 * and the deletion of its rows are then one D1 batch, so a reader that asks D1's rows and the index
 * together finds every record in exactly one of them. One read fetches an account's next
 * `chunksPerRead` chunks and one batch commits them together: a read and a batch are the move's
 * D1 queries, and it is the number of those an invocation may make that bounds its pace. Run again after a failure, a chunk lands on
 * the same key (named by its ids) and nothing is counted twice (the batch that counts is the batch
 * that deletes). Also the migration of a deployment that kept every record in D1: the first runs
 * move its history, oldest first. Returns how many records moved.
 */
export async function archiveTasks(db: Db, bucket: R2Bucket, afterMs: number, now: number, run: ArchiveRun = {}): Promise<number> {
  const size = run.chunkSize ?? 1000;
  const budget = (run.budget ?? new QueryBudget(Infinity)).part(run.maxQueries ?? MOVE_MAX_QUERIES);
  const cutoff = now - afterMs;
  const held = idFloor(cutoff - (run.holdMs ?? DEFAULT_HOLD_MS));
  const looked = new Set<string>();
  const encoded = new Encoded(run.maxChars ?? MOVE_MAX_CHARS);
  let moved = 0;
  const visit = async (page: { accountId: string }[], whatever: boolean) => {
    for (const { accountId } of page) {
      if (looked.has(accountId)) continue;
      looked.add(accountId);
      moved += await moveAccount(db, bucket, { accountId, cutoff, size, per: run.chunksPerRead ?? DEFAULT_CHUNKS_PER_READ, now, whatever }, budget, encoded);
    }
  };
  // Past the hold, oldest first; keyed past each page, so an unfinished old task is stepped over.
  for (let after = ""; !encoded.spent() && budget.take(); ) {
    const page = await db
      .select({ id: tasks.id, accountId: tasks.accountId })
      .from(tasks)
      .where(and(gt(tasks.id, after), lt(tasks.id, held), lt(tasks.finishedAt, cutoff)))
      .orderBy(asc(tasks.id))
      .limit(size);
    await visit(page, true);
    if (page.length < size) break;
    after = page.at(-1)!.id;
  }
  // Past the window, newest first: the accounts with a full chunk.
  for (let before = idFloor(cutoff); !encoded.spent() && budget.take(); ) {
    const page = await db
      .select({ id: tasks.id, accountId: tasks.accountId })
      .from(tasks)
      .where(and(lt(tasks.id, before), lt(tasks.finishedAt, cutoff)))
      .orderBy(desc(tasks.id))
      .limit(size);
    await visit(page, false);
    if (page.length < size) break;
    before = page.at(-1)!.id;
  }
  return moved;
}

/**
 * Moves the account's records past the window, up to `per` full chunks a read and a batch (and the
 * last, partial chunk when `whatever`).
 */
async function moveAccount(
  db: Db,
  bucket: R2Bucket,
  o: { accountId: string; cutoff: number; size: number; per: number; now: number; whatever: boolean },
  budget: QueryBudget,
  encoded: Encoded,
): Promise<number> {
  let moved = 0;
  for (let after = ""; !encoded.spent() && budget.take(); ) {
    const page = and(eq(tasks.accountId, o.accountId), gt(tasks.id, after), lt(tasks.id, idFloor(o.cutoff)), lt(tasks.finishedAt, o.cutoff));
    const limit = o.size * o.per;
    // The mark goes in the read's own batch (no query of its own), and only when a chunk will be written.
    const [, raw = []] = await sqlBatch(db, [
      markPending(o.accountId, page, limit, o.whatever ? 1 : o.size, o.now),
      sql`select * from ${tasks} where ${page} order by ${tasks.id} limit ${limit}`,
    ]);
    const rows = raw.map((r) => rowOf(tasks, r));
    const full = chunks(rows, o.size).filter((c) => c.length === o.size || o.whatever);
    if (!full.length || !budget.take()) return moved;
    after = full.at(-1)!.at(-1)!.id;
    const written: Written[] = [];
    for (const c of full) written.push(await writeChunk(bucket, c));
    encoded.chars += written.reduce((n, w) => n + w.ndjsonChars, 0);
    try {
      await commitMove(db, written, o.now, { accountId: o.accountId, firstId: rows[0]!.id });
    } catch (e) {
      // A chunk no index row names is never read; left behind it would hold records past their retention.
      for (const w of written) {
        const lost = budget.take() && !(await indexed(db, w.key).catch(() => true));
        if (lost) await bucket.delete(w.key).catch(() => undefined);
      }
      if (changedUnder(e)) return moved;
      throw e;
    }
    const count = written.reduce((n, w) => n + w.rows.length, 0);
    moved += count;
    if (count < o.size * o.per) return moved;
  }
  return moved;
}

async function writeChunk(bucket: R2Bucket, rows: TaskRow[]): Promise<Written> {
  const key = historyChunkKey(rows[0]!.accountId, rows[0]!.id, rows.at(-1)!.id, rows.length);
  const { bytes, segments, ndjsonChars } = await putChunk(bucket, key, rows);
  const back = await readChunk(bucket, key, segments);
  if (back.length !== rows.length || back.some((r, i) => r.id !== rows[i]!.id)) throw new Error(`the archived chunk ${key} did not read back as written`);
  return { key, accountId: rows[0]!.accountId, rows, bytes, segments, ndjsonChars };
}

/**
 * The chunks' index rows (each chunk's own, one per function of it), the counts (per function, per
 * function and day, per chain), the issue times of their tasks of the last week (the week's counts
 * read them with D1's rows) and the deletion of their rows as one batch, each list one JSON
 * parameter (a chunk's ids are more than D1's 100 bound parameters).
 */
async function commitMove(db: Db, chunks: Written[], now: number, mark: { accountId: string; firstId: string }): Promise<void> {
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
      const [firstId, lastId] = [w.rows[0]!.id, w.rows.at(-1)!.id];
      return [
        sql`insert into ${taskArchive} (key, account_id, first_id, last_id, records, bytes, segments, purge_due, archived_at)
          values (${w.key}, ${w.accountId}, ${firstId}, ${lastId}, ${w.rows.length}, ${w.bytes}, ${JSON.stringify(w.segments)}, ${earliestUnpurged(w.rows)}, ${now})
          on conflict (key) do nothing`,
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
    ...jsonSlices(perChain).map((json) => sql`insert into ${taskArchiveChains} (chain_id, account_id, tasks)
        select ${field("chainId")}, ${field("accountId")}, ${field("tasks")}
        from json_each(${json}) where true
        on conflict (chain_id) do update set tasks = tasks + excluded.tasks`),
    ...issueMinutesAdded(rows, now),
    ...jsonSlices(rows.map((r) => r.id)).map((json) => sql`delete from ${tasks} where id in (select value from json_each(${json})) and finished_at is not null`),
    sql`delete from ${taskArchivePending} where account_id = ${mark.accountId} and first_id = ${mark.firstId} and at = ${now}`,
  ]);
}

/**
 * The mark of a read (taskArchivePending): the first and last id of the account's `page`, as the read
 * finds it in the same batch, when it holds at least `least` records (a chunk's worth, or one when
 * whatever it has moves). Nothing when no chunk will be written.
 */
const markPending = (accountId: string, page: SQL | undefined, limit: number, least: number, now: number): SQL =>
  sql`insert into ${taskArchivePending} (account_id, first_id, last_id, at)
    select ${accountId}, min(id), max(id), ${now} from (select ${tasks.id} as id from ${tasks} where ${page} order by ${tasks.id} limit ${limit}) where true
    having count(*) >= ${least}
    on conflict do nothing`;

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
  return jsonSlices(w.rows.map((r) => [r.id, r.purgedAt == null ? 1 : 0])).map((json) => {
    const expected = (JSON.parse(json) as unknown[]).length;
    return sql`update ${taskArchive} set records = case when (
        select count(*) = ${expected}
        from json_each(${json}) j join ${tasks} t on t.id = json_extract(j.value, '$[0]')
        where t.finished_at is not null and (t.purged_at is null) = json_extract(j.value, '$[1]')
      ) then records end
      where key = ${w.key}`;
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
async function indexed(db: Db, key: string): Promise<boolean> {
  return (await db.select({ key: taskArchive.key }).from(taskArchive).where(eq(taskArchive.key, key))).length > 0;
}

/** When retention next has work in these records: the earliest finish of those not purged yet. */
export function earliestUnpurged(rows: TaskRow[]): number | null {
  let due: number | null = null;
  for (const r of rows) if (r.purgedAt == null && r.finishedAt != null && (due === null || r.finishedAt < due)) due = r.finishedAt;
  return due;
}
