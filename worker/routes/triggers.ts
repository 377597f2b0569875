import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody, listFilters } from "../http/validate.js";
import { triggerCreate, triggerEdit, triggerListFilter } from "../../shared/schemas/trigger.js";
import { createTrigger, deleteTrigger, describeTrigger, editTrigger, listTriggers } from "../services/triggers.js";

export const triggerRoutes = new Hono<AppEnv>()
  .post("/", async (c) => {
    const input = await jsonBody(c, triggerCreate);
    return c.json({ id: await createTrigger(c.var.db, c.var.caller.accountId, input) }, 201);
  })
  .get("/list", async (c) => c.json(await listTriggers(c.var.db, c.var.caller.accountId, await listFilters(c, triggerListFilter))))
  .get("/:id", async (c) => c.json(await describeTrigger(c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .patch("/:id", async (c) => {
    const input = await jsonBody(c, triggerEdit);
    await editTrigger(c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    return c.body(null, 204);
  })
  .delete("/:id", async (c) => {
    await deleteTrigger(c.var.db, c.var.caller.accountId, c.req.param("id"));
    return c.body(null, 204);
  });
