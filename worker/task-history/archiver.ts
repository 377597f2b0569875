import { and, asc, desc, eq, gt, lt, sql } from "drizzle-orm";
import { chunks, type Db } from "../db/client.js";
import { tasks } from "../db/schema.js";
import { idFloor } from "../lib/ids.js";
import { groupBy } from "../lib/group-by.js";
import { DAY_MS } from "../lib/time.js";
import { QueryBudget } from "../db/query-budget.js";
import { committed, readMarked, writeChunk, type Written } from "./move-commit.js";

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
  /** Chunks a run writes, at most: no new read once they are written. */
  maxChunks?: number;
}

/** The hold when a run does not say (the sweep passes TASK_ARCHIVE_HOLD_HOURS: window.ts). */
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

/**
 * Chunks a run writes at most: 2,000. Each costs R2 a put and a read back, and an invocation may make
 * 10,000 subrequests (Workers Paid); the archive's retention, in the same invocation, takes up to
 * three a chunk of its 850. Busy accounts' chunks reach MOVE_MAX_QUERIES first (~850 a run); this
 * binds when the hold's accounts are many and small (below, HOLD_ACCOUNTS_A_READ).
 */
export const MOVE_MAX_CHUNKS = 2_000;
/**
 * Accounts whose records past the hold one read takes and one batch commits, at most, each in a chunk
 * of its own: an account with fewer records than a chunk costs a run two queries, not a read and a
 * batch of its own, so many small accounts move at the pace of their records, not of their number.
 * 50 keeps the batch to ~150 statements and its JSON small.
 */
export const HOLD_ACCOUNTS_A_READ = 50;

/** What a run has spent of what it may: the NDJSON it encoded, the chunks it wrote. */
class Spent {
  chars = 0;
  chunks = 0;
  constructor(
    private readonly maxChars: number,
    private readonly maxChunks: number,
  ) {}
  add(written: Written[]): void {
    this.chars += written.reduce((n, w) => n + w.ndjsonChars, 0);
    this.chunks += written.length;
  }
  done(): boolean {
    return this.chars >= this.maxChars || this.chunks >= this.maxChunks;
  }
}

/** One run of the move: where it stands and what it may still spend. */
interface Move {
  db: Db;
  bucket: R2Bucket;
  cutoff: number;
  size: number;
  per: number;
  now: number;
  budget: QueryBudget;
  spent: Spent;
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
 * there moves whatever it has, so nothing stays longer; up to HOLD_ACCOUNTS_A_READ of them a read
 * and a batch).
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
  const cutoff = now - afterMs;
  const m: Move = {
    db,
    bucket,
    cutoff,
    size,
    per: run.chunksPerRead ?? DEFAULT_CHUNKS_PER_READ,
    now,
    budget: (run.budget ?? new QueryBudget(Infinity)).part(run.maxQueries ?? MOVE_MAX_QUERIES),
    spent: new Spent(run.maxChars ?? MOVE_MAX_CHARS, run.maxChunks ?? MOVE_MAX_CHUNKS),
  };
  const held = idFloor(cutoff - (run.holdMs ?? DEFAULT_HOLD_MS));
  const looked = new Set<string>();
  const fresh = (page: { accountId: string }[]) => {
    const out = [...new Set(page.map((r) => r.accountId))].filter((a) => !looked.has(a));
    for (const a of out) looked.add(a);
    return out;
  };
  let moved = 0;
  // Past the hold, oldest first; keyed past each page, so an unfinished old task is stepped over.
  for (let after = ""; !m.spent.done() && m.budget.take(); ) {
    const page = await db
      .select({ id: tasks.id, accountId: tasks.accountId })
      .from(tasks)
      .where(and(gt(tasks.id, after), lt(tasks.id, held), lt(tasks.finishedAt, cutoff)))
      .orderBy(asc(tasks.id))
      .limit(size);
    moved += await moveHeld(m, fresh(page));
    if (page.length < size) break;
    after = page.at(-1)!.id;
  }
  // Past the window, newest first: the accounts with a full chunk.
  for (let before = idFloor(cutoff); !m.spent.done() && m.budget.take(); ) {
    const page = await db
      .select({ id: tasks.id, accountId: tasks.accountId })
      .from(tasks)
      .where(and(lt(tasks.id, before), lt(tasks.finishedAt, cutoff)))
      .orderBy(desc(tasks.id))
      .limit(size);
    for (const accountId of fresh(page)) moved += await moveAccount(m, accountId, false);
    if (page.length < size) break;
    before = page.at(-1)!.id;
  }
  return moved;
}

