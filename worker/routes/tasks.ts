import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { query } from "../http/validate.js";
import { readTaskBody } from "../http/task-body.js";
import { resultQuery, taskListQuery } from "../../shared/schemas/task.js";
import { newTaskId } from "../dispatch/client.js";
import { preferredWait } from "../http/prefer.js";
import { syncResponse } from "../services/sync-invoke.js";
import { awaitCreated, createTask } from "../task-life/create.js";
import { describeTask, getOwnTask, listTasks } from "../services/tasks.js";
import { inputFromRequest } from "../http/task-input.js";
import { awaitFinished, readLog, readResult } from "../services/task-results.js";
import { requestKey } from "../idempotency/request-key.js";
import { issueOnce } from "../idempotency/issue-once.js";
import { REPLAYED, replayedResult } from "../idempotency/replay.js";
import { taskLogQuery } from "../../shared/schemas/live-logs.js";
import { followTaskLog } from "../live-logs/follow.js";
import { describeRoute } from "../openapi/describe.js";
import * as out from "../../shared/schemas/responses.js";
import { resultHeaders, resultReplay, taskCall } from "../openapi/parts.js";

export const taskRoutes = new Hono<AppEnv>()
  .get("/list", describeRoute({
    summary: "List tasks (functionId: only that function's; 404 when it is not one of the caller's)",
    group: "tasks", auth: "account",
    query: taskListQuery,
    ok: { status: 200, schema: out.taskList, description: "Newest first." },
    errors: [400, 401, 404],
  }), async (c) => c.json(await listTasks(c.env, c.var.db, c.var.caller.accountId, query(c, taskListQuery))))
  .post("/:functionId", describeRoute({
    summary: "Run a function once",
    group: "tasks", auth: "account",
    ...taskCall,
    errors: [400, 401, 402, 404, 409, 413, 429],
  }), async (c) => {
    // The body is read first: the shard admits and creates the task in one call (task-life/create.ts).
    const input = inputFromRequest(c.req.raw, await readTaskBody(c.req.raw));
    const functionId = c.req.param("functionId");
    const accountId = c.var.caller.accountId;
    const waitS = preferredWait(c.req.header("prefer"));
    const key = await requestKey(c.req.raw, `task:${accountId}:${functionId}`, input);
    // Under a key the task is created first and waited for after, so the key is settled at once.
    const once = await issueOnce(c.env, functionId, key, () => createTask(c.env, functionId, { id: newTaskId(c.env, functionId), accountId, input }, key ? 0 : waitS));
    if ("replayOf" in once) {
      const task = await getOwnTask(c.env, c.var.db, accountId, once.replayOf);
      const replay = await replayedResult(c.env, task, waitS, () => awaitFinished(c.var.db, c.env, task, waitS), `/v1/task/${task.id}/result`);
      return replay ?? c.json({ id: task.id }, 201, REPLAYED);
    }
    const { task } = once.issued;
    const finished = once.issued.finished ?? (key ? await awaitCreated(c.env, task, waitS) : null);
    if (finished) return syncResponse(c.env.BUCKET, finished, `/v1/task/${task.id}/result`);
    return c.json({ id: task.id }, 201);
  })
  .get("/:id", describeRoute({
    summary: "Get a task",
    group: "tasks", auth: "account",
    ok: { status: 200, schema: out.taskGet, description: "The task." },
    errors: [401, 404],
  }), async (c) => c.json(describeTask(await getOwnTask(c.env, c.var.db, c.var.caller.accountId, c.req.param("id")))))
  .get("/:id/result", describeRoute({
    summary: "The function's response",
    group: "tasks", auth: "account",
    query: resultQuery,
    ok: resultReplay,
    also: [{ status: 202, schema: out.taskPending, description: "The task has not finished: {status: 0, progress}.", headers: resultHeaders }],
    errors: [400, 401, 404, 410, 502],
  }), async (c) => {
    const { wait } = query(c, resultQuery);
    return readResult(c.var.db, c.env, c.var.caller.accountId, c.req.param("id"), wait);
  })
  .get("/:id/log", describeRoute({
    summary: "The function's stdout and stderr lines; with follow=1 (Accept: text/event-stream), live as Server-Sent Events",
    group: "tasks", auth: "account",
    query: taskLogQuery,
    ok: { status: 200, schema: out.taskLog, description: "Log lines. With follow=1: a text/event-stream instead." },
    events: "Server-Sent Events: `event: line` (data: one log line) for the lines printed so far and then each new line within a second; `event: dropped` (data {\"lines\": n}) when this reader was too slow and lost n lines; `event: end` (data {\"status\"}) when the task finishes, then the stream closes. A finished task gets all its lines and the end at once.",
    errors: [400, 401, 404, 410, 429],
  }), async (c) => {
    if (query(c, taskLogQuery).follow) return followTaskLog(c.env, c.var.db, c.var.caller.accountId, c.req.param("id"));
    const task = await getOwnTask(c.env, c.var.db, c.var.caller.accountId, c.req.param("id"));
    return c.json({ id: task.id, finished: task.finishedAt != null, log: await readLog(c.env.BUCKET, task) });
  });
