import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, expectError, markBuild, newAccount, newEndpoint, uploadBuild, flushedDb } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";
import { counterFor } from "../../worker/counters/client.js";
import { dispatcherFor } from "../../worker/dispatch/client.js";
import { openDb } from "../../worker/db/client.js";
import type { Bindings } from "../../worker/env.js";
import { HOUR_MS } from "../../worker/lib/time.js";
import { archiveTasks } from "../../worker/task-history/archiver.js";
import { archiveAfterMs } from "../../worker/task-history/window.js";

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

async function setup(endpoint?: Record<string, unknown>) {
  const acct = await newAccount();
  const fn = await deployedFunction(acct.token);
  const ep = endpoint ? await newEndpoint(acct.token, fn, endpoint) : "";
  return { ...acct, fn, ep };
}

const keyed = (key: string, more: Record<string, string> = {}) => ({ "idempotency-key": key, ...more });

/** The tasks D1 holds for a function. */
const taskCount = async (fn: string) => (await (await flushedDb()).prepare("select count(*) as n from tasks where function_id = ?").bind(fn).first<{ n: number }>())!.n;

/** The agent answers the next task with a text body. */
async function answerNext(agent: FakeAgent, body = "done") {
  const assign = await agent.next("task.assign", 10_000);
  agent.send({ type: "task.done", taskId: assign.taskId, status: 200, headers: { "content-type": "text/plain" }, body: btoa(body), bodyUploaded: false, log: ["ran"], durationMs: 2 });
  return assign.taskId;
}

/** Makes every key the shard remembers older than 24 hours, as if a day had passed. */
const ageKeys = (fn: string) =>
  runInDurableObject(dispatcherFor(env, fn), (_o, state) => {
    state.storage.sql.exec("update idempotency_key set at = at - 86400001");
  });

