import { and, eq, sql, type SQL } from "drizzle-orm";
import { taskArchive } from "../db/schema.js";
import { historyChunkKey } from "../lib/storage-keys.js";

/**
 * A chunk's R2 name from its index row: the name its account, ids and count make
 * (historyChunkKey), or the one the row keeps for a chunk named before the count was part of names.
 * The row keeps no name otherwise (migration 0031), which saves a busy record ~0.3 B of D1.
 */
export interface NamedChunk {
  accountId: string;
  firstId: string;
  lastId: string;
  records: number;
  legacyKey: string | null;
}

export const chunkKey = (c: NamedChunk): string => c.legacyKey ?? historyChunkKey(c.accountId, c.firstId, c.lastId, c.records);

/** The columns chunkKey needs, to select with a chunk's row. */
export const nameFields = {
  accountId: taskArchive.accountId,
  firstId: taskArchive.firstId,
  lastId: taskArchive.lastId,
  records: taskArchive.records,
  legacyKey: taskArchive.legacyKey,
};

/** The index row of one chunk, through the account's index (account, last id, first id). */
export const chunkRow = (c: Pick<NamedChunk, "accountId" | "firstId" | "lastId">): SQL =>
  and(eq(taskArchive.accountId, c.accountId), eq(taskArchive.lastId, c.lastId), eq(taskArchive.firstId, c.firstId))!;

/** chunkKey in SQL, for the row aliased `a` (a statement that matches R2's listing against the index). */
export const chunkKeySql = sql.raw(`coalesce(a.key, 'history/' || a.account_id || '/' || a.first_id || '-' || a.last_id || '-' || a.records || '.ndjson.gz')`);
