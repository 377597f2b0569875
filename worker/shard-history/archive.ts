import type { TaskRow } from "../db/rows.js";
import { ChunkPages, type ArchivedQuery, type IndexedChunk } from "../task-history/chunk-pages.js";
import { idTime } from "../lib/ids.js";
import { HOUR_MS } from "../lib/time.js";
import { checkReadBack, putChunk, readChunk } from "../task-history/chunk.js";
import { earliestUnpurged } from "../task-history/move-commit.js";
import { deletePayloadObjects, expiredRecords, purgedRecord } from "../task-history/record-purge.js";
import { ArchiveIndex, type ShardChunk } from "./archive-index.js";
import type { FinishedRecords } from "./finished-records.js";
import type { Released } from "./release.js";

/** A record waits at most about this long after its finish for the archive (less once a full chunk waits). */
export const ROLL_MS = 10 * 60_000;
/** Records a chunk at most; a roll reads and writes one chunk's worth at a time. */
export const CHUNK_RECORDS = 2_000;
/**
 * Pages of `CHUNK_RECORDS` one roll takes at most: the roll is the shard's own CPU (~0.13 ms a
 * record, docs/benchmarks.md), so a turn of its alarm spends a fraction of a second on it, and what
 * is left goes at the next turn, right after, with the shard's other work in between.
 */
const ROLL_PAGES = 2;
/** Records a turn asks D1 to let go at most, in batches of `RELEASE_BATCH`. */
const RELEASE_RECORDS = 4_000;
const RELEASE_BATCH = 1_000;
/** Chunks one retention pass rewrites at most. */
const PURGE_CHUNKS = 20;
/** After a roll or a purge failed (R2 out of reach), the next try waits this long. */
const RETRY_MS = 60_000;

/** A task's hour of issue, hours since the epoch: its id says it. */
export const issueHourOf = (id: string): number => Math.floor((idTime(id) ?? 0) / HOUR_MS);

const hourText = (hour: number) => new Date(hour * HOUR_MS).toISOString().slice(0, 13);

/** Scopes a chunk is found under: each account and function it holds records of. */
const scopesOf = (rows: TaskRow[]) => new Set(rows.flatMap((r) => [r.accountId, r.functionId]));

/**
 * The shard's archive of its finished records (step 5 of the shard-resident history,
 * docs/dispatch.md): gzip NDJSON chunks in R2, `shard-history/<shard>/<hour of issue>/…`, in the
 * format of D1's archive (task-history/chunk.ts), indexed in the shard's own SQLite with sidecars
 * naming each chunk's accounts and functions (archive-index.ts). A record goes in once it has
 * waited `ROLL_MS` since its finish, whole (every payload D1 keeps inline); the kept record then
 * keeps only what a record keeps inline, and leaves at the end of the window as before.
 *
 * Once a record is in a chunk, D1 is asked to let its row go (`releaseArchived`, release.ts), and
 * reads find it here after D1 and D1's own archive (task-life/archived-reads.ts). Retention here
 * keeps D1's rules, its payloads' R2 objects included: for a released record this is the only copy.
 */
export class ShardArchive {
  readonly index: ArchiveIndex;
  private retryAt = 0;
  /** The archive's work one piece at a time: two rolls at once would put the same records in two chunks. */
  private turn: Promise<unknown> = Promise.resolve();
  /** What the shard keeps of the chunks it read, for a list's next page or a page read again. */
  private readonly read = new ChunkPages();

  constructor(
    sql: SqlStorage,
    private readonly transaction: <T>(fn: () => T) => T,
    private readonly bucket: R2Bucket,
    /** This shard's part of the bucket's keys. */
    private readonly prefix: string,
    private readonly records: FinishedRecords,
    private readonly retentionMs: number,
    /** Takes D1's rows of archived records out of D1 (release.ts). */
    private readonly release: (records: Released[]) => Promise<void>,
  ) {
    this.index = new ArchiveIndex(sql);
  }

  private alone<T>(work: () => Promise<T>): Promise<T> {
    const next = this.turn.then(work, work);
    this.turn = next.catch(() => undefined);
    return next;
  }

  keyOf(c: Pick<ShardChunk, "hour" | "firstId" | "lastId" | "records">): string {
    return `shard-history/${this.prefix}/${hourText(c.hour)}/${c.firstId}-${c.lastId}-${c.records}.ndjson.gz`;
  }

  /** When the shard's alarm should call `run` next: a roll due, a chunk due for retention, or a cut-short roll to clear. */
  nextAt(): number | undefined {
    const due = Math.min(
      this.index.unwritten().length || this.records.waiting >= CHUNK_RECORDS || this.records.unreleased(1).length ? Date.now() : Infinity,
      (this.records.oldestUnarchived() ?? Infinity) + ROLL_MS,
      (this.index.nextPurge() ?? Infinity) + this.retentionMs,
    );
    return due === Infinity ? undefined : Math.max(due, this.retryAt);
  }

  /** What is due at `now`: chunks a cut-short roll left, the roll, the release, retention. Fails (and waits a minute) if R2 or D1 does. */
  async run(now: number): Promise<{ archived: number; released: number; purged: number }> {
    if (now < this.retryAt) return { archived: 0, released: 0, purged: 0 };
    try {
      return await this.alone(async () => {
        await this.clearUnwritten();
        const archived = await this.rollNow(now);
        const released = await this.releaseNow();
        const purged = await this.purgeNow(now);
        return { archived, released, purged };
      });
    } catch (e) {
      this.retryAt = now + RETRY_MS;
      throw e;
    }
  }

