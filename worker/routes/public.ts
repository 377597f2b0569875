import { Hono, type Context } from "hono";
import { eq } from "drizzle-orm";
import type { AppEnv } from "../env.js";
import { ApiError, notFound } from "../errors.js";
import { endpoints, functions, tasks } from "../db/schema.js";
import { query } from "../http/validate.js";
import { optionalAccount } from "../middleware/auth.js";
import { checkAccess, corsHeaders, zoneOf } from "../public/access.js";
import { localDay, nextLocalMidnight } from "../../shared/time/local-time.js";
import { callPage, PAGE_HEADERS, pendingPage, prefersHtml } from "../public/pages.js";
import { counterFor } from "../counters/client.js";
import { periodOf } from "../billing/plans.js";
import { newTaskId } from "../dispatch/client.js";
import { preferredWait } from "../http/prefer.js";
import { issueAndAwait, syncResponse } from "../services/sync-invoke.js";
import { inputFromRequest, issueFunctionTask } from "../services/tasks.js";
import { admissionColumns, admissionLimits, noSuccessfulBuild } from "../services/admission.js";
import { awaitFinished, openState, resultNotReady, resultResponse } from "../services/task-results.js";
import { publicResultWaits } from "../public/result-waits.js";
import { resultQuery } from "../../shared/schemas/task.js";
import { readTaskBody } from "../http/task-body.js";
import { withSyncWait } from "../public/sync-waits.js";
import { limitDefaults, ownLimitColumn } from "../limits/account-limits.js";

/** Results of public calls are readable without a token for this long after the call. */
export const PUBLIC_RESULT_MS = 5 * 60_000;

/** The endpoint, its function and the function's build, in one D1 round trip. */
async function loadEndpoint(c: Context<AppEnv>, id: string) {
  const [row] = await c.var.db
    .select({
      e: endpoints,
      fn: functions,
      buildId: admissionColumns(periodOf(Date.now())).buildId,
      syncWaits: ownLimitColumn("syncWaits", endpoints.accountId),
    })
    .from(endpoints)
    .innerJoin(functions, eq(functions.id, endpoints.functionId))
    .where(eq(endpoints.id, id));
  if (!row) throw notFound("endpoint");
  return { ...row, syncWaits: row.syncWaits ?? limitDefaults(c.env).syncWaits };
}

function applyCors(c: Context<AppEnv>, headers: Record<string, string>) {
  for (const [k, v] of Object.entries(headers)) c.header(k, v);
}

/**
 * The public door, /gc/<endpoint_id>: any method but OPTIONS is a call. Checks run in the
 * decisions' order; the body is validated and the build looked up before the daily counter,
 * so only calls that become tasks are counted (and a failed issue gives its count back).
 */
export const publicRoutes = new Hono<AppEnv>()
  .get("/:taskId/result", async (c) => {
    const { wait } = query(c, resultQuery);
    const [t] = await c.var.db.select().from(tasks).where(eq(tasks.id, c.req.param("taskId")));
    if (!t?.endpointId) throw notFound("public result");
    if (Date.now() - t.issuedAt > PUBLIC_RESULT_MS) {
      const accountId = await optionalAccount(c);
      if (!accountId) throw new ApiError("unauthorized", "this result was public for 5 minutes after the call; now it needs the owner's token");
      if (accountId !== t.accountId) throw notFound("public result");
    }
    const [e] = await c.var.db.select({ origin: endpoints.origin }).from(endpoints).where(eq(endpoints.id, t.endpointId));
    const done = await publicResultWaits.during(t.id, wait, (s) => awaitFinished(c.var.db, c.env, t, s));
    if (done.finishedAt == null) {
      const notReady = resultNotReady(done);
      if (!prefersHtml(c)) throw notReady;
      return c.html(pendingPage(done.id, openState(done), 1), 404, { ...notReady.headers, ...PAGE_HEADERS });
    }
    const res = await resultResponse(c.env.BUCKET, done);
    for (const [k, v] of Object.entries(e ? corsHeaders(e, c.req.header("origin") ?? null) : {})) res.headers.set(k, v);
    return res;
  })
  .options("/:id", async (c) => {
    const { e } = await loadEndpoint(c, c.req.param("id"));
    const cors = corsHeaders(e, c.req.header("origin") ?? null);
    if (cors["Access-Control-Allow-Origin"]) {
      applyCors(c, cors);
      c.header("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE");
      c.header("Access-Control-Allow-Headers", c.req.header("access-control-request-headers") ?? "content-type");
      c.header("Access-Control-Max-Age", "600");
    }
    return c.body(null, 204);
  })
  .all("/:id", async (c) => {
    const now = Date.now();
    const { e, fn, buildId, syncWaits } = await loadEndpoint(c, c.req.param("id"));
    const origin = c.req.header("origin") ?? null;
    const cors = corsHeaders(e, origin);
    applyCors(c, cors);
    if (fn.paused) throw new ApiError("function_paused", "the function behind this endpoint is paused");
    checkAccess(e, { ip: c.req.header("cf-connecting-ip") ?? null, origin }, now);
    const body = await readTaskBody(c.req.raw);
    if (!buildId) throw noSuccessfulBuild();
    let day: string | undefined;
    if (e.dailyLimit >= 0) {
      const zone = zoneOf(e);
      day = localDay(now, zone);
      const { accepted } = e.dailyLimit === 0 ? { accepted: false } : await counterFor(c.env, e.id).acquire(day, e.dailyLimit);
      if (!accepted) {
        const retry = Math.max(1, Math.ceil((nextLocalMidnight(now, zone) - now) / 1000));
        throw new ApiError("daily_limit_reached", `this endpoint's daily limit of ${e.dailyLimit} calls is reached`, undefined, e.dailyLimit ? { "Retry-After": String(retry) } : undefined);
      }
    }
    try {
      // Quota and the pending cap are checked (by the issuing statement) after the daily counter, so
      // that a refusal gives the count back below.
      const o = { id: newTaskId(c.env, fn.id, now), accountId: e.accountId, input: inputFromRequest(c.req.raw, body), endpointId: e.id };
      const task = await issueFunctionTask(c.var.db, c.env.BUCKET, admissionLimits(c.env), fn.id, o, now);
      // A browser gets the call page at once; an API client may prefer to wait for the response.
      const html = prefersHtml(c);
      const waitS = html ? 0 : preferredWait(c.req.header("prefer"));
      const finished = await withSyncWait(c.env, e.accountId, syncWaits, waitS, (s) => issueAndAwait(c.env, task, s), (p) => c.executionCtx.waitUntil(p));
      if (finished) return syncResponse(c.env.BUCKET, finished, `/gc/${task.id}/result`, cors);
      if (html) return c.html(callPage(task.id, PUBLIC_RESULT_MS / 60_000), 201, PAGE_HEADERS);
      return c.json({ id: task.id }, 201);
    } catch (err) {
      if (day && e.dailyLimit > 0) await counterFor(c.env, e.id).release(day);
      throw err;
    }
  });