describe("POST /v1/task/<function_id> with Idempotency-Key", () => {
  it("makes one task of fifty concurrent calls with one key, and reserves one invocation", async () => {
    const { token, fn } = await setup();
    const answers = await Promise.all(Array.from({ length: 50 }, () => call(`/v1/task/${fn}`, { token, json: { n: 1 }, headers: keyed("order-42") })));
    expect(answers.map((r) => r.status)).toEqual(Array(50).fill(201));
    const ids = new Set(await Promise.all(answers.map(async (r) => ((await r.json()) as { id: string }).id)));
    expect(ids.size).toBe(1);
    expect(answers.filter((r) => r.headers.get("idempotent-replayed") === "true")).toHaveLength(49);
    expect(await taskCount(fn)).toBe(1);
    expect(await callJson("/v1/usage", 200, { token })).toMatchObject({ pending: 1 });
  });

  it("answers a retry after the task finished with the task's response when it prefers to wait", async () => {
    const { token, fn } = await setup();
    const agent = await FakeAgent.connect("idem-1");
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, json: { n: 1 }, headers: keyed("k-1") });
    expect(await answerNext(agent, "first answer")).toBe(id);
    const again = await call(`/v1/task/${fn}`, { token, json: { n: 1 }, headers: keyed("k-1", { prefer: "wait=10" }) });
    expect(again.status).toBe(200);
    expect(await again.text()).toBe("first answer");
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("x-task-id")).toBe(id);
    expect(again.headers.get("preference-applied")).toBe("wait");
    // Without Prefer the retry gets the first call's own answer, 201 {id}.
    const plain = await call(`/v1/task/${fn}`, { token, json: { n: 1 }, headers: keyed("k-1") });
    expect(plain.status).toBe(201);
    expect(await plain.json()).toEqual({ id });
    expect(await taskCount(fn)).toBe(1);
  });

  it("waits, as a retry with Prefer: wait, for the first call's task to finish", async () => {
    const { token, fn } = await setup();
    const agent = await FakeAgent.connect("idem-2");
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, json: {}, headers: keyed("k-2") });
    const waiting = call(`/v1/task/${fn}`, { token, json: {}, headers: keyed("k-2", { prefer: "wait=10" }) });
    await answerNext(agent, "later");
    const res = await waiting;
    expect(res.headers.get("x-task-id")).toBe(id);
    expect(await res.text()).toBe("later");
  });

  it("answers 409 idempotency_conflict for the same key with a different body or query, and runs nothing", async () => {
    const { token, fn } = await setup();
    await callJson(`/v1/task/${fn}`, 201, { token, json: { n: 1 }, headers: keyed("k-3") });
    await expectError(call(`/v1/task/${fn}`, { token, json: { n: 2 }, headers: keyed("k-3") }), 409, "idempotency_conflict");
    await expectError(call(`/v1/task/${fn}?x=1`, { token, json: { n: 1 }, headers: keyed("k-3") }), 409, "idempotency_conflict");
    expect(await taskCount(fn)).toBe(1);
  });

  it("reads the query as parameters, not as text, and ignores other headers", async () => {
    const { token, fn } = await setup();
    const { id } = await callJson(`/v1/task/${fn}?a=1&b=2`, 201, { token, json: {}, headers: keyed("k-4", { "user-agent": "one" }) });
    const again = await callJson(`/v1/task/${fn}?b=2&a=1`, 201, { token, json: {}, headers: keyed("k-4", { "user-agent": "two" }) });
    expect(again).toEqual({ id });
  });

  it("keeps keys apart per function and per account", async () => {
    const a = await setup();
    const other = await deployedFunction(a.token);
    const b = await setup();
    const first = await callJson(`/v1/task/${a.fn}`, 201, { token: a.token, json: {}, headers: keyed("shared") });
    const second = await callJson(`/v1/task/${other}`, 201, { token: a.token, json: {}, headers: keyed("shared") });
    const third = await callJson(`/v1/task/${b.fn}`, 201, { token: b.token, json: {}, headers: keyed("shared") });
    expect(new Set([first.id, second.id, third.id]).size).toBe(3);
    // Another account's key never reveals its task: the same function id is simply not theirs.
    await expectError(call(`/v1/task/${a.fn}`, { token: b.token, json: {}, headers: keyed("shared") }), 404, "not_found");
  });

  it("frees the key of a refused call, so a retry once the cause is gone makes the task", async () => {
    const { token } = await newAccount();
    const fn = (await callJson("/v1/function", 201, { token, json: { name: "later", lang: "PY", type: "DOCKER" } })).id;
    await expectError(call(`/v1/task/${fn}`, { token, json: {}, headers: keyed("k-5") }), 409, "no_successful_build");
    await markBuild((await uploadBuild(token, fn)).id);
    const res = await call(`/v1/task/${fn}`, { token, json: {}, headers: keyed("k-5") });
    expect(res.status).toBe(201);
    expect(res.headers.get("idempotent-replayed")).toBeNull();
  });

  it("forgets a key after 24 hours: the same key makes a new task", async () => {
    const { token, fn } = await setup();
    const first = await callJson(`/v1/task/${fn}`, 201, { token, json: {}, headers: keyed("k-6") });
    await ageKeys(fn);
    const res = await call(`/v1/task/${fn}`, { token, json: { other: true }, headers: keyed("k-6") });
    expect(res.status).toBe(201);
    expect(res.headers.get("idempotent-replayed")).toBeNull();
    expect(((await res.json()) as { id: string }).id).not.toBe(first.id);
  });

  it("refuses a key that is empty, longer than 255 characters or not printable ASCII with 400", async () => {
    const { token, fn } = await setup();
    for (const bad of ["", "x".repeat(256), "tab\there", "caf\u00e9"]) {
      const res = await call(`/v1/task/${fn}`, { token, json: {}, headers: keyed(bad) });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: "validation_failed", details: [{ field: "Idempotency-Key" }] } });
    }
    expect(await taskCount(fn)).toBe(0);
    expect((await call(`/v1/task/${fn}`, { token, json: {}, headers: keyed("x".repeat(255)) })).status).toBe(201);
  });
});

