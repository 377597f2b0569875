import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, call, callJson, clearQueue, deployedFunction, expectError, newAccount, newFunction, newTask, sql, tinyZip, uploadBuild, onRowlessTasks } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";
import { env } from "cloudflare:test";
import { sha256Hex } from "../../worker/lib/ids.js";
import { shardStub } from "../../worker/dispatch/client.js";
import { forwardConnect } from "../../worker/dispatch/nodes.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const put = (path: string, token: string, body: string) => call(path, { token, method: "PUT", body, headers: { "content-length": String(body.length) } });
const buildStatus = async (token: string, id: string) => (await callJson(`/v1/build/${id}`, 200, { token })).status as string;
const settle = () => new Promise((r) => setTimeout(r, 300));
const taskRecord = (token: string, id: string) => callJson(`/v1/task/${id}`, 200, { token });

/** A build assigned to `agent`, and the paths its assignment names. */
async function assignedBuild(agent: FakeAgent) {
  const { token } = await newAccount();
  const fn = await newFunction(token);
  const { id } = await uploadBuild(token, fn, tinyZip());
  const assign = await agent.next("build.assign");
  expect(assign.buildId).toBe(id);
  return { token, fn, id, assign };
}

/** Builds one function through `agent` to SUCCESS with `artifact` uploaded. */
async function builtBy(agent: FakeAgent, artifact: string) {
  const b = await assignedBuild(agent);
  expect((await put(b.assign.artifactPath, agent.token, artifact)).status).toBe(204);
  agent.send({ type: "build.done", buildId: b.id, ok: true, artifactSize: artifact.length });
  await eventually(async () => (await buildStatus(b.token, b.id)) === "SUCCESS");
  return b;
}

describe("agent tokens are bound to one node", () => {
  it("refuses a token minted before nodes were bound, telling the operator to mint another", async () => {
    const token = `gca_${"ab".repeat(32)}`;
    await sql("insert into tokens (id, account_id, kind, name, hash, created_at) values ('legacy', null, 'agent', 'old', ?, 0)", await sha256Hex(token));
    const err = await expectError(call("/v1/agent/config", { token }), 401, "unauthorized");
    expect(err.message).toMatch(/bound to no node.*nodeId/);
    await expectError(call("/v1/agent/connect", { token, headers: { upgrade: "websocket" } }), 401, "unauthorized");
  });

  it("closes a connection whose hello names another node, and the real node keeps its work", async () => {
    const real = await FakeAgent.connect("node-real");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await newTask(token, fn);
    await real.next("task.assign");
    const impostor = await FakeAgent.socket("node-real", await FakeAgent.token("node-impostor"));
    impostor.hello();
    expect(await impostor.whenClosed()).toEqual({ code: 4003, reason: "this token is bound to node node-impostor, the hello named node-real" });
    // Still the real node's: it was not pushed off, and its report is the one recorded.
    expect(await real.none("task.cancel")).toBe(true);
    expect(real.closed).toBe(false);
    expect((await call(`/v1/agent/tasks/${id}/input`, { token: real.token })).status).toBe(200);
    real.done(id, "from the real node");
    expect(await (await call(`/v1/task/${id}/result?wait=5`, { token })).text()).toBe("from the real node");
    expect((await taskRecord(token, id)).node).toBe("node-real");
  });

  it("lets a reconnect with the same token replace its own old socket, keeping its work", async () => {
    const first = await FakeAgent.connect("node-again");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await newTask(token, fn);
    await first.next("task.assign");
    const second = await FakeAgent.connect("node-again", { token: first.token, running: [{ kind: "task", id }] });
    expect((await first.whenClosed()).code).toBe(4001);
    second.done(id, "after the reconnect");
    expect(await (await call(`/v1/task/${id}/result?wait=5`, { token })).text()).toBe("after the reconnect");
  });
});

describe("agent routes serve a node only its own open work", () => {
  it("answers 404 to a token that was never assigned anything, on every route, and changes nothing", async () => {
    const worker = await FakeAgent.connect("node-worker");
    const intruder = await FakeAgent.token("node-intruder");
    const { token, fn, id: buildId, assign } = await assignedBuild(worker);
    await expectError(call(assign.sourcePath, { token: intruder }), 404, "not_found");
    await expectError(put(assign.artifactPath, intruder, "EVIL"), 404, "not_found");
    expect((await call(assign.sourcePath, { token: worker.token })).status).toBe(200);
    expect((await put(assign.artifactPath, worker.token, "GOOD")).status).toBe(204);
    worker.send({ type: "build.done", buildId, ok: true, artifactSize: 4 });
    await eventually(async () => (await buildStatus(token, buildId)) === "SUCCESS");

    const taskId = await newTask(token, fn, { secret: "input" });
    const run = await worker.next("task.assign");
    await expectError(call(run.inputPath, { token: intruder }), 404, "not_found");
    await expectError(call(run.artifactPath, { token: intruder }), 404, "not_found");
    await expectError(put(run.resultPath, intruder, "EVIL"), 404, "not_found");
    // The same calls from the node running the task: the input, the artifact it uploaded, its result.
    expect(await (await call(run.inputPath, { token: worker.token })).json()).toMatchObject({ body: JSON.stringify({ secret: "input" }) });
    expect(await (await call(run.artifactPath, { token: worker.token })).text()).toBe("GOOD");
    expect((await put(run.resultPath, worker.token, "big body")).status).toBe(204);
    worker.done(taskId, "", 200, { body: null, bodyUploaded: true });
    expect(await (await call(`/v1/task/${taskId}/result?wait=5`, { token })).text()).toBe("big body");
  });

  it("closes a task to its own node once it is recorded", async () => {
    const worker = await FakeAgent.connect("node-closing");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await newTask(token, fn);
    const run = await worker.next("task.assign");
    worker.done(id, "done");
    expect(await (await call(`/v1/task/${id}/result?wait=5`, { token })).text()).toBe("done");
    await expectError(call(run.inputPath, { token: worker.token }), 404, "not_found");
    await expectError(put(run.resultPath, worker.token, "rewritten"), 404, "not_found");
    expect(await (await call(`/v1/task/${id}/result`, { token })).text()).toBe("done");
  });

  it("never lets a finished build's artifact be overwritten, even by the node that built it", async () => {
    const builder = await FakeAgent.connect("node-builder");
    const { token, fn, assign } = await builtBy(builder, "ORIGINAL");
    await expectError(put(assign.artifactPath, builder.token, "SWAPPED!"), 404, "not_found");
    await newTask(token, fn);
    const run = await builder.next("task.assign");
    expect(await (await call(run.artifactPath, { token: builder.token })).text()).toBe("ORIGINAL");
  });
});

