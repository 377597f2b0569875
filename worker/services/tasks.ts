import { and, desc, eq, lt } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { functions, tasks } from "../db/schema.js";
import { notFound } from "../errors.js";
import { unixSeconds } from "../lib/time.js";
import type { TaskRow } from "../db/rows.js";
import type { Bindings } from "../env.js";
import { heldCopy, shardPages } from "../task-life/find.js";
import { mergedPage } from "../lib/pages.js";
import { archivedPage, hasArchivedTasks, pageChunks } from "../task-history/reads.js";
import { recordedAnywhere, shardArchiveOf } from "../task-life/archived-reads.js";

/**
 * One of the account's tasks, its newest copy (task-life/find.ts), else its archived record
 * (task-history/, looked up in D1's batch, so a record moving meanwhile is found; then its shard's
 * archive: task-life/archived-reads.ts); 404 for another account's.
 */
export async function getOwnTask(env: Bindings, db: Db, accountId: string, id: string): Promise<TaskRow> {
  const row = (await heldCopy(env, id)) ?? (await recordedAnywhere(db, env.BUCKET, accountId, id, shardArchiveOf(env)));
  if (!row || row.accountId !== accountId) throw notFound("task");
  return row;
}

export const describeTask = (t: TaskRow) => ({
  id: t.id,
  functionId: t.functionId,
  /** The build it ran or will run, chosen by the function's release when it was issued. */
  buildId: t.buildId,
  issued: unixSeconds(t.issuedAt),
  assigned: unixSeconds(t.assignedAt),
  finished: unixSeconds(t.finishedAt),
  progress: t.progress,
  status: t.status,
  node: t.node,
  timeout: t.timeout,
  capabilities: { cpuCount: t.cpuCount, memSize: t.memSize, networkLatency: t.networkLatency, privileged: t.privileged },
  endpointId: t.endpointId,
  triggerId: t.triggerId,
  parentTaskId: t.parentTaskId,
  /** The container runtime it ran under (runsc: gVisor), null until it ran. */
  runtime: t.runtime,
  scheduledId: t.scheduledId,
  /**
   * The headers the function answered with (GC-Storage taken off), which the result operation does
   * not replay (it sends only the Content-Type); null until it finished, and once retention deleted the result.
   */
  responseHeaders: t.resultHeaders ?? null,
  /** Attempts run so far (worker/retries/): result and status are the last one's. */
  attempts: t.attempts,
});

/**
 * A task-list filter names a function as every other list filter does: one that is not the
 * caller's answers 404. Finished tasks outlive their function, so a deleted function whose tasks
 * remain still filters.
 */
async function assertTaskFunction(env: Bindings, db: Db, accountId: string, functionId: string): Promise<void> {
  const [fn] = await db.select({ id: functions.id }).from(functions).where(and(eq(functions.id, functionId), eq(functions.accountId, accountId))).limit(1);
  if (fn) return;
  const [task] = await db.select({ id: tasks.id }).from(tasks).where(and(eq(tasks.accountId, accountId), eq(tasks.functionId, functionId))).limit(1);
  if (task) return;
  // Its tasks may all be in its shards still (held, kept or archived there), or in D1's archive.
  if ((await shardPages(env, { accountId, functionId, limit: 1 })).length || (await hasArchivedTasks(db, accountId, functionId))) return;
  throw notFound("function");
}

export async function listTasks(env: Bindings, db: Db, accountId: string, q: { functionId?: string | undefined; before?: string | undefined; limit: number }) {
  if (q.functionId) await assertTaskFunction(env, db, accountId, q.functionId);
  // The shards first (what each holds, keeps and archived, in one call), then D1 and its archive's
  // index in one batch: a task that moves on in between is where the next look finds it, so never
  // missing (and never twice: the page is merged by id).
  const fromShards = await shardPages(env, { accountId, ...q });
  const scope = { accountId, functionId: q.functionId, before: q.before };
  const [fromD1, chunks] = await db.batch([listedTasks(db, accountId, q), pageChunks(db, scope)]);
  const live = mergedPage(fromD1, fromShards, q.limit);
  // A full page needs only archived tasks newer than its oldest (an archived task can be newer than
  // a live one: a task held by a pause stays in D1 after newer ones left).
  const above = live.length === q.limit ? live.at(-1)!.id : undefined;
  const archived = await archivedPage(db, env.BUCKET, { ...scope, above, limit: q.limit }, chunks);
  return mergedPage(archived, live, q.limit).map((r) => ({ id: r.id, issued: unixSeconds(r.issuedAt), progress: r.progress, status: r.status }));
}

function listedTasks(db: Db, accountId: string, q: { functionId?: string | undefined; before?: string | undefined; limit: number }) {
  return db
    .select({ id: tasks.id, issuedAt: tasks.issuedAt, progress: tasks.progress, status: tasks.status })
    .from(tasks)
    .where(
      and(
        eq(tasks.accountId, accountId),
        q.functionId ? eq(tasks.functionId, q.functionId) : undefined,
        q.before ? lt(tasks.id, q.before) : undefined,
      ),
    )
    .orderBy(desc(tasks.id))
    .limit(q.limit);
}
