import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody } from "../http/validate.js";
import { concurrencySet } from "../../shared/schemas/concurrency.js";
import { functionPolicy, writeFunctionPolicy } from "../retries/service.js";

/** A function's concurrency cap: mounted under /v1/function, beside the function's own routes. */
export const concurrencyRoutes = new Hono<AppEnv>()
  .get("/:id/concurrency", async (c) => c.json({ max: (await functionPolicy(c.var.db, c.var.caller.accountId, c.req.param("id"))).concurrencyMax }))
  .put("/:id/concurrency", async (c) => {
    const { max } = await jsonBody(c, concurrencySet);
    await writeFunctionPolicy(c.env, c.var.db, c.var.caller.accountId, c.req.param("id"), { concurrencyMax: max });
    return c.body(null, 204);
  });
