import type { TaskRow } from "../db/rows.js";
import { cutPayloadsSql, decodeRecord, encodeRecord, RECORD_COLUMNS, RECORD_TYPES, type KeptRecord } from "./compact-record.js";
import { idFloorAt, stored, unstored } from "./id-bytes.js";
import type { Issue } from "./issue-counts.js";
import type { ListedTask, ListQuery } from "./list-query.js";
import type { Released } from "./release.js";

/** Pruning runs at most this often: a look at the oldest ids, whatever the batch rate. */
const PRUNE_EVERY_MS = 10_000;
/** Records dropped by one pruning, so that a backlog never makes one storage step long. */
const PRUNE_ROWS = 2_000;

// A record kept again (a retried write reads its row back again) is the same row; once archived it stays as archived.
const upsert = (released: 0 | 1) => `insert into shard_record (${RECORD_COLUMNS.join(", ")}, released) values (${RECORD_COLUMNS.map(() => "?").join(", ")}, ${released})
  on conflict (id) do update set ${RECORD_COLUMNS.filter((c) => c !== "id").map((c) => `${c} = excluded.${c}`).join(", ")} where chunk is null`;
const INSERT = upsert(0);
/** A rowless task's record (task-life/held-tasks.ts): D1 has no row to let go, so it counts as released from the start. */
const INSERT_ROWLESS = upsert(1);

/** Records not yet archived, in id order: all of D1's payloads (the chunk is written from them). */
const UNARCHIVED = "chunk is null and far = 0";
const ARCHIVED = `update shard_record set chunk = ?, ${cutPayloadsSql()} where id = ?`;
const UNRELEASED = "chunk is not null and released = 0";

/**
 * The finished tasks of a shard's functions, kept in the shard's own SQLite for the window
 * (`windowMs`: TASK_ARCHIVE_AFTER_HOURS, the hour D1 holds them at least, or the retention period
 * should it be shorter), beside the rows D1 gets
 * today. Step 1 of the shard-resident history (docs/dispatch.md): written with every group commit,
 * in the storage step that drops its outcomes from the log, so a record is here only once D1 has
 * its finished row. Step 2: a read by id (get, result, log, a wait) answers from it before
 * D1 (dispatch/held-reads.ts). Keyed by packed id, with the two indexes the lists will page:
 * (function, id) and (account, id).
 */
export class FinishedRecords {
  private lastPrune = 0;
  /** About how many records wait for the archive (kept again or replaced ones count twice): when a full chunk does, it rolls. */
  waiting: number;

  constructor(
    private readonly sql: SqlStorage,
    private readonly windowMs: number,
  ) {
    sql.exec(`create table if not exists shard_record (
      id ${RECORD_TYPES.id} primary key, account_id ${RECORD_TYPES.account_id} not null, function_id ${RECORD_TYPES.function_id} not null) without rowid`);
    // A column D1's schema gained since the table was made is added here.
    const have = new Set(sql.exec("select * from shard_record limit 0").columnNames);
    for (const c of RECORD_COLUMNS) if (!have.has(c)) sql.exec(`alter table shard_record add column ${c} ${RECORD_TYPES[c]}${c === "far" ? " not null default 0" : ""}`);
    sql.exec("create index if not exists shard_record_function on shard_record (function_id, id)");
    sql.exec("create index if not exists shard_record_account on shard_record (account_id, id)");
    // The chunk of the shard's archive that holds the record (archive.ts); null until then.
    if (!have.has("chunk")) sql.exec("alter table shard_record add column chunk integer");
    // Archived, then released: D1 was asked to let its rows go (release.ts). Only then may a record leave the shard.
    if (!have.has("released")) sql.exec("alter table shard_record add column released integer not null default 0");
    sql.exec(`create index if not exists shard_record_unreleased on shard_record (id) where ${UNRELEASED}`);
    // The archive takes the records waiting for it oldest finish first.
    sql.exec(`create index if not exists shard_record_unarchived on shard_record (finished_at) where ${UNARCHIVED}`);
    this.waiting = Number(sql.exec(`select count(*) as n from shard_record where ${UNARCHIVED}`).one().n);
  }

  /**
   * Keeps these finished rows, whole until the shard's archive has them (a row kept before is
   * replaced unless archived). `rowless`: tasks D1 has no row of, which need no release.
   */
  keep(rows: Iterable<TaskRow>, now: number, rowless?: Set<string>): void {
    for (const row of rows)
      if (row.finishedAt != null) {
        this.sql.exec(rowless?.has(row.id) ? INSERT_ROWLESS : INSERT, ...encodeRecord(row));
        this.waiting++;
      }
    if (now - this.lastPrune >= PRUNE_EVERY_MS) this.prune(now);
  }

  /** The record of a task that finished within the window at `now` (one pruning has not yet dropped may be past it). */
  get(taskId: string, now: number): KeptRecord | undefined {
    const [kept] = this.sql.exec("select * from shard_record where id = ? and finished_at >= ?", stored(taskId), now - this.windowMs).toArray();
    return kept ? decodeRecord(kept) : undefined;
  }

