import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { ApiError, notFound } from "../errors.js";
import { artifactKey, buildLogKey, taskResultKey } from "../lib/storage-keys.js";
import { BUILD_LOG_TEXT_BYTES, BUILD_LOG_TRAILER_BYTES } from "../../shared/build-log.js";
import { allShards, shardCount, shardStub } from "../dispatch/client.js";
import { forwardConnect } from "../dispatch/nodes.js";
import { agentBuild, agentTask } from "../services/agent-work.js";
import { storeUploadedLog } from "../services/task-logs.js";
import { storageValueKey } from "../storage/keys.js";
import { MAX_STORAGE_BYTES } from "../../shared/schemas/storage.js";
import { MAX_ARTIFACT_BYTES, MAX_RESULT_BYTES } from "../http/body-limits.js";
import { describeRoute } from "../openapi/describe.js";
import { noContent } from "../openapi/parts.js";

/** R2 needs a known length: uploads from agents must carry Content-Length. */
async function putSized(bucket: R2Bucket, key: string, req: Request, limit: number) {
  const len = Number(req.headers.get("content-length") ?? NaN);
  if (!Number.isInteger(len) || len < 0) throw new ApiError("length_required", "Content-Length is required");
  if (len > limit) throw new ApiError("payload_too_large", `at most ${limit} bytes`);
  const fixed = new FixedLengthStream(len);
  await Promise.all([req.body ? req.body.pipeTo(fixed.writable) : fixed.writable.close(), bucket.put(key, fixed.readable)]);
}

async function streamObject(bucket: R2Bucket, key: string | null, what: string) {
  const obj = key ? await bucket.get(key) : null;
  if (!obj) throw notFound(what);
  return new Response(obj.body, { headers: { "content-type": "application/octet-stream", "content-length": String(obj.size) } });
}

/**
 * Routes of compute hosts, behind an agent token bound to one node. A node reaches only the work
 * the dispatcher assigned to it and still holds open (services/agent-work.ts); it never sees
 * account tokens.
 */
