import { and, asc, eq, lt, isNotNull } from "drizzle-orm";
import type { Db } from "../db/client.js";
import type { TaskRow } from "../db/rows.js";
import { taskArchive } from "../db/schema.js";
import { taskInputKey, taskLogKey, taskResultKey } from "../lib/storage-keys.js";
import { putChunk, readChunk } from "./chunk.js";
import { earliestUnpurged } from "./archiver.js";
import { QueryBudget } from "../db/query-budget.js";

/**
 * Chunks a run: each is a read and a write of R2 and one D1 update; the next hourly run goes on.
 * 450 a run keep pace with the move's 450 queries (archiver.ts: two chunks a read and a batch) in the
 * archive sweep's 900. A reader between a chunk's rewrite and its index row's update reads it by the
 * segments the object carries (chunk.ts), not the row's stale offsets.
 */
const MAX_CHUNKS = 450;
/** R2 deletes at most 1,000 keys a call. */
const KEYS_A_CALL = 999;

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
  const budget = sweep.part(1 + MAX_CHUNKS);
  if (!budget.take()) return 0;
  const due = await db
    .select({ key: taskArchive.key, segments: taskArchive.segments })
    .from(taskArchive)
    .where(and(isNotNull(taskArchive.purgeDue), lt(taskArchive.purgeDue, cutoff)))
    .orderBy(asc(taskArchive.purgeDue))
    .limit(Math.min(MAX_CHUNKS, budget.left()));
  let purged = 0;
  for (const { key, segments } of due) {
    // Taken before R2 is touched: a chunk's purge ends with its index row's update.
    if (!budget.take()) break;
    const rows = await readChunk(bucket, key, segments);
    const expired = rows.filter((r) => r.purgedAt == null && r.finishedAt != null && r.finishedAt < cutoff);
    const keys = expired.flatMap((t) => [taskInputKey(t.accountId, t.id), taskResultKey(t.accountId, t.id), taskLogKey(t.accountId, t.id)]);
    for (let i = 0; i < keys.length; i += KEYS_A_CALL) await bucket.delete(keys.slice(i, i + KEYS_A_CALL));
    const ids = new Set(expired.map((r) => r.id));
    const kept = rows.map((r): TaskRow => (ids.has(r.id) ? { ...r, input: null, inputKey: null, resultHeaders: null, resultBody: null, resultKey: null, log: null, logKey: null, purgedAt: now } : r));
    const written = await putChunk(bucket, key, kept);
    await db.update(taskArchive).set({ purgeDue: earliestUnpurged(kept), bytes: written.bytes, segments: written.segments }).where(eq(taskArchive.key, key));
    purged += expired.length;
  }
  return purged;
}
