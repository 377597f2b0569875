import { and, desc, eq, lt } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { functions, tasks } from "../db/schema.js";
import { notFound } from "../errors.js";
import { newId } from "../lib/ids.js";
import { taskInputKey } from "../lib/storage-keys.js";
import { unixSeconds } from "../lib/time.js";
import type { TaskInput } from "../../shared/schemas/task.js";
import type { FunctionRow } from "./functions.js";

export type TaskRow = typeof tasks.$inferSelect;

/** Inputs up to this size stay in the D1 row; larger ones go to R2 (D1 rows stop near 1 MB). */
const INLINE_INPUT_BYTES = 64 * 1024;

/** Headers a function never sees: credentials of the caller and the edge's own. */
const HIDDEN_HEADERS = /^(authorization|cookie|cf-.*|x-forwarded-.*|x-real-ip)$/i;

export function inputFromRequest(req: Request, body: string | null): TaskInput {
  const url = new URL(req.url);
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(url.searchParams.keys())) {
    const all = url.searchParams.getAll(key);
    query[key] = all.length === 1 ? all[0]! : all;
  }
  const headers: Record<string, string> = {};
  req.headers.forEach((value, key) => {
    if (!HIDDEN_HEADERS.test(key)) headers[key] = value;
  });
  return { method: req.method, query, headers, body };
}

export interface IssueOptions {
  accountId: string;
  fn: FunctionRow;
  /** The build to run, from admitFunction() or the endpoint's admission columns. */
  buildId: string;
  input: TaskInput;
  endpointId?: string;
  triggerId?: string;
  parentTaskId?: string;
  hop?: number;
}

/** Records a pending task of an admitted function (see services/admission.ts). */
export async function issueTask(db: Db, bucket: R2Bucket, o: IssueOptions, now = Date.now()): Promise<TaskRow> {
  const id = newId(now);
  const json = JSON.stringify(o.input);
  let input: string | null = json;
  let inputKey: string | null = null;
  if (json.length > INLINE_INPUT_BYTES) {
    inputKey = taskInputKey(o.accountId, id);
    await bucket.put(inputKey, json);
    input = null;
  }
  const [row] = await db
    .insert(tasks)
    .values({
      id,
      accountId: o.accountId,
      functionId: o.fn.id,
      lang: o.fn.lang,
      buildId: o.buildId,
      endpointId: o.endpointId ?? null,
      triggerId: o.triggerId ?? null,
      parentTaskId: o.parentTaskId ?? null,
      hop: o.hop ?? 0,
      issuedAt: now,
      timeout: o.fn.timeout,
      cpuCount: o.fn.cpuCount,
      memSize: o.fn.memSize,
      privileged: o.fn.privileged,
      input,
      inputKey,
    })
    .returning();
  return row!;
}

export async function getOwnTask(db: Db, accountId: string, id: string): Promise<TaskRow> {
  const [row] = await db.select().from(tasks).where(and(eq(tasks.id, id), eq(tasks.accountId, accountId)));
  if (!row) throw notFound("task");
  return row;
}

export const describeTask = (t: TaskRow) => ({
  id: t.id,
  functionId: t.functionId,
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
});

/**
 * A task-list filter names a function as every other list filter does: one that is not the
 * caller's answers 404. Finished tasks outlive their function, so a deleted function whose tasks
 * remain still filters.
 */
async function assertTaskFunction(db: Db, accountId: string, functionId: string): Promise<void> {
  const [fn] = await db.select({ id: functions.id }).from(functions).where(and(eq(functions.id, functionId), eq(functions.accountId, accountId))).limit(1);
  if (fn) return;
  const [task] = await db.select({ id: tasks.id }).from(tasks).where(and(eq(tasks.accountId, accountId), eq(tasks.functionId, functionId))).limit(1);
  if (!task) throw notFound("function");
}

export async function listTasks(db: Db, accountId: string, q: { functionId?: string | undefined; before?: string | undefined; limit: number }) {
  if (q.functionId) await assertTaskFunction(db, accountId, q.functionId);
  const rows = await db
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
  return rows.map((r) => ({ id: r.id, issued: unixSeconds(r.issuedAt), progress: r.progress, status: r.status }));
}
