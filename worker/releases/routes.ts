import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody } from "../http/validate.js";
import { releaseSet } from "../../shared/schemas/release.js";
import { getRelease, rollback, setRelease } from "./service.js";

/** Which build a function's tasks run: mounted under /v1/function, beside the function's own routes. */
export const releaseRoutes = new Hono<AppEnv>()
  .get("/:id/release", async (c) => c.json(await getRelease(c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .put("/:id/release", async (c) => {
    const input = await jsonBody(c, releaseSet);
    await setRelease(c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    return c.body(null, 204);
  })
  .post("/:id/rollback", async (c) => c.json(await rollback(c.var.db, c.var.caller.accountId, c.req.param("id"))));
