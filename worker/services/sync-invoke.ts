import type { Bindings } from "../env.js";
import { dispatcherFor, enqueueTasks } from "../dispatch/client.js";
import { taskWork } from "../dispatch/work.js";
import { resultResponse } from "./task-results.js";
import type { TaskRow } from "../db/rows.js";

/**
 * Queues a new task; with a preferred wait (RFC 7240 `Prefer: wait=S`), also waits up to S seconds
 * for it to finish, in the same call to its dispatcher. The finished row, or null when it did not
 * finish in time (or no wait was asked for).
 */
export async function issueAndAwait(env: Bindings, task: TaskRow, waitS: number): Promise<TaskRow | null> {
  if (waitS <= 0) {
    await enqueueTasks(env, [task]);
    return null;
  }
  // A failed call fails the request, as a failed enqueue does; the dispatcher bounds the wait itself.
  const row = await dispatcherFor(env, task.functionId).enqueueAndAwait([taskWork(task)], task.id, waitS * 1000);
  return row?.finishedAt != null ? row : null;
}

/**
 * The answer to a synchronous call that finished: the function's own response, marked as the
 * applied preference, with the task id and where its result stays readable.
 */
export async function syncResponse(bucket: R2Bucket, row: TaskRow, resultPath: string, extraHeaders: Record<string, string> = {}): Promise<Response> {
  const res = await resultResponse(bucket, row);
  for (const [k, v] of Object.entries(extraHeaders)) res.headers.set(k, v);
  res.headers.set("Preference-Applied", "wait");
  res.headers.set("X-Task-Id", row.id);
  res.headers.set("Location", resultPath);
  res.headers.append("Vary", "Prefer");
  return res;
}