describe("GET /v1/agent/status", () => {
  it("shows a node the queues and its own connection, never another node's", async () => {
    const mine = await FakeAgent.connect("node-status-mine", { slots: 3 });
    await FakeAgent.connect("node-status-other", { slots: 7, privileged: true });
    const { shards } = await callJson("/v1/agent/status", 200, { token: mine.token });
    expect(shards[0]).toMatchObject({ waiting: expect.any(Number), running: expect.any(Number) });
    expect(shards[0].agents).toEqual([expect.objectContaining({ nodeId: "node-status-mine", slots: 3 })]);
    // The operator still sees both.
    const nodes: { id: string; connected: boolean }[] = await callJson("/v1/admin/nodes", 200, { token: ADMIN });
    expect(nodes.filter((n) => n.id.startsWith("node-status-") && n.connected).map((n) => n.id).sort()).toEqual(["node-status-mine", "node-status-other"]);
  });
});

describe("reports count only from the node the work is assigned to", () => {
  it("ignores another node's task.done for a task it does not run", async () => {
    const owner = await FakeAgent.connect("node-owner", { slots: 1 });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await newTask(token, fn);
    await owner.next("task.assign");
    const other = await FakeAgent.connect("node-other");
    other.done(id, "forged", 200);
    expect(await owner.none("task.cancel")).toBe(true);
    expect((await taskRecord(token, id)).finished).toBeNull();
    owner.done(id, "genuine");
    expect(await (await call(`/v1/task/${id}/result?wait=5`, { token })).text()).toBe("genuine");
    expect((await taskRecord(token, id)).node).toBe("node-owner");
  });

  it("ignores another node's build reports", async () => {
    const builder = await FakeAgent.connect("node-b1", { slots: 1 });
    const { token, id } = await assignedBuild(builder);
    const other = await FakeAgent.connect("node-b2");
    other.send({ type: "build.started", buildId: id });
    other.send({ type: "build.log", buildId: id, first: 0, lines: ["forged"] });
    other.send({ type: "build.done", buildId: id, ok: false, reason: "forged" });
    await settle(); // a frame has no acknowledgement: give the forged ones time to be handled
    const build = await callJson(`/v1/build/${id}`, 200, { token });
    expect({ status: build.status, log: build.log }).toEqual({ status: "PENDING", log: [] });
    builder.send({ type: "build.started", buildId: id });
    await eventually(async () => (await buildStatus(token, id)) === "BUILDING");
  });
});

describe("revoking an agent token", () => {
  it("closes the node's socket at once and puts its work back in the queue", async () => {
    const minted = await FakeAgent.mint("node-revoked");
    const revoked = await FakeAgent.connect("node-revoked", { token: minted.token });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await newTask(token, fn);
    await revoked.next("task.assign");
    await callJson(`/v1/admin/tokens/${minted.tokenId}`, 204, { token: ADMIN, method: "DELETE" });
    expect(await revoked.whenClosed()).toEqual({ code: 4004, reason: "the agent token was revoked" });
    const next = await FakeAgent.connect("node-next");
    expect((await next.next("task.assign")).taskId).toBe(id);
    await expectError(call(`/v1/agent/tasks/${id}/input`, { token: minted.token }), 401, "unauthorized");
    await expectError(call("/v1/agent/connect", { token: minted.token, headers: { upgrade: "websocket" } }), 401, "unauthorized");
  });

  it("refuses, at the dispatcher itself, a connect of a revoked token that another isolate still holds in its cache", async () => {
    const minted = await FakeAgent.mint("node-cached");
    await callJson(`/v1/admin/tokens/${minted.tokenId}`, 204, { token: ADMIN, method: "DELETE" });
    // What the Worker forwards for a token it found valid (in its cache): the binding it read.
    const stale = forwardConnect(new Request("https://api.test/v1/agent/connect", { headers: { upgrade: "websocket" } }), { nodeId: "node-cached", tokenId: minted.tokenId }, { shard: 0, shards: 1 });
    await expectError(shardStub(env, 0).fetch(stale), 401, "unauthorized");
    // A connect that did not come through the Worker names no token at all.
    await expectError(shardStub(env, 0).fetch(new Request("https://api.test/", { headers: { upgrade: "websocket" } })), 401, "unauthorized");
  });
});
