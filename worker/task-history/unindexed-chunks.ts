import { asc, lt, sql } from "drizzle-orm";
import { sqlBatch, type Db } from "../db/client.js";
import { taskArchive, taskArchivePending, tasks } from "../db/schema.js";
import { QueryBudget } from "../db/query-budget.js";
import { jsonSlices } from "../db/json-slices.js";
import { HOUR_MS } from "../lib/time.js";
import { chunkKeySql } from "./chunk-names.js";

/**
 * How old a mark (and a chunk) must be before it is looked at: far past the life of the run that
 * wrote it (a scheduled invocation lives 15 minutes at most), so no run is still about to index it.
 */
export const UNINDEXED_AFTER_MS = HOUR_MS;
/** Marks a run looks at, at most: a mark is left only by an invocation killed mid-move, so few ever wait. */
const MARKS_A_RUN = 20;
/** R2 listings of one mark's range, at most (100 keys each): a read writes two chunks, a range holds few more. */
const LISTINGS_A_MARK = 3;
/** D1 queries a run makes at most: the marks, the one check of their chunks, the deletion of the marks done. */
export const UNINDEXED_MAX_QUERIES = 3;

type Mark = typeof taskArchivePending.$inferSelect;
interface Found {
  key: string;
  mark: Mark;
  firstId: string;
  lastId: string;
  old: boolean;
}

/**
 * Deletes the chunks that a killed invocation of the archive's move put in R2 but never indexed
 * (taskArchivePending): nothing reads them, but they would hold their records' inputs, results and
 * logs past retention. A chunk in a mark's range goes when no index row names it, it is older than
 * UNINDEXED_AFTER_MS, and none of its range's records is still in D1. Records still there will be
 * moved again, and the move writes them to the same key (named by its first and last id and count),
 * so a chunk whose records remain may be about to become indexed; it stays, with its mark, until
 * they have moved. A mark goes once nothing in its range is left to decide. Returns the chunks
 * deleted.
 */
export async function removeUnindexedChunks(db: Db, bucket: R2Bucket, now: number, budget: QueryBudget): Promise<number> {
  const b = budget.part(UNINDEXED_MAX_QUERIES);
  if (!b.take()) return 0;
  const marks = await db
    .select()
    .from(taskArchivePending)
    .where(lt(taskArchivePending.at, now - UNINDEXED_AFTER_MS))
    .orderBy(asc(taskArchivePending.at))
    .limit(MARKS_A_RUN);
  // The check and the deletion of the marks it settles, taken before the check.
  if (!marks.length || !b.take(2)) return 0;
  const found: Found[] = [];
  const unsure = new Set<Mark>();
  for (const m of marks) {
    const listed = await chunksInRange(bucket, m, now);
    if (!listed.complete) unsure.add(m);
    found.push(...listed.chunks);
  }
  const unindexed = new Map(found.length ? await unindexedChunks(db, found) : []);
  const doomed = found.filter((f) => f.old && unindexed.get(f.key) === false);
  // A chunk not indexed yet that is young, or whose records are still in D1, is decided later.
  for (const f of found) if (unindexed.has(f.key) && !doomed.includes(f)) unsure.add(f.mark);
  if (doomed.length) await bucket.delete(doomed.map((f) => f.key));
  const done = marks.filter((m) => !unsure.has(m)).map((m) => [m.accountId, m.firstId, m.at]);
  if (done.length)
    await sqlBatch(db, [
      sql`delete from ${taskArchivePending} where exists (select 1 from json_each(${JSON.stringify(done)}) j
        where json_extract(j.value, '$[0]') = account_id and json_extract(j.value, '$[1]') = first_id and json_extract(j.value, '$[2]') = at)`,
    ]);
  return doomed.length;
}

/** The account's chunks whose first id falls in the mark's range (a chunk the marked read wrote begins there), and whether the listing reached its end. */
async function chunksInRange(bucket: R2Bucket, m: Mark, now: number): Promise<{ chunks: Found[]; complete: boolean }> {
  const prefix = `history/${m.accountId}/`;
  const out: Found[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < LISTINGS_A_MARK; i++) {
    const page = await bucket.list({ prefix, ...(cursor ? { cursor } : { startAfter: prefix + m.firstId }), limit: 100 });
    for (const o of page.objects) {
      const [firstId = "", lastId = ""] = o.key.slice(prefix.length).split(/[-.]/);
      if (firstId > m.lastId) return { chunks: out, complete: true };
      if (firstId >= m.firstId) out.push({ key: o.key, mark: m, firstId, lastId, old: o.uploaded.getTime() < now - UNINDEXED_AFTER_MS });
    }
    if (!page.truncated) return { chunks: out, complete: true };
    cursor = page.cursor;
  }
  return { chunks: out, complete: false };
}

/**
 * Of these chunks, those no index row names, each with whether its range still holds any of its
 * account's rows in D1 (one batch: a statement a JSON slice of them).
 */
async function unindexedChunks(db: Db, found: Found[]): Promise<[string, boolean][]> {
  const slices = jsonSlices(found.map((f) => [f.key, f.mark.accountId, f.firstId, f.lastId]));
  const answers = await sqlBatch(
    db,
    slices.map(
      (json) => sql`select json_extract(j.value, '$[0]') as key, exists (select 1 from ${tasks} t where t.account_id = json_extract(j.value, '$[1]')
          and t.id between json_extract(j.value, '$[2]') and json_extract(j.value, '$[3]')) as held
        from json_each(${json}) j
        where not exists (select 1 from ${taskArchive} a where a.account_id = json_extract(j.value, '$[1]')
          and a.last_id = json_extract(j.value, '$[3]') and a.first_id = json_extract(j.value, '$[2]') and ${chunkKeySql} = json_extract(j.value, '$[0]'))`,
    ),
  );
  return answers.flat().map((r) => [String(r.key), Boolean(r.held)]);
}
