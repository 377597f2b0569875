import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { ApiError } from "../errors.js";
import { query } from "../http/validate.js";
import { storeZip } from "../http/zip-upload.js";
import { newId } from "../lib/ids.js";
import { zipKey } from "../lib/storage-keys.js";
import { buildCreateQuery, buildListQuery, MAX_ZIP_BYTES } from "../../shared/schemas/build.js";
import { getOwnFunction } from "../services/functions.js";
import { enqueueBuild } from "../dispatch/client.js";
import { assertBuildRoom, describeBuild, listBuilds, readBuildLog, recordBuild } from "../services/builds.js";
import { BUILD_LOG_HEADERS } from "../build-logs/text.js";
import { limitsOf } from "../limits/account-limits.js";
import { describeRoute } from "../openapi/describe.js";
import * as out from "../../shared/schemas/responses.js";
import { created } from "../openapi/parts.js";

export const buildRoutes = new Hono<AppEnv>()
  .get("/list", describeRoute({
    summary: "List builds (paged)",
    group: "builds", auth: "account",
    query: buildListQuery,
    ok: { status: 200, schema: out.buildList, description: "Pagination envelope." },
    errors: [400, 401, 404],
  }), async (c) => c.json(await listBuilds(c.var.db, c.var.caller.accountId, query(c, buildListQuery))))
  .get("/:id", describeRoute({
    summary: "Get a build with its timeline and log (its first 500 and last 500 lines, with one line `… N lines cut …` between them)",
    group: "builds", auth: "account",
    ok: { status: 200, schema: out.buildGet, description: "The build." },
    errors: [401, 404],
  }), async (c) => c.json(await describeBuild(c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .get("/:id/log", describeRoute({
    summary: "A build's whole log as text, kept up to 4 MiB (a longer log ends with a note of the lines cut)",
    group: "builds", auth: "account",
    ok: { status: 200, description: "The log, one line a line; while the build runs, the lines its record holds.", contentType: "text/plain" },
    errors: [401, 404],
  }), async (c) => c.body(await readBuildLog(c.var.db, c.env.BUCKET, c.var.caller.accountId, c.req.param("id")), 200, BUILD_LOG_HEADERS))
  .post("/:functionId", describeRoute({
    summary: "Upload a zip and build it",
    group: "builds", auth: "account",
    query: buildCreateQuery,
    body: { contentType: "application/octet-stream", required: true, description: "A zip of the contents of the function folder, at most 50 MiB." },
    ok: created("build"),
    errors: [400, 401, 404, 413, 415, 429, 500],
  }), async (c) => {
    const { accountId } = c.var.caller;
    const fn = await getOwnFunction(c.var.db, accountId, c.req.param("functionId"));
    if (!/^application\/octet-stream\s*(;|$)/i.test(c.req.header("content-type") ?? ""))
      throw new ApiError("unsupported_media_type", "Content-Type must be application/octet-stream (a zip archive)");
    query(c, buildCreateQuery);
    const { queuedBuilds } = await limitsOf(c.env, c.var.db, accountId);
    // Refused before a byte goes to R2; the body is then drained (middleware/drain-body.ts), so the
    // client's keep-alive connection survives the 429.
    await assertBuildRoom(c.var.db, accountId, queuedBuilds);
    const id = newId();
    const key = zipKey(accountId, fn.id, id);
    const zipSize = await storeZip(c.env.BUCKET, key, c.req.raw, MAX_ZIP_BYTES);
    // Concurrent uploads all passed the check above: the insert counts again, exactly.
    const build = await recordBuild(c.var.db, { id, accountId, functionId: fn.id, lang: fn.lang, zipKey: key, zipSize }, queuedBuilds).catch(async (e: unknown) => {
      await c.env.BUCKET.delete(key);
      throw e;
    });
    await enqueueBuild(c.env, build);
    return c.json({ id }, 201);
  });
