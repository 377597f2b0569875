import { and, asc, lt, isNotNull } from "drizzle-orm";
import { chunks, type Db } from "../db/client.js";
import type { TaskRow } from "../db/rows.js";
import { taskArchive } from "../db/schema.js";
import { putChunk, readChunk } from "./chunk.js";
import { earliestUnpurged } from "./move-commit.js";
import { chunkKey, chunkRow, nameFields } from "./chunk-names.js";
import { QueryBudget } from "../db/query-budget.js";
import { deletePayloadObjects, expiredRecords, purgedRecord } from "./record-purge.js";

/**
 * Chunks a run at most: each is a read and a write of R2 and an R2 delete call (~2,550 subrequests
 * a run, of the 10,000 Workers Paid allows). Their index rows are updated CHUNKS_AN_UPDATE to one D1
 * batch, so the part takes 35 queries and leaves the move (archiver.ts) the rest of the archive
 * sweep's 900: it was one update a chunk, 451 queries. 850 a run keep pace with what the move
 * archives (850 chunks a run) 30 days later. A reader between a chunk's rewrite and its index row's
 * update reads it by the segments the object carries (chunk.ts), not the row's stale offsets, so the
 * wider gap a batch leaves costs nothing.
 */
const MAX_CHUNKS = 850;
const CHUNKS_AN_UPDATE = 25;
/** D1 queries a run makes at most: the look, and one batch of updates per CHUNKS_AN_UPDATE chunks. */
export const RETENTION_MAX_QUERIES = 1 + Math.ceil(MAX_CHUNKS / CHUNKS_AN_UPDATE);

/**
 * Retention of archived records, by the rules of live ones (services/retention.ts): a task that
 * finished more than `keepMs` before `now` loses its input, result and log — every R2 key a task
 * can have deleted, its inline copies cleared from the chunk — and is marked purged; the record
 * stays. Chunks are found through the index's `purge_due` (the earliest unpurged finish in each), so
 * a run reads only chunks with work. R2 goes first, the chunk after, the index last: a run cut short
 * leaves the chunk due, and the next run does it again (deleting a deleted key is no error).
 * Returns how many records were purged.
 */
export async function purgeArchive(db: Db, bucket: R2Bucket, keepMs: number, now: number, sweep = new QueryBudget(Infinity)): Promise<number> {
  const cutoff = now - keepMs;
  const budget = sweep.part(RETENTION_MAX_QUERIES);
  if (!budget.take()) return 0;
  const due = await db
    .select({ ...nameFields, segments: taskArchive.segments })
    .from(taskArchive)
    .where(and(isNotNull(taskArchive.purgeDue), lt(taskArchive.purgeDue, cutoff)))
    .orderBy(asc(taskArchive.purgeDue))
    .limit(Math.min(MAX_CHUNKS, budget.left() * CHUNKS_AN_UPDATE));
  let purged = 0;
  for (const group of chunks(due, CHUNKS_AN_UPDATE)) {
    // Taken before R2 is touched: a group's purge ends with its index rows' update.
    if (!budget.take()) break;
    const updates = [];
    for (const chunk of group) {
      const key = chunkKey(chunk);
      const rows = await readChunk(bucket, key, chunk.segments);
      const expired = expiredRecords(rows, cutoff);
      await deletePayloadObjects(bucket, expired);
      const ids = new Set(expired.map((r) => r.id));
      const kept = rows.map((r): TaskRow => (ids.has(r.id) ? purgedRecord(r, now) : r));
      const written = await putChunk(bucket, key, kept);
      updates.push(db.update(taskArchive).set({ purgeDue: earliestUnpurged(kept), bytes: written.bytes, segments: written.segments }).where(chunkRow(chunk)));
      purged += expired.length;
    }
    await db.batch(updates as [(typeof updates)[number], ...typeof updates]);
  }
  return purged;
}
