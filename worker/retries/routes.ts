import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody } from "../http/validate.js";
import { retrySet } from "../../shared/schemas/retry.js";
import { functionPolicy, retryOf, setRetry } from "./service.js";
import { describeRoute } from "../openapi/describe.js";
import { json, noContent } from "../openapi/parts.js";

/** A function's retry policy: mounted under /v1/function, beside the function's own routes. */
export const retryRoutes = new Hono<AppEnv>()
  .get("/:id/retry", describeRoute({
    summary: "The function's retry policy: attempts in all, the first backoff, the dead-letter function",
    group: "retries", auth: "account",
    ok: { status: 200, schema: retrySet, description: "Defaults: {maxAttempts: 1, backoffSeconds: 10, deadLetterFunctionId: null}." },
    errors: [401, 404],
  }), async (c) => c.json(retryOf(await functionPolicy(c.var.db, c.var.caller.accountId, c.req.param("id")))))
  .put("/:id/retry", describeRoute({
    summary: "Set the retry policy of the function's asynchronous tasks (a 5xx or a timeout is retried after backoffSeconds × 2^(n−2) ±20 %; when attempts run out the dead-letter function gets one task)",
    group: "retries", auth: "account",
    body: json(retrySet),
    ok: noContent,
    errors: [400, 401, 404, 415],
  }), async (c) => {
    const input = await jsonBody(c, retrySet);
    await setRetry(c.env, c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    return c.body(null, 204);
  });
