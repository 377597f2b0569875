import { and, asc, desc, eq, gt, gte, lt, lte, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client.js";
import type { TaskRow } from "../db/rows.js";
import { taskArchive } from "../db/schema.js";
import { readChunk } from "./chunk.js";

/**
 * Reads of archived task records (archiver.ts moved them): the chunks the index names, read from
 * R2. Every reader asks D1's `tasks` first and the archive after, so a record moved in between is
 * found in the second place it looks (the move writes the index and deletes the rows in one batch).
 * An archived record answers in the shape a live one does; only its latency tells where it was.
 */

type ChunkRow = Pick<typeof taskArchive.$inferSelect, "key" | "firstId" | "lastId" | "purgeDue">;
const chunkFields = { key: taskArchive.key, firstId: taskArchive.firstId, lastId: taskArchive.lastId, purgeDue: taskArchive.purgeDue };

/**
 * Decoded chunks this isolate read last: paging through a list reads the same chunk again, and a
 * chunk is immutable but for retention's rewrite, which changes its `purgeDue` (part of the name here).
 */
const recent = new Map<string, TaskRow[]>();
const RECENT_CHUNKS = 8;

async function records(bucket: R2Bucket, c: ChunkRow): Promise<TaskRow[]> {
  const name = `${c.key}|${c.purgeDue ?? ""}`;
  const hit = recent.get(name);
  if (hit) {
    recent.delete(name);
    recent.set(name, hit);
    return hit;
  }
  const rows = await readChunk(bucket, c.key);
  recent.set(name, rows);
  if (recent.size > RECENT_CHUNKS) recent.delete(recent.keys().next().value!);
  return rows;
}

/** One of the account's archived tasks, or undefined: the chunks whose id range holds it (one, but for a straggler's). */
export async function archivedTask(db: Db, bucket: R2Bucket, accountId: string, id: string): Promise<TaskRow | undefined> {
  const chunks = await db
    .select(chunkFields)
    .from(taskArchive)
    .where(and(eq(taskArchive.accountId, accountId), gte(taskArchive.lastId, id), lte(taskArchive.firstId, id)))
    .orderBy(asc(taskArchive.lastId))
    .limit(8);
  for (const c of chunks) {
    const row = (await records(bucket, c)).find((r) => r.id === id);
    if (row?.accountId === accountId) return row;
  }
  return undefined;
}

export interface ArchivedQuery {
  accountId: string;
  functionId?: string | undefined;
  /** Ids below this only (the list's `before`). */
  before?: string | undefined;
  /** Ids above this only: what a page of newer records already decided needs nothing older. */
  above?: string | undefined;
  limit: number;
}

const hasFunction = (functionId: string): SQL => sql`exists (select 1 from json_each(${taskArchive.functions}) where value = ${functionId})`;

/**
 * The newest `limit` archived tasks of the query, newest first. Chunks are visited by their last id,
 * newest first; once the page is full, a chunk whose last id is below the page's oldest cannot add
 * to it, and the walk stops there: a page costs the chunks it draws from, whatever the history's size.
 */
export async function archivedPage(db: Db, bucket: R2Bucket, q: ArchivedQuery): Promise<TaskRow[]> {
  const BATCH = 16;
  let page: TaskRow[] = [];
  let cursor: string | undefined;
  for (;;) {
    const chunks = await db
      .select(chunkFields)
      .from(taskArchive)
      .where(
        and(
          eq(taskArchive.accountId, q.accountId),
          q.before ? lt(taskArchive.firstId, q.before) : undefined,
          q.above ? gt(taskArchive.lastId, q.above) : undefined,
          cursor ? lt(taskArchive.lastId, cursor) : undefined,
          q.functionId ? hasFunction(q.functionId) : undefined,
        ),
      )
      .orderBy(desc(taskArchive.lastId))
      .limit(BATCH);
    for (const c of chunks) {
      if (page.length >= q.limit && c.lastId < page[q.limit - 1]!.id) return page.slice(0, q.limit);
      const fits = (await records(bucket, c)).filter(
        (r) => r.accountId === q.accountId && (!q.functionId || r.functionId === q.functionId) && (!q.before || r.id < q.before) && (!q.above || r.id > q.above),
      );
      page = [...page, ...fits].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    }
    if (chunks.length < BATCH) return page.slice(0, q.limit);
    cursor = chunks.at(-1)!.lastId;
  }
}

/** Whether the account has archived tasks of the function (a task list may filter by a deleted function whose records remain). */
export async function hasArchivedTasks(db: Db, accountId: string, functionId: string): Promise<boolean> {
  const [row] = await db.select({ key: taskArchive.key }).from(taskArchive).where(and(eq(taskArchive.accountId, accountId), hasFunction(functionId))).limit(1);
  return !!row;
}
