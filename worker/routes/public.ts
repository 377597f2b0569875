import { Hono, type Context } from "hono";
import type { AppEnv } from "../env.js";
import { ApiError, notFound } from "../errors.js";
import { query } from "../http/validate.js";
import { optionalAccount } from "../middleware/auth.js";
import { checkAccess, corsHeaders, zoneOf } from "../public/access.js";
import { localDay, nextLocalMidnight } from "../../shared/time/local-time.js";
import { callPage, PAGE_HEADERS, pendingPage, prefersHtml } from "../public/pages.js";
import { counterFor } from "../counters/client.js";
import { doorOf, openDoor } from "../endpoint-door/client.js";
import type { EndpointRow } from "../endpoint-door/facts.js";
import { newTaskId } from "../dispatch/client.js";
import { preferredWait } from "../http/prefer.js";
import { syncResponse } from "../services/sync-invoke.js";
import { awaitCreated, createTask } from "../task-life/create.js";
import { findTask, heldCopy } from "../task-life/find.js";
import { archivedAnywhere, publicArchived, recordedAnywhere, shardArchiveOf } from "../task-life/archived-reads.js";
import { MIN_ARCHIVE_AFTER_MS } from "../task-history/window.js";
import { idTime } from "../lib/ids.js";
import { inputFromRequest } from "../http/task-input.js";
import { awaitFinished, openState, resultNotReady, resultResponse } from "../services/task-results.js";
import { requestKey } from "../idempotency/request-key.js";
import { issueOnce } from "../idempotency/issue-once.js";
import { REPLAYED, replayedResult } from "../idempotency/replay.js";
import { publicResultWaits } from "../public/result-waits.js";
import { resultQuery } from "../../shared/schemas/task.js";
import { readTaskBody } from "../http/task-body.js";
import { withSyncWait } from "../public/sync-waits.js";
import { describeRoute } from "../openapi/describe.js";
import { publicReplay, taskCall } from "../openapi/parts.js";

/** Results of public calls are readable without a token for this long after the call. */
export const PUBLIC_RESULT_MS = 5 * 60_000;
/** No id was drawn before this (2025-01-01): an older "id" is made up, and answers 404 like any. */
const FIRST_ID_MS = Date.UTC(2025, 0, 1);
const archivable = (id: string) => {
  const t = idTime(id);
  return t !== undefined && t >= FIRST_ID_MS && t < Date.now() - MIN_ARCHIVE_AFTER_MS;
};
const needsOwner = () => new ApiError("unauthorized", "this result was public for 5 minutes after the call; now it needs the owner's token");

/** Counts a call against the endpoint's daily limit: its local day, or undefined when it has none; 429 once the limit is reached. */
async function countCall(env: AppEnv["Bindings"], e: EndpointRow, now: number): Promise<string | undefined> {
  if (e.dailyLimit < 0) return undefined;
  const zone = zoneOf(e);
  const day = localDay(now, zone);
  const { accepted } = e.dailyLimit === 0 ? { accepted: false } : await counterFor(env, e.id).acquire(day, e.dailyLimit);
  if (!accepted) {
    const retry = Math.max(1, Math.ceil((nextLocalMidnight(now, zone) - now) / 1000));
    throw new ApiError("daily_limit_reached", `this endpoint's daily limit of ${e.dailyLimit} calls is reached`, undefined, e.dailyLimit ? { "Retry-After": String(retry) } : undefined);
  }
  return day;
}

/** Gives back the count of a call that did not become a task. */
async function uncountCall(env: AppEnv["Bindings"], e: EndpointRow, day: string | undefined): Promise<void> {
  if (day && e.dailyLimit > 0) await counterFor(env, e.id).release(day);
}

function applyCors(c: Context<AppEnv>, headers: Record<string, string>) {
  for (const [k, v] of Object.entries(headers)) c.header(k, v);
}

/**
 * The public door, /gc/<endpoint_id>: any method but OPTIONS is a call. What it checks comes from
 * the endpoint's object (endpoint-door/), not from D1: one RPC on the path, and an endpoint served
 * before keeps answering while D1 fails. Checks run in the decisions' order; the body is validated
 * before the daily counter, and the function's shard (which picks the build) refuses after it, so
 * only calls that become tasks are counted (a refused or failed issue gives its count back).
 */