  /** The row of a task finished within the window, when the record holds all of it: a read by id answers from it. */
  whole(taskId: string, now: number): TaskRow | undefined {
    const kept = this.get(taskId, now);
    return kept && !kept.far.length ? kept.row : undefined;
  }

  /**
   * A page of the account's kept records (or a function's of the account), newest id first, below
   * `before`: what a list shows of each, through the (function, id) or (account, id) index.
   */
  page(q: ListQuery): ListedTask[] {
    type Stored = ArrayBuffer | string;
    // A function's records are all its account's: one look at any of them settles another
    // account's function id, which would otherwise walk that function's records for none.
    if (q.functionId !== undefined) {
      const owner = this.sql.exec<{ account_id: Stored }>("select account_id from shard_record where function_id = ? limit 1", stored(q.functionId)).toArray()[0];
      if (owner && unstored(owner.account_id) !== q.accountId) return [];
    }
    const [scope, value] = q.functionId === undefined ? ["account_id", q.accountId] : ["function_id", q.functionId];
    const below = q.before === undefined ? [] : [stored(q.before)];
    return this.sql
      .exec<{ id: Stored; issued_at: number; progress: number; status: number }>(
        `select id, issued_at, progress, status from shard_record where ${scope} = ? and account_id = ?${below.length ? " and id < ?" : ""} order by id desc limit ?`,
        stored(value),
        stored(q.accountId),
        ...below,
        q.limit,
      )
      .toArray()
      .map((r) => ({ id: unstored(r.id), issuedAt: Number(r.issued_at), progress: Number(r.progress), status: Number(r.status) }));
  }

  /** When the record waiting longest for the archive finished. */
  oldestUnarchived(): number | undefined {
    const r = this.sql.exec<{ at: number | null }>(`select min(finished_at) as at from shard_record where ${UNARCHIVED}`).one();
    return r.at == null ? undefined : Number(r.at);
  }

  /** The records waiting longest for the archive, whole, oldest finish first. */
  unarchived(limit: number): TaskRow[] {
    return this.sql.exec(`select * from shard_record where ${UNARCHIVED} order by finished_at limit ?`, limit).toArray().map((r) => decodeRecord(r).row);
  }

  /** These records are in chunk `n`: from now on they keep only what a record keeps inline (`cutPayloadsSql`). */
  archived(ids: Iterable<string>, n: number): void {
    for (const id of ids) {
      this.sql.exec(ARCHIVED, n, stored(id));
      this.waiting = Math.max(0, this.waiting - 1);
    }
  }

  /** Archived records whose rows D1 was not yet asked to let go, in id order. */
  unreleased(limit: number): Released[] {
    type Stored = ArrayBuffer | string;
    return this.sql
      .exec<{ id: Stored; account_id: Stored; purged_at: number | null }>(`select id, account_id, purged_at from shard_record where ${UNRELEASED} order by id limit ?`, limit)
      .toArray()
      .map((r) => ({ id: unstored(r.id), accountId: unstored(r.account_id), purged: r.purged_at != null }));
  }

  /** D1 let these records' rows go (or keeps them for its own move): the records may leave at the window's end. */
  released(ids: Iterable<string>): void {
    for (const id of ids) this.sql.exec("update shard_record set released = 1 where id = ?", stored(id));
  }

  /**
   * Drops records that finished before the window. Ids sort by issue time, so only records issued
   * before the window's start can be due: the look is a range of the primary key, and what it
   * passes over is the few issued before the window that finished inside it. A record waits for
   * the archive and its release first (a rowless one, released from the start, the archive alone; one never archived that left a payload out was kept before
   * the archive was built: D1 holds it whole, and its own move archives it).
   */
  prune(now: number): number {
    this.lastPrune = now;
    const cutoff = now - this.windowMs;
    return this.sql.exec(
      `delete from shard_record where id in (select id from shard_record where id < ? and finished_at < ? and ((released = 1 and chunk is not null) or (chunk is null and far != 0)) limit ${PRUNE_ROWS})`,
      idFloorAt(cutoff).buffer,
      cutoff,
    ).rowsWritten;
  }

  /** The issue of every record kept (issue-counts.ts counts them once, when the shard first counts issues). */
  *issues(): Generator<Issue & { id: string }> {
    type Stored = ArrayBuffer | string;
    for (const r of this.sql.exec<{ id: Stored; account_id: Stored; function_id: Stored; endpoint_id: Stored | null; issued_at: number }>(
      "select id, account_id, function_id, endpoint_id, issued_at from shard_record",
    ))
      yield { id: unstored(r.id), accountId: unstored(r.account_id), functionId: unstored(r.function_id), endpointId: unstored(r.endpoint_id), issuedAt: Number(r.issued_at) };
  }

  /** How many records the shard holds (tests and the benchmark). */
  count(): number {
    return Number(this.sql.exec("select count(*) as n from shard_record").one().n);
  }
}
