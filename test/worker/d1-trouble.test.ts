import { createExecutionContext, env, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { TOKEN_CACHE_MS } from "../../worker/lib/token-cache.js";
import worker from "../../worker/index.js";
import type { Bindings } from "../../worker/env.js";
import { ADMIN, call, callJson, clearQueue, deployedFunction, expectError, holdRecords, newAccount, newEndpoint, onRowlessTasks } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";
import { counterFor } from "../../worker/counters/client.js";
import { openDb } from "../../worker/db/client.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

/**
 * D1 trouble on purpose (worker/db/d1-trouble.ts): the Worker as a deployment with the test
 * control (D1_TEST_FAILURES = "1") or a delay (D1_DELAY_MS) would run it. The Worker is called
 * with those bindings added; the suite's own Worker (SELF) has neither, as wrangler.toml.
 */
const withTrouble = (vars: Partial<Bindings>) => async (path: string, init: RequestInit & { token?: string } = {}) => {
  const { token, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (token) headers.set("authorization", `Bearer ${token}`);
  const ctx = createExecutionContext();
  const res = await worker.fetch(new Request(`https://api.test${path}`, { ...rest, headers }), { ...(env as unknown as Bindings), ...vars }, ctx);
  await waitOnExecutionContext(ctx);
  return res;
};

const testing = withTrouble({ D1_TEST_FAILURES: "1" });
const control = async (method: string, query = "") => (await testing(`/__test/d1${query}`, { method, token: ADMIN })).json() as Promise<{ failing: boolean; failed: number; delayed: number; delayMs: number }>;

afterEach(async () => {
  await testing("/__test/d1", { method: "DELETE", token: ADMIN });
  await FakeAgent.closeAll();
});

/**
 * The endpoint's object (the public door's facts, worker/endpoint-door/) reading D1 through the
 * same trouble as the Worker above: a Durable Object has the suite's own bindings, so its D1 is
 * pointed at the troubled one, as dispatch-d1-outage.test.ts does with a shard's.
 */
const troubledDoor = (endpointId: string, vars: Partial<Bindings> = { D1_TEST_FAILURES: "1" }) =>
  runInDurableObject(counterFor(env, endpointId), (o) => {
    (o as unknown as { db: unknown }).db = openDb({ ...(env as unknown as Bindings), ...vars });
  });

describe("POST /__test/d1 (the failure control)", () => {
  it("is an unknown route unless D1_TEST_FAILURES is set", async () => {
    await expectError(call("/__test/d1?failForMs=60000", { method: "POST", token: ADMIN }), 404, "not_found");
  });

  it("takes only the admin token, a whole number of milliseconds and a known mode", async () => {
    expect((await testing("/__test/d1?failForMs=1000", { method: "POST" })).status).toBe(401);
    await expectError(testing("/__test/d1?failForMs=-5", { method: "POST", token: ADMIN }), 400, "validation_failed");
    await expectError(testing("/__test/d1?failForMs=1.5", { method: "POST", token: ADMIN }), 400, "validation_failed");
    await expectError(testing("/__test/d1?failForMs=1000&mode=sometimes", { method: "POST", token: ADMIN }), 400, "validation_failed");
    expect((await control("GET")).failing).toBe(false);
  });
});

describe("the API while D1 fails", () => {
  it("answers 503 storage_unavailable with Retry-After, and as before once D1 is back", async () => {
    const { token } = await newAccount("outage");
    expect((await control("POST", "?failForMs=60000")).failing).toBe(true);
    const list = await testing("/v1/function/list", { token });
    expect(list.headers.get("retry-after")).toBe("5");
    await expectError(list, 503, "storage_unavailable");
    await expectError(testing("/v1/function", { method: "POST", token, body: JSON.stringify({ name: "f", lang: "PY", type: "DOCKER" }), headers: { "content-type": "application/json" } }), 503, "storage_unavailable");
    expect((await control("GET")).failed).toBeGreaterThanOrEqual(2);
    await control("DELETE");
    expect(await callJson("/v1/function/list", 200, { token })).toEqual([]);
  });

  it("keeps opening routes for a token seen valid lately, past its cache time, and answers an unseen token 503", async () => {
    const { token } = await newAccount("stale-token");
    const fn = await deployedFunction(token);
    await holdRecords(true); // the task stays in its shard only
    const created = await testing(`/v1/task/${fn}`, { method: "POST", token });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    await control("POST", "?failForMs=600000");
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + TOKEN_CACHE_MS + 1_000);
      const read = await testing(`/v1/task/${id}`, { token });
      expect(read.status).toBe(200);
      expect(((await read.json()) as { id: string }).id).toBe(id);
      await expectError(testing(`/v1/task/${id}`, { token: "gc_never_seen_by_this_isolate" }), 503, "storage_unavailable");
    } finally {
      vi.useRealTimers();
      await control("DELETE");
      await holdRecords(false);
    }
  });

  it("ends the window by itself when its time is up", async () => {
    const { token } = await newAccount("short-outage");
    await control("POST", "?failForMs=0");
    expect((await testing("/v1/function/list", { token })).status).toBe(200);
  });
});

