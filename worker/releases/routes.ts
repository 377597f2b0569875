import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody } from "../http/validate.js";
import { releaseOut, releaseSet } from "../../shared/schemas/release.js";
import { getRelease, rollback, setRelease } from "./service.js";
import { admissionChanged } from "../shard-admission/notify.js";
import { describeRoute } from "../openapi/describe.js";
import { json, noContent } from "../openapi/parts.js";

/** Which build a function's tasks run: mounted under /v1/function, beside the function's own routes. */
export const releaseRoutes = new Hono<AppEnv>()
  .get("/:id/release", describeRoute({
    summary: "Which build the function's tasks run: pinned or the newest successful one, and any canary",
    group: "releases", auth: "account",
    ok: { status: 200, schema: releaseOut, description: "buildId is the build that runs now (null before any successful build)." },
    errors: [401, 404],
  }), async (c) => c.json(await getRelease(c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .put("/:id/release", describeRoute({
    summary: "Pin a build ({buildId: null} follows the newest again), optionally with a canary taking weight % of new tasks",
    group: "releases", auth: "account",
    body: json(releaseSet),
    ok: noContent,
    errors: [400, 401, 404, 409, 415],
  }), async (c) => {
    const input = await jsonBody(c, releaseSet);
    await setRelease(c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    await admissionChanged(c.env, { functionId: c.req.param("id") });
    return c.body(null, 204);
  })
  .post("/:id/rollback", describeRoute({
    summary: "Pin the successful build before the one that runs now, dropping any canary",
    group: "releases", auth: "account",
    ok: { status: 200, schema: releaseOut, description: "The new release." },
    errors: [401, 404, 409],
  }), async (c) => {
    const release = await rollback(c.var.db, c.var.caller.accountId, c.req.param("id"));
    await admissionChanged(c.env, { functionId: c.req.param("id") });
    return c.json(release);
  });