/**
 * Moves everything past the window of these accounts (found past the hold), HOLD_ACCOUNTS_A_READ
 * at a time: one read of their records in account order, a chunk an account (or more, for one with
 * more than a chunk), one batch. The read stops at `size × per` records; the account it cuts moves
 * on its own (moveAccount), and those after it are read again.
 */
async function moveHeld(m: Move, accounts: string[]): Promise<number> {
  const queue = [...accounts];
  let moved = 0;
  while (queue.length && !m.spent.done() && m.budget.take()) {
    const group = queue.splice(0, HOLD_ACCOUNTS_A_READ);
    const limit = m.size * m.per;
    const where = and(sql`${tasks.accountId} in (select value from json_each(${JSON.stringify(group)}))`, lt(tasks.id, idFloor(m.cutoff)), lt(tasks.finishedAt, m.cutoff));
    const rows = await readMarked(m.db, where, { limit, least: 1, now: m.now });
    const byAccount = groupBy(rows, (r) => r.accountId);
    const marks = [...byAccount].map(([accountId, r]) => ({ accountId, firstId: r[0]!.id }));
    // The read stopped inside the last account: its full chunks move now, the rest on its own after them.
    let cut: { accountId: string; after: string } | undefined;
    if (rows.length === limit) {
      const accountId = rows.at(-1)!.accountId;
      const full = chunks(byAccount.get(accountId)!, m.size).filter((c) => c.length === m.size);
      if (full.length) byAccount.set(accountId, full.flat());
      else byAccount.delete(accountId);
      cut = { accountId, after: full.at(-1)?.at(-1)?.id ?? "" };
      // Rows come in account order: the group's accounts after the cut one got none.
      queue.unshift(...group.filter((a) => a > accountId));
    }
    if (byAccount.size) {
      if (!m.budget.take()) return moved;
      const written: Written[] = [];
      for (const own of byAccount.values()) for (const c of chunks(own, m.size)) written.push(await writeChunk(m.bucket, c));
      m.spent.add(written);
      if (!(await committed(m.db, m.bucket, written, m.now, marks, m.budget))) continue;
      moved += written.reduce((n, w) => n + w.rows.length, 0);
    }
    if (cut) moved += await moveAccount(m, cut.accountId, true, cut.after);
  }
  return moved;
}

/**
 * Moves the account's records past the window (after the id `from`), up to `per` full chunks a read
 * and a batch (and the last, partial chunk when `whatever`).
 */
async function moveAccount(m: Move, accountId: string, whatever: boolean, from = ""): Promise<number> {
  let moved = 0;
  for (let after = from; !m.spent.done() && m.budget.take(); ) {
    const where = and(eq(tasks.accountId, accountId), gt(tasks.id, after), lt(tasks.id, idFloor(m.cutoff)), lt(tasks.finishedAt, m.cutoff));
    const rows = await readMarked(m.db, where, { limit: m.size * m.per, least: whatever ? 1 : m.size, now: m.now });
    const full = chunks(rows, m.size).filter((c) => c.length === m.size || whatever);
    if (!full.length || !m.budget.take()) return moved;
    after = full.at(-1)!.at(-1)!.id;
    const written: Written[] = [];
    for (const c of full) written.push(await writeChunk(m.bucket, c));
    m.spent.add(written);
    if (!(await committed(m.db, m.bucket, written, m.now, [{ accountId, firstId: rows[0]!.id }], m.budget))) return moved;
    const count = written.reduce((n, w) => n + w.rows.length, 0);
    moved += count;
    if (count < m.size * m.per) return moved;
  }
  return moved;
}
