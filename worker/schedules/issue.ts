import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import { and, eq } from "drizzle-orm";
import { tasks, type schedules } from "../db/schema.js";
import { newTaskId, enqueueTasks } from "../dispatch/client.js";
import { admissionLimits } from "../tasks/admission.js";
import { issueFunctionTask } from "../tasks/issue.js";
import { queryRecord } from "../services/tasks.js";
import type { TaskRow } from "../db/rows.js";
import { taskBodyOf } from "../http/task-body.js";
import { schedulePayloadKey } from "../lib/storage-keys.js";
import type { TaskInput } from "../../shared/schemas/task.js";

export type ScheduleRow = typeof schedules.$inferSelect;

/**
 * What a scheduled run hands its function: the stored payload byte for byte, with its query and
 * Content-Type, by the same body rules as a task sent through the API (http/task-body.ts). Without
 * a payload, an empty POST.
 */
export async function scheduledInput(bucket: R2Bucket, s: ScheduleRow): Promise<TaskInput> {
  if (s.payloadSetAt == null) return { method: "POST", query: {}, headers: {}, body: null };
  const object = await bucket.get(schedulePayloadKey(s.accountId, s.functionId, s.id));
  const bytes = object ? new Uint8Array(await object.arrayBuffer()) : new Uint8Array(0);
  return {
    method: "POST",
    query: queryRecord(new URLSearchParams(s.payloadQuery ?? "")),
    headers: s.payloadContentType ? { "content-type": s.payloadContentType } : {},
    ...taskBodyOf(bytes, s.payloadContentType),
  };
}

/**
 * Issues one task of the schedule's function through the same admission as the task API (quota,
 * pending cap, a successful build; a paused function's task waits in its queue), and queues it.
 * `id` is drawn once per run by the caller: a retry after D1's answer was lost finds the row its
 * first try inserted, and queues that one instead of issuing a second task.
 */
export async function issueScheduledTask(env: Bindings, db: Db, s: ScheduleRow, now = Date.now(), id = newTaskId(env, s.functionId, now)): Promise<TaskRow> {
  const input = await scheduledInput(env.BUCKET, s);
  const o = { id, accountId: s.accountId, input, scheduledId: s.id };
  let task: TaskRow;
  try {
    task = await issueFunctionTask(db, env.BUCKET, admissionLimits(env), s.functionId, o, now);
  } catch (err) {
    const [landed] = await db.select().from(tasks).where(and(eq(tasks.id, id), eq(tasks.scheduledId, s.id)));
    if (!landed) throw err;
    task = landed;
  }
  // A row found so was never queued (its insert's answer never came back); one finished since is left be.
  if (task.finishedAt == null) await enqueueTasks(env, [task]);
  return task;
}
