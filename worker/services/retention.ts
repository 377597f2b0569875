import { and, asc, isNull, lt, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { tasks } from "../db/schema.js";
import { taskInputKey, taskLogKey, taskResultKey } from "../lib/storage-keys.js";
import { QueryBudget } from "../db/query-budget.js";

/** Tasks a page: two D1 queries (a read, then the update) and three R2 delete calls (1,000 keys each, three keys a task). */
const PAGE = 999;
const KEYS_A_CALL = 999;
/** D1 queries a run, at most: a first run over a long history stops here (or where the sweep's budget ends) and the next hourly run goes on. */
const MAX_QUERIES = 400;

/**
 * The retention sweep (an hourly Cron Trigger): every task that finished more than `keepMs`
 * before `now` loses its input, result and log — its R2 objects deleted, its D1 columns cleared —
 * and is marked purged, so that reads answer 410 from then on. The record itself (status, times,
 * node) stays. Pages are read through the partial index tasks_unpurged, so a run reads only what
 * it purges. Idempotent: an interrupted run leaves rows unpurged for the next. Every key a task
 * can have is deleted whatever its row says, so an object put for a task whose outcome never
 * named it (a result uploaded before a timeout) goes too. Returns how many tasks were purged.
 */
export async function sweepTasks(db: Db, bucket: R2Bucket, keepMs: number, now: number, sweep = new QueryBudget(Infinity)): Promise<number> {
  const cutoff = now - keepMs;
  const budget = sweep.part(MAX_QUERIES);
  let purged = 0;
  // Both of a page's queries are taken before its R2 objects go: a page is never left half done for want of one.
  while (budget.take(2)) {
    const page = await db
      .select({ id: tasks.id, accountId: tasks.accountId })
      .from(tasks)
      .where(and(lt(tasks.finishedAt, cutoff), isNull(tasks.purgedAt)))
      .orderBy(asc(tasks.finishedAt))
      .limit(PAGE);
    if (!page.length) break;
    const keys = page.flatMap((t) => [taskInputKey(t.accountId, t.id), taskResultKey(t.accountId, t.id), taskLogKey(t.accountId, t.id)]);
    for (let i = 0; i < keys.length; i += KEYS_A_CALL) await bucket.delete(keys.slice(i, i + KEYS_A_CALL));
    // The ids as one JSON parameter: a page is more than D1's 100 bound parameters.
    await db
      .update(tasks)
      .set({ input: null, inputKey: null, resultHeaders: null, resultBody: null, resultKey: null, log: null, logKey: null, purgedAt: now })
      .where(sql`${tasks.id} in (select value from json_each(${JSON.stringify(page.map((t) => t.id))}))`);
    purged += page.length;
    if (page.length < PAGE) break;
  }
  return purged;
}
