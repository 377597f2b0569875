import { decodeSegments, encodeSegments, type Segments } from "../db/archive-segments.js";
import { HOUR_MS } from "../lib/time.js";
import { idFloorAt, stored, unstored } from "./id-bytes.js";

/** A chunk of the shard's archive: its records' ids all fall in one hour of issue (`hour`, hours since the epoch). */
export interface ShardChunk {
  n: number;
  hour: number;
  firstId: string;
  lastId: string;
  records: number;
  segments: Segments;
  /** The earliest unpurged finish among its records; retention's rewrite changes it. */
  purgeDue: number | null;
}

// Ids are packed but for text of another shape (ids.ts: made before `newId`), kept as text.
type ChunkRow = { n: number; hour: number; first_id: ArrayBuffer | string; last_id: ArrayBuffer | string; records: number; segments: string; purge_due: number | null };

/** Chunks a page of a scope's walk reads from storage at a time. */
const WALK_PAGE = 16;

function chunkOf(r: ChunkRow): ShardChunk {
  const segments = decodeSegments(r.segments);
  if (!segments) throw new Error(`the shard's archive index names segments that are not segments (chunk ${r.n})`);
  return { n: Number(r.n), hour: Number(r.hour), firstId: unstored(r.first_id), lastId: unstored(r.last_id), records: Number(r.records), segments, purgeDue: r.purge_due == null ? null : Number(r.purge_due) };
}

const packed = stored;

/**
 * Where a shard's archived records are (docs/dispatch.md, "Step 5"): a row a chunk, and a row for
 * each account and function a chunk holds (its sidecar), all in the shard's own SQLite, so an
 * archived record costs D1 nothing. A chunk is first written as not yet written (`written = 0`)
 * before its object is put: one an interrupted roll left behind is known, and its object deleted.
 */
export class ArchiveIndex {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`create table if not exists shard_chunk (
      n integer primary key, hour integer not null, first_id blob not null, last_id blob not null, records integer not null,
      bytes integer not null default 0, segments text not null default '', purge_due integer, written integer not null default 0)`);
    // A read by id looks in its hour's chunks; retention finds the chunks due.
    sql.exec("create index if not exists shard_chunk_hour on shard_chunk (hour, last_id)");
    sql.exec("create index if not exists shard_chunk_purge on shard_chunk (purge_due) where purge_due is not null");
    sql.exec("create index if not exists shard_chunk_unwritten on shard_chunk (n) where written = 0");
    // The sidecars: an account's or a function's chunks, newest last id first, for their lists.
    sql.exec("create table if not exists shard_chunk_member (scope blob not null, last_id blob not null, n integer not null, primary key (scope, last_id, n)) without rowid");
  }

  /** Notes a chunk about to be put; its number. */
  begin(hour: number, firstId: string, lastId: string, records: number): number {
    return Number(
      this.sql.exec("insert into shard_chunk (hour, first_id, last_id, records) values (?, ?, ?, ?) returning n", hour, packed(firstId), packed(lastId), records).one().n,
    );
  }

  /** The chunk's object is in R2 and read back: it is found from now on, under each of its scopes (accounts and functions). */
  written(n: number, put: { bytes: number; segments: Segments; purgeDue: number | null }, lastId: string, scopes: Iterable<string>): void {
    this.sql.exec("update shard_chunk set written = 1, bytes = ?, segments = ?, purge_due = ? where n = ?", put.bytes, encodeSegments(put.segments), put.purgeDue, n);
    for (const scope of scopes) this.sql.exec("insert or ignore into shard_chunk_member (scope, last_id, n) values (?, ?, ?)", stored(scope), packed(lastId), n);
  }

  /** Chunks noted and never written (their roll was cut short). */
  unwritten(): ShardChunk[] {
    return this.sql.exec<ChunkRow>("select * from shard_chunk where written = 0").toArray().map(chunkOf);
  }

  drop(n: number): void {
    this.sql.exec("delete from shard_chunk_member where n = ?", n);
    this.sql.exec("delete from shard_chunk where n = ?", n);
  }

  /** The written chunks whose id range holds `id` (one, but for a roll that met the same hour twice). */
  holding(id: string, hour: number): ShardChunk[] {
    return this.sql
      .exec<ChunkRow>("select * from shard_chunk where hour = ? and last_id >= ? and first_id <= ? and written = 1 order by last_id", hour, packed(id), packed(id))
      .toArray()
      .map(chunkOf);
  }

  /**
   * A scope's chunks that may hold ids below `before` (all of them without it), newest last id
   * first: those of `before`'s hour that end at or after it but begin below it, then the ones that
   * end below it. A chunk's ids share an hour, so the first part reads that hour only.
   */
  *newestOf(scope: string, before: string | undefined, beforeHour: number | undefined): Generator<ShardChunk> {
    const key = stored(scope);
    const join = "select c.* from shard_chunk_member m join shard_chunk c on c.n = m.n where m.scope = ? and c.written = 1";
    if (before !== undefined && beforeHour !== undefined) {
      yield* this.sql
        .exec<ChunkRow>(`${join} and m.last_id >= ? and m.last_id < ? and c.first_id < ? order by m.last_id desc, m.n desc`, key, packed(before), idFloorAt((beforeHour + 1) * HOUR_MS).buffer, packed(before))
        .toArray()
        .map(chunkOf);
    }
    let cursor: [lastId: ArrayBuffer | string, n: number] | undefined;
    for (;;) {
      const [cond, args] = cursor
        ? [" and (m.last_id < ? or (m.last_id = ? and m.n < ?))", [cursor[0], cursor[0], cursor[1]]]
        : before !== undefined
          ? [" and m.last_id < ?", [packed(before)]]
          : ["", []];
      const page = this.sql.exec<ChunkRow>(`${join}${cond} order by m.last_id desc, m.n desc limit ${WALK_PAGE}`, key, ...args).toArray();
      for (const r of page) yield chunkOf(r);
      if (page.length < WALK_PAGE) return;
      cursor = [page.at(-1)!.last_id, Number(page.at(-1)!.n)];
    }
  }

  /** Written chunks holding a record unpurged since before `cutoff`, most overdue first (only a written chunk has a `purge_due`). */
  purgeDue(cutoff: number, limit: number): ShardChunk[] {
    return this.sql
      .exec<ChunkRow>("select * from shard_chunk where purge_due is not null and purge_due < ? order by purge_due limit ?", cutoff, limit)
      .toArray()
      .map(chunkOf);
  }

  /** A chunk rewritten by retention: its new bytes and segments, and when it is next due. */
  rewritten(n: number, put: { bytes: number; segments: Segments; purgeDue: number | null }): void {
    this.sql.exec("update shard_chunk set bytes = ?, segments = ?, purge_due = ? where n = ?", put.bytes, encodeSegments(put.segments), put.purgeDue, n);
  }

  /** The earliest unpurged finish of any chunk (retention is due once it is past the retention period). */
  nextPurge(): number | undefined {
    const r = this.sql.exec<{ due: number | null }>("select min(purge_due) as due from shard_chunk where purge_due is not null").one();
    return r.due == null ? undefined : Number(r.due);
  }

  /** What the index holds (tests and the benchmark). */
  count(): { chunks: number; members: number } {
    const chunks = Number(this.sql.exec("select count(*) as n from shard_chunk").one().n);
    const members = Number(this.sql.exec("select count(*) as n from shard_chunk_member").one().n);
    return { chunks, members };
  }
}
