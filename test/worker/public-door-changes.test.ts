import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, call, callJson, clearQueue, deployedFunction, expectError, markBuild, newAccount, newEndpoint, sql, uploadBuild, onRowlessTasks } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";
import { counterFor } from "../../worker/counters/client.js";
import { DOOR_REFRESH_MS, DoorBook } from "../../worker/endpoint-door/book.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

/**
 * The public door answers from its endpoint's object (worker/endpoint-door/), not from D1. Every
 * change of what it holds must reach the very next call: these tests change one thing through the
 * API and call /gc at once, with no wait in between. (A pause and a resume: public-door.test.ts.)
 */
beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

async function setup(endpoint: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const acct = await newAccount("door");
  const fn = await deployedFunction(acct.token);
  const ep = await newEndpoint(acct.token, fn, endpoint);
  // Served once: the endpoint's object holds its facts from now on.
  expect((await gc(ep, headers)).status).toBe(201);
  return { ...acct, fn, ep };
}

const gc = (id: string, headers: Record<string, string> = {}) => call(`/gc/${id}`, { method: "POST", headers });
const idOf = async (res: Response) => ((await res.json()) as { id: string }).id;
const patchEndpoint = (token: string, ep: string, json: unknown) => callJson(`/v1/endpoint/${ep}`, 204, { token, method: "PATCH", json });

describe("DELETE /v1/endpoint/<id>, then /gc/<id>", () => {
  it("answers 404 from the next call on, preflight included", async () => {
    const { token, ep } = await setup({ origin: ["https://app.example"] }, { origin: "https://app.example" });
    await callJson(`/v1/endpoint/${ep}`, 204, { token, method: "DELETE" });
    await expectError(gc(ep, { origin: "https://app.example" }), 404, "not_found");
    await expectError(call(`/gc/${ep}`, { method: "OPTIONS", headers: { origin: "https://app.example" } }), 404, "not_found");
  });
});

describe("DELETE /v1/function/<id>, then /gc/<endpoint>", () => {
  it("answers 404 for every endpoint of the function from the next call on, not what it answered before", async () => {
    const { token, fn, ep } = await setup();
    const other = await newEndpoint(token, fn);
    expect((await gc(other)).status).toBe(201);
    await callJson(`/v1/function/${fn}/togglePause`, 204, { token, method: "POST" });
    await expectError(gc(ep), 503, "function_paused");
    await callJson(`/v1/function/${fn}`, 204, { token, method: "DELETE" });
    await expectError(gc(ep), 404, "not_found");
    await expectError(gc(other), 404, "not_found");
  });
});

describe("PATCH /v1/endpoint/<id>, then /gc/<id>", () => {
  it("applies a new daily limit from the next call on", async () => {
    const { token, ep } = await setup();
    await patchEndpoint(token, ep, { dailyLimit: 0 });
    await expectError(gc(ep), 429, "daily_limit_reached");
    await patchEndpoint(token, ep, { dailyLimit: 1 });
    expect((await gc(ep)).status).toBe(201);
    await expectError(gc(ep), 429, "daily_limit_reached");
    await patchEndpoint(token, ep, { dailyLimit: -1 });
    expect((await gc(ep)).status).toBe(201);
  });

  it("applies a new origin list, and its CORS headers, from the next call on", async () => {
    const { token, ep } = await setup();
    const agent = await FakeAgent.connect("door-cors", { slots: 4 });
    const open = await gc(ep, { origin: "https://a.example" });
    expect({ status: open.status, cors: open.headers.get("access-control-allow-origin") }).toEqual({ status: 201, cors: "https://a.example" });
    await patchEndpoint(token, ep, { origin: ["https://b.example"] });
    await expectError(gc(ep, { origin: "https://a.example" }), 403, "origin_not_allowed");
    const allowed = await gc(ep, { origin: "https://b.example" });
    expect({ status: allowed.status, cors: allowed.headers.get("access-control-allow-origin") }).toEqual({ status: 201, cors: "https://b.example" });
    const id = await idOf(allowed);
    for (let i = 0; i < 3; i++) agent.done((await agent.next("task.assign", 10_000)).taskId, "done");
    // The result route's CORS comes from the same facts.
    const result = await call(`/gc/${id}/result?wait=10`, { headers: { origin: "https://b.example" } });
    expect({ status: result.status, cors: result.headers.get("access-control-allow-origin") }).toEqual({ status: 200, cors: "https://b.example" });
  });

  it("applies a new ip list and time window from the next call on", async () => {
    const { token, ep } = await setup();
    await patchEndpoint(token, ep, { ip: ["10.0.0.7"] });
    await expectError(gc(ep, { "cf-connecting-ip": "10.0.0.8" }), 403, "ip_not_allowed");
    expect((await gc(ep, { "cf-connecting-ip": "10.0.0.7" })).status).toBe(201);
    // A window from two to three hours from now: not now.
    const h = new Date().getUTCHours();
    const hour = (n: number) => `${String((h + n) % 24).padStart(2, "0")}:00`;
    await patchEndpoint(token, ep, { ip: [], timeLimit: { from: hour(2), to: hour(3), timezone: "UTC" } });
    await expectError(gc(ep), 403, "outside_time_window");
    await patchEndpoint(token, ep, { timeLimit: null });
    expect((await gc(ep)).status).toBe(201);
  });
});

