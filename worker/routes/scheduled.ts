import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody, listFilters, readBytesLimited } from "../http/validate.js";
import { taskBodyOf } from "../http/task-body.js";
import { scheduledCreate, scheduledEdit, scheduledListFilter } from "../../shared/schemas/scheduled.js";
import { MAX_TASK_BODY_BYTES } from "../../shared/schemas/task.js";
import { createSchedule, deleteSchedule, describeSchedule, editSchedule, getOwnSchedule, listSchedules, setPayload } from "../services/schedules.js";
import { issueScheduledTask } from "../schedules/issue.js";
import { describeRoute } from "../openapi/describe.js";
import * as out from "../../shared/schemas/responses.js";
import { created, json, listFilterBody, noContent } from "../openapi/parts.js";

export const scheduledRoutes = new Hono<AppEnv>()
  .post("/", describeRoute({
    summary: "Schedule a function with a cron expression in a time zone",
    group: "scheduled", auth: "account",
    body: json(scheduledCreate),
    ok: created("schedule"),
    errors: [400, 401, 415, 429],
  }), async (c) => {
    const input = await jsonBody(c, scheduledCreate);
    return c.json({ id: await createSchedule(c.env, c.var.db, c.var.caller.accountId, input) }, 201);
  })
  .get("/list", describeRoute({
    summary: "List schedules (paged)",
    group: "scheduled", auth: "account",
    query: scheduledListFilter,
    body: listFilterBody(scheduledListFilter),
    ok: { status: 200, schema: out.scheduledList, description: "Pagination envelope." },
    errors: [400, 401, 404],
  }), async (c) => c.json(await listSchedules(c.var.db, c.var.caller.accountId, await listFilters(c, scheduledListFilter))))
  .get("/:id", describeRoute({
    summary: "Get a schedule with its payload",
    group: "scheduled", auth: "account",
    ok: { status: 200, schema: out.scheduledGet, description: "The schedule; inlinePayload is null until one is set." },
    errors: [401, 404],
  }), async (c) => c.json(await describeSchedule(c.env.BUCKET, c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .patch("/:id", describeRoute({
    summary: "Edit a schedule (active, cron, timezone, description)",
    group: "scheduled", auth: "account",
    body: json(scheduledEdit),
    ok: noContent,
    errors: [400, 401, 404, 415],
  }), async (c) => {
    const input = await jsonBody(c, scheduledEdit);
    await editSchedule(c.env, c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    return c.body(null, 204);
  })
  .put("/:id/payload", describeRoute({
    summary: "Set the payload: this request's body (any Content-Type) and query string",
    group: "scheduled", auth: "account",
    body: { contentType: "*/*", required: false, description: "Any body, at most 10 MiB, handed to each run byte for byte with its Content-Type." },
    ok: noContent,
    errors: [400, 401, 404, 413],
  }), async (c) => {
    const body = await readBytesLimited(c.req.raw, MAX_TASK_BODY_BYTES);
    const contentType = c.req.header("content-type") ?? null;
    // Refused now rather than at every run: a body that says JSON and is not (400 invalid_json).
    taskBodyOf(body, contentType);
    const query = new URL(c.req.url).search.replace(/^\?/, "");
    await setPayload(c.env.BUCKET, c.var.db, c.var.caller.accountId, c.req.param("id"), { body, query, contentType });
    return c.body(null, 204);
  })
  .post("/:id/try", describeRoute({
    summary: "Run the schedule's function with its payload now",
    group: "scheduled", auth: "account",
    ok: created("task"),
    errors: [401, 402, 404, 409, 429],
  }), async (c) => {
    const s = await getOwnSchedule(c.var.db, c.var.caller.accountId, c.req.param("id"));
    const task = await issueScheduledTask(c.env, c.var.db, s);
    return c.json({ id: task.id }, 201);
  })
  .delete("/:id", describeRoute({ summary: "Delete a schedule", group: "scheduled", auth: "account", ok: noContent, errors: [401, 404] }), async (c) => {
    await deleteSchedule(c.env, c.var.db, c.var.caller.accountId, c.req.param("id"));
    return c.body(null, 204);
  });
