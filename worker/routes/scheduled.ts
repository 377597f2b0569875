import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody, listFilters, readBytesLimited } from "../http/validate.js";
import { taskBodyOf } from "../http/task-body.js";
import { scheduledCreate, scheduledEdit, scheduledListFilter } from "../../shared/schemas/scheduled.js";
import { MAX_TASK_BODY_BYTES } from "../../shared/schemas/task.js";
import { createSchedule, deleteSchedule, describeSchedule, editSchedule, getOwnSchedule, listSchedules, setPayload } from "../services/schedules.js";
import { issueScheduledTask } from "../schedules/issue.js";

export const scheduledRoutes = new Hono<AppEnv>()
  .post("/", async (c) => {
    const input = await jsonBody(c, scheduledCreate);
    return c.json({ id: await createSchedule(c.env, c.var.db, c.var.caller.accountId, input) }, 201);
  })
  .get("/list", async (c) => c.json(await listSchedules(c.var.db, c.var.caller.accountId, await listFilters(c, scheduledListFilter))))
  .get("/:id", async (c) => c.json(await describeSchedule(c.env.BUCKET, c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .patch("/:id", async (c) => {
    const input = await jsonBody(c, scheduledEdit);
    await editSchedule(c.env, c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    return c.body(null, 204);
  })
  .put("/:id/payload", async (c) => {
    const body = await readBytesLimited(c.req.raw, MAX_TASK_BODY_BYTES);
    const contentType = c.req.header("content-type") ?? null;
    // Refused now rather than at every run: a body that says JSON and is not (400 invalid_json).
    taskBodyOf(body, contentType);
    const query = new URL(c.req.url).search.replace(/^\?/, "");
    await setPayload(c.env.BUCKET, c.var.db, c.var.caller.accountId, c.req.param("id"), { body, query, contentType });
    return c.body(null, 204);
  })
  .post("/:id/try", async (c) => {
    const s = await getOwnSchedule(c.var.db, c.var.caller.accountId, c.req.param("id"));
    const task = await issueScheduledTask(c.env, c.var.db, s);
    return c.json({ id: task.id }, 201);
  })
  .delete("/:id", async (c) => {
    await deleteSchedule(c.env, c.var.db, c.var.caller.accountId, c.req.param("id"));
    return c.body(null, 204);
  });
