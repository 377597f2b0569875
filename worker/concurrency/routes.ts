import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody } from "../http/validate.js";
import { concurrencySet } from "../../shared/schemas/concurrency.js";
import { functionPolicy, writeFunctionPolicy } from "../retries/service.js";
import { describeRoute } from "../openapi/describe.js";
import { json, noContent } from "../openapi/parts.js";

/** A function's concurrency cap: mounted under /v1/function, beside the function's own routes. */
export const concurrencyRoutes = new Hono<AppEnv>()
  .get("/:id/concurrency", describeRoute({
    summary: "The function's cap on its tasks running at once across the fleet",
    group: "concurrency", auth: "account",
    ok: { status: 200, schema: concurrencySet, description: "{max: null} when uncapped (the default)." },
    errors: [401, 404],
  }), async (c) => c.json({ max: (await functionPolicy(c.var.db, c.var.caller.accountId, c.req.param("id"))).concurrencyMax }))
  .put("/:id/concurrency", describeRoute({
    summary: "Cap the function's tasks running at once (the rest wait pending, in order); {max: null} removes the cap",
    group: "concurrency", auth: "account",
    body: json(concurrencySet),
    ok: noContent,
    errors: [400, 401, 404, 415],
  }), async (c) => {
    const { max } = await jsonBody(c, concurrencySet);
    await writeFunctionPolicy(c.env, c.var.db, c.var.caller.accountId, c.req.param("id"), { concurrencyMax: max });
    return c.body(null, 204);
  });
