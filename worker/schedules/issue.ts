import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import type { schedules } from "../db/schema.js";
import { newTaskId } from "../dispatch/client.js";
import { createTask } from "../task-life/create.js";
import { findTask } from "../task-life/find.js";
import { queryRecord } from "../http/task-input.js";
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
 * pending cap, a successful build; a paused function's task waits in its queue): its shard creates
 * and queues it (task-life/create.ts). `id` is drawn once per run by the caller: a retry after the
 * shard's answer was lost finds the task its first try created rather than create a second.
 */
export async function issueScheduledTask(env: Bindings, db: Db, s: ScheduleRow, now = Date.now(), id = newTaskId(env, s.functionId, now)): Promise<TaskRow> {
  const input = await scheduledInput(env.BUCKET, s);
  try {
    return (await createTask(env, s.functionId, { id, accountId: s.accountId, input, scheduledId: s.id }, 0, now)).task;
  } catch (err) {
    const landed = await findTask(env, db, id).catch(() => undefined);
    if (landed?.scheduledId !== s.id) throw err;
    return landed;
  }
}
