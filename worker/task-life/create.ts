import type { Bindings } from "../env.js";
import type { TaskRow } from "../db/rows.js";
import { taskDispatcher } from "../dispatch/client.js";
import { stageInput, type NewTask } from "../tasks/row.js";
import { refusalError } from "./refusal.js";
import type { CreateAnswer, CreateRequest } from "./create-types.js";

export type { CreateAnswer, CreateRequest };


/**
 * Creates a task of the function in its shard (issue 26): the shard admits it, writes it to its own
 * storage and queues it, and answers; D1 receives the row later, in a batch. With `waitS`, the same
 * call also waits up to that long for the task to finish (a synchronous call): `finished` is the
 * finished row, answered the moment the outcome is durable in the shard. An input too large for the
 * row goes to R2 first, and is deleted again should the shard refuse the task.
 */
export async function createTask(env: Bindings, functionId: string, o: NewTask, waitS = 0, now = Date.now()): Promise<Created> {
  const staged = await stageInput(env.BUCKET, o, now);
  // A call that fails may have created the task all the same (the answer was lost): its input stays.
  const answer = await taskDispatcher(env, { functionId, id: o.id }).createTask({ ...o, functionId, staged, now }, waitS * 1000);
  if ("refused" in answer) {
    if (staged.inputKey) await env.BUCKET.delete(staged.inputKey);
    throw refusalError(answer.refused);
  }
  return { id: answer.task.id, task: answer.task, finished: answer.finished?.finishedAt != null ? answer.finished : null };
}

/** A created task, and its finished row when the call waited for it and it finished in time. */
export interface Created {
  id: string;
  task: TaskRow;
  finished: TaskRow | null;
}

/**
 * Waits up to `waitS` for a task created earlier (a call under an Idempotency-Key creates first and
 * waits after, so that the key is settled at once): its shard answers as it answers a created task.
 */
export async function awaitCreated(env: Bindings, task: TaskRow, waitS: number): Promise<TaskRow | null> {
  if (waitS <= 0) return null;
  const row = await taskDispatcher(env, task).awaitTask(task.id, waitS * 1000);
  return row?.finishedAt != null ? row : null;
}
