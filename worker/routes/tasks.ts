import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { parseJsonText, query, readTextLimited } from "../http/validate.js";
import { MAX_JSON_BYTES, resultQuery, taskListQuery } from "../../shared/schemas/task.js";
import { enqueueTasks, newTaskId } from "../dispatch/client.js";
import { plansFrom } from "../billing/plans.js";
import { describeTask, getOwnTask, inputFromRequest, issueFunctionTask, listTasks } from "../services/tasks.js";
import { readResult } from "../services/task-results.js";
import { readTaskLog } from "../services/task-logs.js";

/** A task body is optional, but when present it must be JSON (any JSON value). */
export async function taskBody(req: Request): Promise<string | null> {
  const text = await readTextLimited(req, MAX_JSON_BYTES);
  return parseJsonText(text) === undefined ? null : text;
}

export const taskRoutes = new Hono<AppEnv>()
  .get("/list", async (c) => c.json(await listTasks(c.var.db, c.var.caller.accountId, query(c, taskListQuery))))
  .post("/:functionId", async (c) => {
    // The body is read first: admission and the insert are one statement (issueFunctionTask).
    const input = inputFromRequest(c.req.raw, await taskBody(c.req.raw));
    const functionId = c.req.param("functionId");
    const o = { id: newTaskId(c.env, functionId), accountId: c.var.caller.accountId, input };
    const task = await issueFunctionTask(c.var.db, c.env.BUCKET, plansFrom(c.env.PLANS), functionId, o);
    await enqueueTasks(c.env, [task]);
    return c.json({ id: task.id }, 201);
  })
  .get("/:id", async (c) => c.json(describeTask(await getOwnTask(c.var.db, c.var.caller.accountId, c.req.param("id")))))
  .get("/:id/result", async (c) => {
    const { wait } = query(c, resultQuery);
    return readResult(c.var.db, c.env, c.var.caller.accountId, c.req.param("id"), wait);
  })
  .get("/:id/log", async (c) => c.json(await readTaskLog(c.var.db, c.env.BUCKET, c.var.caller.accountId, c.req.param("id"))));
