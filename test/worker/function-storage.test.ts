import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, expectError, newAccount, flushedDb, onRowlessTasks } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const task = (token: string, fn: string) => callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: {} }).then((r) => r.id);
const b64 = (s: string) => btoa(s);

/** Runs one task of `fn` on `agent`, answering with a storage change; returns what the task was handed. */
async function runWith(agent: FakeAgent, token: string, fn: string, storage?: Record<string, unknown>) {
  const id = await task(token, fn);
  const assign = await agent.next("task.assign");
  expect(assign.taskId).toBe(id);
  agent.done(id, "ok", 200, storage ? { storage } : {});
  await agent.next("ack");
  await call(`/v1/task/${id}/result?wait=5`, { token });
  return assign;
}

describe("GC-Storage through the dispatcher", () => {
  it("hands a value a task set to the function's next tasks, and to the owner's read", async () => {
    const agent = await FakeAgent.connect("storage-1", { slots: 1 });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    expect((await runWith(agent, token, fn, { op: "set", size: 20, value: b64("I am a storage Test!") })).storage).toBeUndefined();
    expect((await runWith(agent, token, fn)).storage).toEqual({ value: b64("I am a storage Test!") });
    const read = await callJson(`/v1/function/${fn}/storage`, 200, { token });
    expect(read).toMatchObject({ size: 20, value: b64("I am a storage Test!") });
    expect(Date.parse(read.updatedAt)).toBeGreaterThan(0);
  });

  it("lets the last finished task win, clears on an empty value, and keeps two functions apart", async () => {
    const agent = await FakeAgent.connect("storage-2", { slots: 1 });
    const { token } = await newAccount();
    const a = await deployedFunction(token, { name: "a" });
    const b = await deployedFunction(token, { name: "b" });
    await runWith(agent, token, a, { op: "set", size: 5, value: b64("first") });
    await runWith(agent, token, a, { op: "set", size: 6, value: b64("second") });
    await runWith(agent, token, b, { op: "set", size: 5, value: b64("other") });
    expect((await runWith(agent, token, a)).storage).toEqual({ value: b64("second") });
    expect((await callJson(`/v1/function/${b}/storage`, 200, { token })).value).toBe(b64("other"));
    await runWith(agent, token, a, { op: "clear" });
    expect((await runWith(agent, token, a)).storage).toBeUndefined();
    await expectError(call(`/v1/function/${a}/storage`, { token }), 404, "not_found");
  });

  it("is the owner's only: another account reads and clears nothing", async () => {
    const agent = await FakeAgent.connect("storage-3", { slots: 1 });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await runWith(agent, token, fn, { op: "set", size: 6, value: b64("secret") });
    const stranger = await newAccount("stranger");
    await expectError(call(`/v1/function/${fn}/storage`, { token: stranger.token }), 404, "not_found");
    await expectError(call(`/v1/function/${fn}/storage`, { token: stranger.token, method: "DELETE" }), 404, "not_found");
    expect((await callJson(`/v1/function/${fn}/storage`, 200, { token })).value).toBe(b64("secret"));
  });

  it("stops handing the value on once the owner clears it or deletes the function", async () => {
    const agent = await FakeAgent.connect("storage-4", { slots: 1 });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await runWith(agent, token, fn, { op: "set", size: 4, value: b64("kept") });
    await callJson(`/v1/function/${fn}/storage`, 204, { token, method: "DELETE" });
    expect((await runWith(agent, token, fn)).storage).toBeUndefined();
    await runWith(agent, token, fn, { op: "set", size: 4, value: b64("gone") });
    await callJson(`/v1/function/${fn}`, 204, { token, method: "DELETE" });
    const rows = await (await flushedDb()).prepare("select count(*) as n from function_storage where function_id = ?").bind(fn).first<{ n: number }>();
    expect(rows!.n).toBe(0);
  });

  it("takes a large value through R2: PUT by the setting task, GET by the next, read back by the owner", async () => {
    const agent = await FakeAgent.connect("storage-5", { slots: 1 });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const big = new Uint8Array(200_000).map((_, i) => (i * 7) % 256);
    const id = await task(token, fn);
    const assign = await agent.next("task.assign");
    const put = await call(assign.storagePath!, { token: agent.token, method: "PUT", body: big, headers: { "content-length": String(big.length) } });
    expect(put.status).toBe(204);
    agent.done(id, "ok", 200, { storage: { op: "set", size: big.length } });
    await agent.next("ack");
    await call(`/v1/task/${id}/result?wait=5`, { token });
    const nextId = await task(token, fn);
    const next = await agent.next("task.assign");
    expect(next.storage).toEqual({ path: `/v1/agent/tasks/${nextId}/storage/${id}` });
    const got = await call((next.storage as { path: string }).path, { token: agent.token });
    expect(new Uint8Array(await got.arrayBuffer())).toEqual(big);
    agent.done(nextId, "ok");
    await agent.next("ack");
    const read = await callJson(`/v1/function/${fn}/storage`, 200, { token });
    expect(read.size).toBe(big.length);
    expect(Uint8Array.from(atob(read.value), (c) => c.charCodeAt(0))).toEqual(big);
  });

  it("serves a stored value only to the node running an open task of that function", async () => {
    const agent = await FakeAgent.connect("storage-6", { slots: 1 });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await task(token, fn);
    const assign = await agent.next("task.assign");
    const other = await FakeAgent.connect("storage-7", { slots: 0 });
    await expectError(call(assign.storagePath!, { token: other.token, method: "PUT", body: "x", headers: { "content-length": "1" } }), 404, "not_found");
    await expectError(call(assign.storagePath!, { token: other.token }), 404, "not_found");
    agent.done(id, "ok");
    await agent.next("ack");
  });

  it("never hands a caller's own GC-Storage header to the function", async () => {
    const agent = await FakeAgent.connect("storage-8", { slots: 1 });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await callJson(`/v1/task/${fn}`, 201, { token, json: {}, headers: { "gc-storage": b64("forged") } });
    const assign = await agent.next("task.assign");
    expect(Object.keys(assign.input!.headers).map((k) => k.toLowerCase())).not.toContain("gc-storage");
    agent.done(assign.taskId, "ok");
    await agent.next("ack");
  });
});
