import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody } from "../http/validate.js";
import { retrySet } from "../../shared/schemas/retry.js";
import { functionPolicy, retryOf, setRetry } from "./service.js";

/** A function's retry policy: mounted under /v1/function, beside the function's own routes. */
export const retryRoutes = new Hono<AppEnv>()
  .get("/:id/retry", async (c) => c.json(retryOf(await functionPolicy(c.var.db, c.var.caller.accountId, c.req.param("id")))))
  .put("/:id/retry", async (c) => {
    const input = await jsonBody(c, retrySet);
    await setRetry(c.env, c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    return c.body(null, 204);
  });