export const agentRoutes = new Hono<AppEnv>()
  .get("/config", describeRoute({
    summary: "Dispatcher shard count and the token's node id",
    group: "agent", auth: "agent",
    ok: { status: 200, description: "{shards, nodeId}", contentType: "application/json" },
    errors: [401],
  }), (c) => c.json({ shards: shardCount(c.env), nodeId: c.var.agent.nodeId }))
  .get("/connect", describeRoute({
    summary: "The agent WebSocket (protocol in shared/protocol)",
    group: "agent", auth: "agent",
    ok: { status: 101, description: "Switching protocols." },
    errors: [400, 401],
  }), async (c) => {
    const shard = Number(c.req.query("shard") ?? "0");
    if (!Number.isInteger(shard) || shard < 0 || shard >= shardCount(c.env)) throw new ApiError("validation_failed", `shard must be an integer from 0 to ${shardCount(c.env) - 1}`);
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") throw new ApiError("validation_failed", "expected a WebSocket upgrade");
    return shardStub(c.env, shard).fetch(forwardConnect(c.req.raw, c.var.agent, { shard, shards: shardCount(c.env) }));
  })
  .get("/status", describeRoute({
    summary: "Queues of every shard, and the calling node's connections",
    group: "agent", auth: "agent",
    ok: { status: 200, description: "{shards: [{waiting, running, agents}]}: agents holds only the calling node's entry", contentType: "application/json" },
    errors: [401],
  }), async (c) => {
    // A compute host sees the queues' sizes and its own connections, not the rest of the fleet.
    const shards = await Promise.all(allShards(c.env).map((s) => s.status(c.var.agent.nodeId)));
    return c.json({ shards });
  })
  .get("/builds/:id/source", describeRoute({
    summary: "A build's zip",
    group: "agent", auth: "agent",
    ok: { status: 200, description: "The zip.", contentType: "application/octet-stream" },
    errors: [401, 404],
  }), async (c) => streamObject(c.env.BUCKET, (await agentBuild(c, c.req.param("id"), "build", "build source")).zipKey, "build source"))
  .put("/builds/:id/artifact", describeRoute({
    summary: "Upload a build's artifact",
    group: "agent", auth: "agent",
    body: { contentType: "application/octet-stream", required: true },
    ok: noContent,
    errors: [401, 404, 411, 413],
  }), async (c) => {
    const b = await agentBuild(c, c.req.param("id"), "build", "build");
    // The dispatcher lets go of a build as it ends; its record saying so is the second lock.
    if (b.status === "SUCCESS" || b.status === "FAILED") throw notFound("build");
    await putSized(c.env.BUCKET, artifactKey(b.accountId, b.functionId, b.id), c.req.raw, MAX_ARTIFACT_BYTES);
    return c.body(null, 204);
  })
  // The build's whole log, bounded by the agent; the cap here is what it may be at most.
  .put("/builds/:id/log", describeRoute({
    summary: "Upload a build's whole log as text (at most 4 MiB of lines and a short trailer), before build.done",
    group: "agent", auth: "agent",
    body: { contentType: "text/plain", required: true },
    ok: noContent,
    errors: [401, 404, 411, 413],
  }), async (c) => {
    const b = await agentBuild(c, c.req.param("id"), "build", "build");
    if (b.status === "SUCCESS" || b.status === "FAILED") throw notFound("build");
    await putSized(c.env.BUCKET, buildLogKey(b.accountId, b.functionId, b.id), c.req.raw, BUILD_LOG_TEXT_BYTES + BUILD_LOG_TRAILER_BYTES);
    return c.body(null, 204);
  })
  .get("/builds/:id/artifact", describeRoute({
    summary: "Download a build's artifact",
    group: "agent", auth: "agent",
    ok: { status: 200, description: "The artifact tar.", contentType: "application/octet-stream" },
    errors: [401, 404],
  }), async (c) => {
    const b = await agentBuild(c, c.req.param("id"), "artifact", "artifact");
    return streamObject(c.env.BUCKET, artifactKey(b.accountId, b.functionId, b.id), "artifact");
  })
  .get("/tasks/:id/input", describeRoute({
    summary: "A task's input",
    group: "agent", auth: "agent",
    ok: { status: 200, description: "{method, query, headers, body}", contentType: "application/json" },
    errors: [401, 404],
  }), async (c) => {
    const t = await agentTask(c, c.req.param("id"), "task input");
    if (t.input) return c.body(t.input, 200, { "content-type": "application/json" });
    return streamObject(c.env.BUCKET, t.inputKey, "task input");
  })
  .put("/tasks/:id/result", describeRoute({
    summary: "Upload a large result body",
    group: "agent", auth: "agent",
    body: { contentType: "application/octet-stream", required: true },
    ok: noContent,
    errors: [400, 401, 404, 411, 413],
  }), async (c) => {
    const t = await agentTask(c, c.req.param("id"), "task");
    await putSized(c.env.BUCKET, taskResultKey(t.accountId, t.id), c.req.raw, MAX_RESULT_BYTES);
    return c.body(null, 204);
  })
  // A storage value too large for the report frame: the task PUTs it under its own id.
  .put("/tasks/:id/storage/:setBy", describeRoute({
    summary: "Upload a storage value too large for the report frame (the task's own id as setBy)",
    group: "agent", auth: "agent",
    body: { contentType: "application/octet-stream", required: true },
    ok: noContent,
    errors: [401, 404, 411, 413],
  }), async (c) => {
    const t = await agentTask(c, c.req.param("id"), "task");
    if (c.req.param("setBy") !== t.id) throw notFound("task");
    await putSized(c.env.BUCKET, storageValueKey(t.accountId, t.functionId, t.id), c.req.raw, MAX_STORAGE_BYTES);
    return c.body(null, 204);
  })
  // A later task of the same function reads the value the task `setBy` stored.
  .get("/tasks/:id/storage/:setBy", describeRoute({
    summary: "The storage value task setBy stored, for a later task of the same function",
    group: "agent", auth: "agent",
    ok: { status: 200, description: "The stored bytes.", contentType: "application/octet-stream" },
    errors: [401, 404],
  }), async (c) => {
    const t = await agentTask(c, c.req.param("id"), "task");
    if (!/^[a-z0-9]{1,64}$/.test(c.req.param("setBy"))) throw notFound("storage");
    return streamObject(c.env.BUCKET, storageValueKey(t.accountId, t.functionId, c.req.param("setBy")), "storage");
  })
  .put("/tasks/:id/log", describeRoute({
    summary: "Upload a log too large for the report frame (a JSON array of lines)",
    group: "agent", auth: "agent",
    body: { contentType: "application/json", required: true },
    ok: noContent,
    errors: [400, 401, 404, 411, 413],
  }), async (c) => {
    const t = await agentTask(c, c.req.param("id"), "task");
    await storeUploadedLog(c.env.BUCKET, t, c.req.raw);
    return c.body(null, 204);
  });

