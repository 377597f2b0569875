import { and, asc, desc, eq, gte, lt, lte } from "drizzle-orm";
import type { Db } from "../db/client.js";
import type { TaskRow } from "../db/rows.js";
import { taskArchive, taskArchiveFunctions, tasks } from "../db/schema.js";
import { ChunkPages, type ArchivedQuery, type IndexedChunk } from "./chunk-pages.js";
import { chunkKey, nameFields, type NamedChunk } from "./chunk-names.js";

/**
 * Reads of archived task records (archiver.ts moved them): the chunks the index names, read from
 * R2. A reader asks D1's `tasks` and the index in one batch (or D1 first and the index after), so a
 * record moved meanwhile is found in one place or the other: the move writes the index and deletes
 * the rows in one batch.
 * An archived record answers in the shape a live one does; only its latency tells where it was.
 */

type ChunkRow = NamedChunk & Pick<typeof taskArchive.$inferSelect, "purgeDue" | "segments">;
const chunkFields = { ...nameFields, purgeDue: taskArchive.purgeDue, segments: taskArchive.segments };

/**
 * What this isolate keeps of the chunks it read (ChunkPages): paging through a list reads the same
 * chunk again. A chunk is immutable but for retention's rewrite, which changes its `purgeDue`, part
 * of its name here, so a rewritten chunk is never served stale.
 */
const read = new ChunkPages();

const indexed = (c: ChunkRow): IndexedChunk => ({ key: chunkKey(c), segments: c.segments, lastId: c.lastId, name: `${chunkKey(c)}|${c.purgeDue ?? ""}` });

/**
 * The account's chunks whose id range holds `id` (one, but for a straggler's), from the covering
 * index alone. A query to batch with D1's own read of the id: one round trip finds the record in
 * either place, and the batch's single view of D1 sees a moving record in exactly one of them.
 */
export const chunksHolding = (db: Db, accountId: string, id: string) =>
  db
    .select(chunkFields)
    .from(taskArchive)
    .where(and(eq(taskArchive.accountId, accountId), gte(taskArchive.lastId, id), lte(taskArchive.firstId, id)))
    .orderBy(asc(taskArchive.lastId))
    .limit(8);

/** The record of `id` in these chunks (chunksHolding's answer), if the account's. */
export async function archivedIn(bucket: R2Bucket, chunks: ChunkRow[], accountId: string, id: string): Promise<TaskRow | undefined> {
  for (const c of chunks) {
    // The one segment that would hold `id`: a get reads tens of KiB, not the whole chunk.
    const row = (await read.segmentHolding(bucket, indexed(c), id)).find((r) => r.id === id);
    if (row?.accountId === accountId) return row;
  }
  return undefined;
}

/**
 * The account's task as recorded: D1's row, else the archive's record, both asked in one batch,
 * whose one view of D1 holds a moving record in exactly one place. For every read by id past the
 * shard's copy: the record may have left D1 an hour after its finish (window.ts).
 */
export async function recordedTask(db: Db, bucket: R2Bucket, accountId: string, id: string): Promise<TaskRow | undefined> {
  const [[row], chunks] = await db.batch([db.select().from(tasks).where(eq(tasks.id, id)), chunksHolding(db, accountId, id)]);
  return row ?? (await archivedIn(bucket, chunks, accountId, id));
}

/** One of the account's archived tasks, or undefined (for a caller that already looked in D1). */
export async function archivedTask(db: Db, bucket: R2Bucket, accountId: string, id: string): Promise<TaskRow | undefined> {
  return archivedIn(bucket, await chunksHolding(db, accountId, id), accountId, id);
}

const CHUNKS_A_QUERY = 16;

/**
 * The newest chunks of a page's query, newest last id first, `CHUNKS_A_QUERY` of them: a query to
 * batch with D1's own page (as chunksHolding), which archivedPage continues from when it needs more.
 * An account's list walks its index (account, last id); a function's walks the function's own
 * (function, last id), so it reads only chunks that hold the function, however rare it is.
 */
export const pageChunks = (db: Db, q: Omit<ArchivedQuery, "above" | "limit">, below?: string) => {
  const range = q.functionId ? taskArchiveFunctions : taskArchive;
  const where = and(
    eq(range.accountId, q.accountId),
    q.functionId ? eq(taskArchiveFunctions.functionId, q.functionId) : undefined,
    q.before ? lt(taskArchive.firstId, q.before) : undefined,
    below ? lt(range.lastId, below) : undefined,
  );
  const chunks = q.functionId
    ? db
        .select(chunkFields)
        .from(taskArchiveFunctions)
        .innerJoin(taskArchive, and(eq(taskArchive.accountId, taskArchiveFunctions.accountId), eq(taskArchive.lastId, taskArchiveFunctions.lastId)))
    : db.select(chunkFields).from(taskArchive);
  return chunks.where(where).orderBy(desc(range.lastId)).limit(CHUNKS_A_QUERY);
};

/**
 * The newest `limit` archived tasks of the query, newest first (ChunkPages.page), from `first`
 * (pageChunks' answer) on: the chunks are asked of the index `CHUNKS_A_QUERY` at a time, and only
 * as far as the page reads them, so a page costs the chunks it draws from, whatever the history's size.
 */
export function archivedPage(db: Db, bucket: R2Bucket, q: ArchivedQuery, first: ChunkRow[]): Promise<TaskRow[]> {
  async function* chunks(): AsyncGenerator<IndexedChunk> {
    for (let batch = first; ; batch = await pageChunks(db, q, batch.at(-1)!.lastId)) {
      yield* batch.map(indexed);
      if (batch.length < CHUNKS_A_QUERY) return;
    }
  }
  return read.page(bucket, chunks(), q);
}

/** Whether the account has archived tasks of the function (a task list may filter by a deleted function whose records remain). */
export async function hasArchivedTasks(db: Db, accountId: string, functionId: string): Promise<boolean> {
  const [row] = await db
    .select({ lastId: taskArchiveFunctions.lastId })
    .from(taskArchiveFunctions)
    .where(and(eq(taskArchiveFunctions.functionId, functionId), eq(taskArchiveFunctions.accountId, accountId)))
    .limit(1);
  return !!row;
}