describe("ANY /gc/<endpoint_id> while D1 fails", () => {
  beforeEach(clearQueue); // the agent below takes the tasks of these tests only
  it("keeps creating tasks, counting the daily limit and answering synchronous calls for an endpoint it served before, with no D1 round trip", async () => {
    const { token } = await newAccount("door-outage");
    const fn = await deployedFunction(token);
    const ep = await newEndpoint(token, fn, { dailyLimit: 3, origin: ["https://app.example"] });
    await troubledDoor(ep);
    const agent = await FakeAgent.connect("door-outage", { slots: 4 });
    const origin = { origin: "https://app.example" };
    expect((await testing(`/gc/${ep}`, { method: "POST", headers: origin })).status).toBe(201); // served once
    await control("POST", "?failForMs=600000");

    const created = await testing(`/gc/${ep}`, { method: "POST", headers: origin });
    expect({ status: created.status, cors: created.headers.get("access-control-allow-origin") }).toEqual({ status: 201, cors: "https://app.example" });
    const preflight = await testing(`/gc/${ep}`, { method: "OPTIONS", headers: origin });
    expect({ status: preflight.status, cors: preflight.headers.get("access-control-allow-origin") }).toEqual({ status: 204, cors: "https://app.example" });
    const sync = testing(`/gc/${ep}`, { method: "POST", headers: { ...origin, prefer: "wait=10" } });
    for (let i = 0; i < 3; i++) agent.done((await agent.next("task.assign", 10_000)).taskId, "answered in the outage");
    const res = await sync;
    expect({ status: res.status, applied: res.headers.get("preference-applied"), body: await res.text() }).toEqual({ status: 200, applied: "wait", body: "answered in the outage" });
    // The daily limit is counted where it always was, in the endpoint's object: the fourth call is refused.
    await expectError(testing(`/gc/${ep}`, { method: "POST", headers: origin }), 429, "daily_limit_reached");
    await expectError(testing(`/gc/${ep}`, { method: "POST", headers: { origin: "https://evil.example" } }), 403, "origin_not_allowed");
    // Nothing on the way asked D1: no round trip of the Worker or of the endpoint's object failed.
    expect((await control("GET")).failed).toBe(0);
  });

  it("answers 503 for an endpoint it never served (it cannot know it), and as usual once D1 is back", async () => {
    const { token } = await newAccount("door-cold");
    const fn = await deployedFunction(token);
    const ep = await newEndpoint(token, fn);
    await troubledDoor(ep);
    await troubledDoor("nosuchendpoint");
    await control("POST", "?failForMs=600000");
    const cold = await testing(`/gc/${ep}`, { method: "POST" });
    expect(cold.headers.get("retry-after")).toBe("5");
    await expectError(cold, 503, "storage_unavailable");
    await expectError(testing("/gc/nosuchendpoint", { method: "POST" }), 503, "storage_unavailable");
    await control("DELETE");
    expect((await testing(`/gc/${ep}`, { method: "POST" })).status).toBe(201);
    await expectError(testing("/gc/nosuchendpoint", { method: "POST" }), 404, "not_found");
  });

  it("answers 404 for an endpoint deleted before the outage, itself or with its function", async () => {
    const { token } = await newAccount("door-gone");
    const fn = await deployedFunction(token);
    const [ep, other] = [await newEndpoint(token, fn), await newEndpoint(token, await deployedFunction(token))];
    for (const id of [ep, other]) {
      await troubledDoor(id);
      expect((await testing(`/gc/${id}`, { method: "POST" })).status).toBe(201);
    }
    await callJson(`/v1/endpoint/${ep}`, 204, { token, method: "DELETE" });
    const otherFn = (await callJson<{ functionId: string }>(`/v1/endpoint/${other}`, 200, { token })).functionId;
    await callJson(`/v1/function/${otherFn}`, 204, { token, method: "DELETE" });
    await control("POST", "?failForMs=600000");
    await expectError(testing(`/gc/${ep}`, { method: "POST" }), 404, "not_found");
    await expectError(testing(`/gc/${other}`, { method: "POST" }), 404, "not_found");
  });
});

describe("D1_DELAY_MS", () => {
  it("holds back every D1 round trip, and the API answers as without it", async () => {
    const { token } = await newAccount("far-primary");
    const delayed = withTrouble({ D1_TEST_FAILURES: "1", D1_DELAY_MS: "7" });
    const before = (await (await delayed("/__test/d1", { token: ADMIN })).json()) as { delayed: number; delayMs: number };
    expect(before.delayMs).toBe(7);
    const res = await delayed("/v1/function/list", { token });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([]);
    const after = (await (await delayed("/__test/d1", { token: ADMIN })).json()) as { delayed: number };
    // At least the token's lookup and the list's own query went through the delay.
    expect(after.delayed - before.delayed).toBeGreaterThanOrEqual(2);
  });

  it("is not paid by /gc once its endpoint was served: its facts are read from D1 once, not per call", async () => {
    const { token } = await newAccount("far-door");
    const ep = await newEndpoint(token, await deployedFunction(token));
    const vars = { D1_TEST_FAILURES: "1", D1_DELAY_MS: "3" };
    const delayed = withTrouble(vars);
    await troubledDoor(ep, vars);
    const state = async () => ((await (await delayed("/__test/d1", { token: ADMIN })).json()) as { delayed: number }).delayed;
    const first = await state();
    expect((await delayed(`/gc/${ep}`, { method: "POST" })).status).toBe(201);
    const second = await state();
    expect(second - first).toBe(1); // the endpoint's object read its facts
    for (let i = 0; i < 3; i++) expect((await delayed(`/gc/${ep}`, { method: "POST" })).status).toBe(201);
    expect(await state()).toBe(second);
  });
});
