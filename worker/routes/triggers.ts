import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody, listFilters } from "../http/validate.js";
import { triggerCreate, triggerEdit, triggerListFilter } from "../../shared/schemas/trigger.js";
import { createTrigger, deleteTrigger, describeTrigger, editTrigger, listTriggers } from "../services/triggers.js";
import { describeRoute } from "../openapi/describe.js";
import * as out from "../../shared/schemas/responses.js";
import { created, json, listFilterBody, noContent } from "../openapi/parts.js";

export const triggerRoutes = new Hono<AppEnv>()
  .post("/", describeRoute({
    summary: "Create a trigger (at most 10 a function: 409 past that)",
    group: "triggers", auth: "account",
    body: json(triggerCreate),
    ok: created("trigger"),
    errors: [400, 401, 409, 415],
  }), async (c) => {
    const input = await jsonBody(c, triggerCreate);
    return c.json({ id: await createTrigger(c.var.db, c.var.caller.accountId, input) }, 201);
  })
  .get("/list", describeRoute({
    summary: "List triggers (paged)",
    group: "triggers", auth: "account",
    query: triggerListFilter,
    body: listFilterBody(triggerListFilter),
    ok: { status: 200, schema: out.triggerList, description: "Pagination envelope." },
    errors: [400, 401, 404],
  }), async (c) => c.json(await listTriggers(c.var.db, c.var.caller.accountId, await listFilters(c, triggerListFilter))))
  .get("/:id", describeRoute({
    summary: "Get a trigger",
    group: "triggers", auth: "account",
    ok: { status: 200, schema: out.triggerGet, description: "The trigger." },
    errors: [401, 404],
  }), async (c) => c.json(await describeTrigger(c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .patch("/:id", describeRoute({
    summary: "Edit a trigger",
    group: "triggers", auth: "account",
    body: json(triggerEdit),
    ok: noContent,
    errors: [400, 401, 404, 415],
  }), async (c) => {
    const input = await jsonBody(c, triggerEdit);
    await editTrigger(c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    return c.body(null, 204);
  })
  .delete("/:id", describeRoute({ summary: "Delete a trigger", group: "triggers", auth: "account", ok: noContent, errors: [401, 404] }), async (c) => {
    await deleteTrigger(c.var.db, c.var.caller.accountId, c.req.param("id"));
    return c.body(null, 204);
  });