describe("a new build or release, then /gc/<endpoint>", () => {
  it("runs the function's newest build, then a pinned one, from the next call on", async () => {
    const { token, fn, ep } = await setup();
    const buildOf = async (res: Response) => (await callJson<{ buildId: string }>(`/v1/task/${await idOf(res)}`, 200, { token })).buildId;
    const first = (await callJson<{ buildId: string }>(`/v1/function/${fn}/release`, 200, { token })).buildId;
    expect(await buildOf(await gc(ep))).toBe(first);
    const second = (await uploadBuild(token, fn)).id;
    await markBuild(second);
    expect(await buildOf(await gc(ep))).toBe(second);
    await callJson(`/v1/function/${fn}/release`, 204, { token, method: "PUT", json: { buildId: first } });
    expect(await buildOf(await gc(ep))).toBe(first);
  });
});

describe("PATCH /v1/admin/accounts/<id> limits.syncWaits, then /gc/<endpoint>", () => {
  it("applies the account's new limit of synchronous waits from the next call on", async () => {
    const { accountId, ep } = await setup();
    const agent = await FakeAgent.connect("door-sync", { slots: 4 });
    await agent.next("task.assign", 10_000).then((a) => agent.done(a.taskId, "first")); // setup's call
    const waited = gc(ep, { prefer: "wait=10" });
    agent.done((await agent.next("task.assign", 10_000)).taskId, "waited");
    expect(await (await waited).text()).toBe("waited");
    await callJson(`/v1/admin/accounts/${accountId}`, 204, { token: ADMIN, method: "PATCH", json: { limits: { syncWaits: 0 } } });
    // No wait may be held: the call answers at once, as without Prefer, whenever the task finishes.
    const pending = gc(ep, { prefer: "wait=10" });
    agent.done((await agent.next("task.assign", 10_000)).taskId, "too late to be waited for");
    const res = await pending;
    expect({ status: res.status, applied: res.headers.get("preference-applied") }).toEqual({ status: 201, applied: null });
    expect(await res.json()).toEqual({ id: expect.stringMatching(/^[0-9a-z]+$/) });
  });
});

describe("another account's changes", () => {
  it("cannot reach an endpoint's door: its edit, delete and pause answer 404 and the door answers as before", async () => {
    const { fn, ep } = await setup();
    const stranger = await newAccount("stranger");
    await expectError(call(`/v1/endpoint/${ep}`, { token: stranger.token, method: "PATCH", json: { dailyLimit: 0 } }), 404, "not_found");
    await expectError(call(`/v1/endpoint/${ep}`, { token: stranger.token, method: "DELETE" }), 404, "not_found");
    await expectError(call(`/v1/function/${fn}/togglePause`, { token: stranger.token, method: "POST" }), 404, "not_found");
    await expectError(call(`/v1/function/${fn}`, { token: stranger.token, method: "DELETE" }), 404, "not_found");
    expect((await gc(ep)).status).toBe(201);
  });
});

describe("the endpoint's object", () => {
  it("catches a change whose notice was lost with its background refresh", async () => {
    const { ep } = await setup();
    await sql("update endpoints set daily_limit = 0 where id = ?", ep); // behind the API's back: no notice
    expect((await gc(ep)).status).toBe(201); // what the object holds, until it reads D1 again
    await runInDurableObject(counterFor(env, ep), async (o) => {
      const book = (o as unknown as { doorBook: Pick<DoorBook, "answer"> & { loading?: Promise<unknown> } }).doorBook;
      await book.answer(ep, Date.now() + DOOR_REFRESH_MS); // old enough: answered, and read again behind
      await book.loading;
    });
    await expectError(gc(ep), 429, "daily_limit_reached");
  });

  it("keeps its facts in storage: a fresh instance, as after an eviction, answers without D1", async () => {
    const { ep, fn } = await setup();
    const noD1 = () => {
      throw new Error("a fresh instance must not need D1 for an endpoint served before");
    };
    const answer = await runInDurableObject(counterFor(env, ep), (_o, state) => new DoorBook(state.storage.sql, noD1).answer(ep));
    expect(answer).toMatchObject({ facts: { endpoint: { id: ep, functionId: fn }, paused: false } });
  });

  it("keeps nothing for an id that is no endpoint, so probes leave no storage behind", async () => {
    await expectError(gc("nosuchendpoint"), 404, "not_found");
    const rows = await runInDurableObject(counterFor(env, "nosuchendpoint"), (_o, state) => state.storage.sql.exec("select * from door").toArray());
    expect(rows).toEqual([]);
  });
});