describe("/gc/<endpoint_id> with Idempotency-Key", () => {
  const gc = (ep: string, key: string, o: { headers?: Record<string, string>; body?: string; query?: string } = {}) =>
    call(`/gc/${ep}${o.query ?? ""}`, { method: "POST", body: o.body ?? "hello", headers: { "content-type": "text/plain", ...keyed(key), ...o.headers } });

  it("makes one task of fifty concurrent calls with one key and counts it once against the daily limit", async () => {
    const { token, fn, ep } = await setup({ dailyLimit: 2 });
    const answers = await Promise.all(Array.from({ length: 50 }, () => gc(ep, "pay-7")));
    expect(answers.map((r) => r.status)).toEqual(Array(50).fill(201));
    expect(new Set(await Promise.all(answers.map(async (r) => ((await r.json()) as { id: string }).id))).size).toBe(1);
    expect(await taskCount(fn)).toBe(1);
    expect(await counterFor(env, ep).count(new Date().toISOString().slice(0, 10))).toBe(1);
    expect((await callJson(`/v1/endpoint/${ep}/metrics`, 200, { token })).todayTasks).toBe(1);
    // The limit of 2 has room for exactly one more call.
    expect((await gc(ep, "pay-8")).status).toBe(201);
    await expectError(gc(ep, "pay-9"), 429, "daily_limit_reached");
    // A replay is not a new call: it is answered even with the day's calls used up.
    expect((await gc(ep, "pay-7")).headers.get("idempotent-replayed")).toBe("true");
  });

  it("replays the synchronous answer of a finished call, with the endpoint's CORS headers", async () => {
    const { fn, ep } = await setup({ origin: ["https://app.example.com"] });
    const agent = await FakeAgent.connect("idem-3");
    const headers = { prefer: "wait=10", origin: "https://app.example.com" };
    const first = gc(ep, "k-7", { headers });
    const taskId = await answerNext(agent, "public answer");
    expect(await (await first).text()).toBe("public answer");
    const again = await gc(ep, "k-7", { headers });
    expect(again.status).toBe(200);
    expect(await again.text()).toBe("public answer");
    expect(again.headers.get("x-task-id")).toBe(taskId);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(again.headers.get("access-control-expose-headers")).toContain("Idempotent-Replayed");
    expect(await taskCount(fn)).toBe(1);
  });

  it("answers 409 idempotency_conflict for the same key with a different body, query or method", async () => {
    const { ep } = await setup({ dailyLimit: 5 });
    expect((await gc(ep, "k-8")).status).toBe(201);
    await expectError(gc(ep, "k-8", { body: "other" }), 409, "idempotency_conflict");
    await expectError(gc(ep, "k-8", { query: "?page=2" }), 409, "idempotency_conflict");
    await expectError(call(`/gc/${ep}`, { method: "PUT", body: "hello", headers: { "content-type": "text/plain", ...keyed("k-8") } }), 409, "idempotency_conflict");
    expect(await counterFor(env, ep).count(new Date().toISOString().slice(0, 10))).toBe(1);
  });

  it("keeps the endpoint's access rules for a replay", async () => {
    const { ep } = await setup({ ip: ["10.0.0.1"] });
    expect((await gc(ep, "k-9", { headers: { "cf-connecting-ip": "10.0.0.1" } })).status).toBe(201);
    await expectError(gc(ep, "k-9", { headers: { "cf-connecting-ip": "10.9.9.9" } }), 403, "ip_not_allowed");
  });
});

describe("Idempotency-Key replays of a task whose record moved to the archive", () => {
  // The key is kept 24 hours; the record leaves D1 for the archive an hour after its finish.
  const archived = async (fn: string) => {
    await flushedDb();
    const bindings = env as unknown as Bindings;
    expect(await archiveTasks(openDb(bindings), env.BUCKET, archiveAfterMs(bindings), Date.now() + 2 * HOUR_MS, { chunkSize: 1 })).toBeGreaterThan(0);
    expect(await taskCount(fn)).toBe(0);
  };

  it("POST /v1/task/<function_id> answers the archived task's response", async () => {
    const { token, fn } = await setup();
    const agent = await FakeAgent.connect("idem-archived-1");
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, json: { n: 1 }, headers: keyed("k-archived") });
    expect(await answerNext(agent, "kept answer")).toBe(id);
    await archived(fn);
    const again = await call(`/v1/task/${fn}`, { token, json: { n: 1 }, headers: keyed("k-archived", { prefer: "wait=10" }) });
    expect([again.status, await again.text(), again.headers.get("x-task-id"), again.headers.get("idempotent-replayed")]).toEqual([200, "kept answer", id, "true"]);
  });

  it("/gc/<endpoint_id> answers the archived call's response", async () => {
    const { fn, ep } = await setup({});
    const agent = await FakeAgent.connect("idem-archived-2");
    const gc = (key: string) => call(`/gc/${ep}`, { method: "POST", body: "hello", headers: { "content-type": "text/plain", prefer: "wait=10", ...keyed(key) } });
    const first = gc("k-archived");
    const taskId = await answerNext(agent, "public kept answer");
    expect(await (await first).text()).toBe("public kept answer");
    await archived(fn);
    const again = await gc("k-archived");
    expect([again.status, await again.text(), again.headers.get("x-task-id"), again.headers.get("idempotent-replayed")]).toEqual([200, "public kept answer", taskId, "true"]);
  });
});
