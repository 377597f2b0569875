import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import { ApiError } from "../errors.js";
import { dispatcherFor, taskDispatcher } from "../dispatch/client.js";
import type { Followed } from "../dispatch/log-follows.js";
import { requestFollow } from "../dispatch/live-log-requests.js";
import { getOwnTask } from "../services/tasks.js";
import type { TaskRow } from "../db/rows.js";
import { getOwnFunction } from "../services/functions.js";
import { readLog } from "../services/task-results.js";
import { SSE_HEADERS, sseEvent } from "../lib/sse.js";

/** How long a follow of a task that just finished waits for its outcome to be recorded. */
const RECORDING_WAIT_MS = 10_000;

/**
 * GET /v1/task/<id>/log?follow=1: a running (or waiting) task's log live from its dispatcher; a
 * finished task's whole log then its end, at once.
 */
export async function followTaskLog(env: Bindings, db: Db, accountId: string, taskId: string): Promise<Response> {
  let task = await getOwnTask(env, db, accountId, taskId);
  if (task.finishedAt == null) {
    const shard = taskDispatcher(env, task);
    const followed = await requestFollow(shard, "task", taskId, accountId);
    if (followed) return streamed(followed);
    // It finished meanwhile: its outcome may still be on the way to D1.
    const waited = await shard.awaitOwnTask(taskId, accountId, RECORDING_WAIT_MS);
    task = waited && "row" in waited ? waited.row : await getOwnTask(env, db, accountId, taskId);
    if (task.finishedAt == null) throw new ApiError("internal_error", "the task's dispatcher does not hold it; try again");
  }
  return finishedLog(env.BUCKET, task);
}

/** GET /v1/function/<id>/logs?follow=1: every task of the function that runs from now on. */
export async function tailFunctionLogs(env: Bindings, db: Db, accountId: string, functionId: string): Promise<Response> {
  await getOwnFunction(db, accountId, functionId);
  return streamed((await requestFollow(dispatcherFor(env, functionId), "function", functionId, accountId))!);
}

async function finishedLog(bucket: R2Bucket, task: TaskRow): Promise<Response> {
  const lines = await readLog(bucket, task);
  const body = lines.map((l) => sseEvent("line", l)).join("") + sseEvent("end", JSON.stringify({ status: task.status }));
  return new Response(body, { headers: SSE_HEADERS });
}

const LIMITED = { task: "followers of one task", function: "tails of one function", account: "live log followers of one account (per dispatch shard)" };

function streamed(followed: Followed): Response {
  if ("limit" in followed) throw new ApiError("limit_reached", `at most ${followed.limit} ${LIMITED[followed.of]} at once`);
  return new Response(followed.stream, { headers: SSE_HEADERS });
}