export const publicRoutes = new Hono<AppEnv>()
  .get("/:taskId/result", describeRoute({
    summary: "A public call's result: anonymous for 5 minutes, then the owner's token",
    group: "public", auth: "optional",
    query: resultQuery,
    ok: publicReplay,
    errors: [400, 401, 404, 410, 502],
  }), async (c) => {
    const { wait } = query(c, resultQuery);
    const id = c.req.param("taskId");
    // A task D1's move archived is past its anonymous 5 minutes: only its owner reads it. Its shard
    // may have archived it within them (a full chunk rolls at once), and its kept record left a large
    // result out: the shard's archive is asked by id alone, and the 5 minutes below decide.
    const found = await findTask(c.env, c.var.db, id);
    const owner = found ? undefined : await optionalAccount(c);
    const t = found ?? (owner ? await archivedAnywhere(c.env, c.var.db, owner, id) : idTime(id) !== undefined ? await publicArchived(c.env, id) : undefined);
    // Without a token an archived task cannot be looked up; an id old enough to be archived answers
    // as any result past its 5 minutes does, whether or not it exists (so it tells nothing). Text
    // that is not an id this service could have drawn (from before it existed) is simply not found.
    if (!t && !owner && archivable(id)) throw needsOwner();
    if (!t?.endpointId) throw notFound("public result");
    if (Date.now() - t.issuedAt > PUBLIC_RESULT_MS) {
      const accountId = await optionalAccount(c);
      if (!accountId) throw needsOwner();
      if (accountId !== t.accountId) throw notFound("public result");
    }
    const e = (await doorOf(c.env, t.endpointId))?.endpoint;
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
  .options("/:id", describeRoute({
    summary: "CORS preflight of a public endpoint (not counted)",
    group: "public", auth: "none",
    ok: { status: 204, description: "CORS headers for an allowed origin." },
    errors: [404],
  }), async (c) => {
    const { endpoint: e } = await openDoor(c.env, c.req.param("id"));
    const cors = corsHeaders(e, c.req.header("origin") ?? null);
    if (cors["Access-Control-Allow-Origin"]) {
      applyCors(c, cors);
      c.header("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE");
      c.header("Access-Control-Allow-Headers", c.req.header("access-control-request-headers") ?? "content-type");
      c.header("Access-Control-Max-Age", "600");
    }
    return c.body(null, 204);
  })
  .all("/:id", describeRoute({
    summary: "Call a public endpoint (any method but OPTIONS)",
    group: "public", auth: "none",
    ...taskCall,
    errors: [400, 402, 403, 404, 409, 413, 429, 503],
  }), async (c) => {
    const now = Date.now();
    const { endpoint: e, paused, syncWaits } = await openDoor(c.env, c.req.param("id"));
    const functionId = e.functionId;
    const origin = c.req.header("origin") ?? null;
    const cors = corsHeaders(e, origin);
    applyCors(c, cors);
    if (paused) throw new ApiError("function_paused", "the function behind this endpoint is paused");
    checkAccess(e, { ip: c.req.header("cf-connecting-ip") ?? null, origin }, now);
    const body = await readTaskBody(c.req.raw);
    const input = inputFromRequest(c.req.raw, body);
    // A browser gets the call page at once; an API client may prefer to wait for the response.
    const html = prefersHtml(c);
    const waitS = html ? 0 : preferredWait(c.req.header("prefer"));
    const during = <T>(wait: (s: number) => Promise<T>) => withSyncWait(c.env, e.accountId, syncWaits, waitS, wait, (p) => c.executionCtx.waitUntil(p));
    const key = await requestKey(c.req.raw, `gc:${e.id}`, input);
    let day: string | undefined;
    // Only a call that issues a task counts against the daily limit: a replay under a key does not.
    const once = await issueOnce(c.env, functionId, key, async () => {
      day = await countCall(c.env, e, now);
      try {
        // The build, quota and the pending cap are checked (by the shard that creates the task) after
        // the daily counter, so that a refusal gives the count back. Under a key the wait comes after.
        const o = { id: newTaskId(c.env, functionId, now), accountId: e.accountId, input, endpointId: e.id };
        return await during((s) => createTask(c.env, functionId, o, key ? 0 : s, now));
      } catch (err) {
        await uncountCall(c.env, e, day);
        throw err;
      }
    });
    if ("replayOf" in once) {
      // The key is kept 24 hours, the record in D1 an hour after its finish: then the archive has it.
      const task = (await heldCopy(c.env, once.replayOf)) ?? (await recordedAnywhere(c.var.db, c.env.BUCKET, e.accountId, once.replayOf, shardArchiveOf(c.env)));
      if (!task) throw notFound("task");
      const replay = await replayedResult(c.env, task, waitS, () => during((s) => awaitFinished(c.var.db, c.env, task, s)), `/gc/${task.id}/result`, cors);
      if (replay) return replay;
      if (html) return c.html(callPage(task.id, PUBLIC_RESULT_MS / 60_000), 201, { ...PAGE_HEADERS, ...REPLAYED });
      return c.json({ id: task.id }, 201, REPLAYED);
    }
    const { task } = once.issued;
    try {
      const finished = once.issued.finished ?? (key ? await during((s) => awaitCreated(c.env, task, s)) : null);
      if (finished) return syncResponse(c.env.BUCKET, finished, `/gc/${task.id}/result`, cors);
      if (html) return c.html(callPage(task.id, PUBLIC_RESULT_MS / 60_000), 201, PAGE_HEADERS);
      return c.json({ id: task.id }, 201);
    } catch (err) {
      await uncountCall(c.env, e, day);
      throw err;
    }
  });
