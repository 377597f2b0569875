import { and, asc, gt, isNull, lt, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { QueryBudget } from "../db/query-budget.js";
import { tasks } from "../db/schema.js";
import type { Bindings } from "../env.js";
import { allShards } from "../dispatch/client.js";
import { TASK_STATUS } from "../../shared/schemas/task.js";

/**
 * A task is created in two steps: its row goes into D1, then its dispatcher queues it. A Worker
 * that goes between the two (a restart, an eviction, a failed call) leaves a row no dispatcher
 * holds: it would stay pending for ever, holding a place under the account's pending cap and an
 * invocation of its plan. Its creator was never told it was accepted (the request failed, and a
 * client retries with a new task), so it must not run now: the hourly sweep records it as failed.
 *
 * A row counts as orphaned once it is older than ORPHAN_AFTER_MS (a creation takes milliseconds;
 * a chained task's firing is held by its shard until it has queued it) and no shard holds it: not
 * in a queue, not in an outcome log, not planned by a trigger firing still to finish.
 */
export const ORPHAN_AFTER_MS = 5 * 60_000;
/** Rows a page: ids travel as one JSON parameter to every shard. */
const PAGE = 500;
const MAX_PAGES = 20;

export const ORPHAN_LOG_LINE = "[dispatcher] the task was recorded but never queued (the service restarted while it was being created); it did not run";

/** Fails the orphaned tasks issued before `now - ORPHAN_AFTER_MS`; returns how many. */
export async function sweepOrphans(db: Db, env: Bindings, now: number, sweep = new QueryBudget(Infinity)): Promise<number> {
  const budget = sweep.part(2 * MAX_PAGES);
  let failed = 0;
  let after = "";
  // A page's read and its update are taken together, so a page read is never left unanswered.
  while (budget.take(2)) {
    // Through the partial index of unfinished tasks: only those are read.
    const page = await db
      .select({ id: tasks.id })
      .from(tasks)
      .where(and(isNull(tasks.finishedAt), lt(tasks.issuedAt, now - ORPHAN_AFTER_MS), gt(tasks.id, after)))
      .orderBy(asc(tasks.id))
      .limit(PAGE);
    if (!page.length) break;
    const ids = page.map((t) => t.id);
    const held = new Set((await Promise.all(allShards(env).map((s) => s.held(ids)))).flat());
    const orphans = ids.filter((id) => !held.has(id));
    if (orphans.length) {
      const rows = await db
        .update(tasks)
        .set({ status: TASK_STATUS.crashed, progress: 100, finishedAt: now, log: [ORPHAN_LOG_LINE] })
        .where(and(sql`${tasks.id} in (select value from json_each(${JSON.stringify(orphans)}))`, isNull(tasks.finishedAt)))
        .returning({ id: tasks.id });
      failed += rows.length;
    }
    after = ids.at(-1)!;
    if (page.length < PAGE) break;
  }
  return failed;
}