  /**
   * Objects a roll put and never indexed (its instance went): deleted, and their records stay
   * waiting, so they go into a chunk again. An object is indexed only once read back whole.
   */
  private async clearUnwritten(): Promise<void> {
    for (const c of this.index.unwritten()) {
      await this.bucket.delete(this.keyOf(c));
      this.index.drop(c.n);
    }
  }

  /**
   * Archives the records waiting longest, once a full chunk of them waits or the oldest has waited
   * `ROLL_MS`: a chunk an hour of issue, `CHUNK_RECORDS` at most, `ROLL_PAGES` pages of them.
   * Returns the records archived.
   */
  roll(now: number): Promise<number> {
    return this.alone(() => this.rollNow(now));
  }

  private async rollNow(now: number): Promise<number> {
    let archived = 0;
    for (let pages = 0; pages < ROLL_PAGES; pages++) {
      const oldest = this.records.oldestUnarchived();
      // The count of waiting records is kept in memory, and a record kept again counts twice: what
      // a look finds corrects it, so that a count past the truth never keeps the alarm ringing.
      if (oldest === undefined) this.records.waiting = 0;
      if (oldest === undefined || (oldest > now - ROLL_MS && this.records.waiting < CHUNK_RECORDS)) break;
      const page = this.records.unarchived(CHUNK_RECORDS);
      if (page.length < CHUNK_RECORDS) this.records.waiting = page.length;
      const hours = new Map<number, TaskRow[]>();
      for (const r of page) {
        const hour = issueHourOf(r.id);
        if (!hours.has(hour)) hours.set(hour, []);
        hours.get(hour)!.push(r);
      }
      for (const [hour, rows] of hours) {
        await this.write(hour, rows.sort((a, b) => (a.id < b.id ? -1 : 1)));
        archived += rows.length;
      }
      if (page.length < CHUNK_RECORDS) break;
    }
    return archived;
  }

  private async write(hour: number, rows: TaskRow[]): Promise<void> {
    const chunk = { hour, firstId: rows[0]!.id, lastId: rows.at(-1)!.id, records: rows.length };
    const key = this.keyOf(chunk);
    const n = this.index.begin(hour, chunk.firstId, chunk.lastId, chunk.records);
    const put = await putChunk(this.bucket, key, rows);
    // Read back whole before anything points at it: the kept records lose their larger payloads next.
    await checkReadBack(this.bucket, key, put.segments, rows);
    this.transaction(() => {
      this.index.written(n, { ...put, purgeDue: earliestUnpurged(rows) }, chunk.lastId, scopesOf(rows));
      this.records.archived(
        rows.map((r) => r.id),
        n,
      );
    });
  }

  /**
   * Asks D1 to let go of its rows of archived records (release.ts), oldest ids first: from then on
   * a read finds them in this archive. A batch that fails leaves its records unreleased, for the next turn.
   */
  releaseArchived(): Promise<number> {
    return this.alone(() => this.releaseNow());
  }

  private async releaseNow(): Promise<number> {
    let released = 0;
    while (released < RELEASE_RECORDS) {
      const batch = this.records.unreleased(RELEASE_BATCH);
      if (!batch.length) break;
      await this.release(batch);
      this.records.released(batch.map((r) => r.id));
      released += batch.length;
    }
    return released;
  }

  /**
   * Retention, by the rules of D1's records: a record finished before the period loses its input,
   * result and log (every R2 object a task can have, then its inline copies as its chunk is
   * rewritten) and is marked purged. R2 first, the index last: a pass cut short leaves the chunk due.
   */
  purge(now: number): Promise<number> {
    return this.alone(() => this.purgeNow(now));
  }

  private async purgeNow(now: number): Promise<number> {
    const cutoff = now - this.retentionMs;
    let purged = 0;
    for (const chunk of this.index.purgeDue(cutoff, PURGE_CHUNKS)) {
      const rows = await readChunk(this.bucket, this.keyOf(chunk), chunk.segments);
      const expired = expiredRecords(rows, cutoff);
      await deletePayloadObjects(this.bucket, expired);
      const ids = new Set(expired.map((r) => r.id));
      const kept = rows.map((r) => (ids.has(r.id) ? purgedRecord(r, now) : r));
      const put = await putChunk(this.bucket, this.keyOf(chunk), kept);
      this.index.rewritten(chunk.n, { ...put, purgeDue: earliestUnpurged(kept) });
      purged += ids.size;
    }
    return purged;
  }

  /** An archived record by id, if the account's (any account's without one): one ranged read of the segment that would hold it. */
  async find(taskId: string, accountId?: string): Promise<TaskRow | undefined> {
    for (const chunk of this.index.holding(taskId, issueHourOf(taskId))) {
      const segment = await this.read.segmentHolding(this.bucket, this.indexed(chunk), taskId);
      const found = segment.find((r) => r.id === taskId);
      if (found) return accountId === undefined || found.accountId === accountId ? found : undefined;
    }
    return undefined;
  }

  /** A page of an account's or a function's archived records, newest id first (ChunkPages.page): the chunks its index names, newest first. */
  page(q: ArchivedQuery): Promise<TaskRow[]> {
    return this.read.page(this.bucket, this.chunksOf(q), q);
  }

  private *chunksOf(q: ArchivedQuery): Generator<IndexedChunk> {
    for (const chunk of this.index.newestOf(q.functionId ?? q.accountId, q.before, q.before === undefined ? undefined : issueHourOf(q.before))) yield this.indexed(chunk);
  }

  /** A chunk as the reads name it: among those kept read, its key names its records, and retention's rewrite changes its `purgeDue`. */
  private indexed(chunk: ShardChunk): IndexedChunk {
    const key = this.keyOf(chunk);
    return { key, segments: chunk.segments, lastId: chunk.lastId, name: `${key}|${chunk.purgeDue ?? ""}` };
  }
}
