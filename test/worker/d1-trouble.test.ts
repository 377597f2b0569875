import { createExecutionContext, env, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { TOKEN_CACHE_MS } from "../../worker/lib/token-cache.js";
import worker from "../../worker/index.js";
import type { Bindings } from "../../worker/env.js";
import { ADMIN, call, callJson, deployedFunction, expectError, holdRecords, newAccount } from "./helpers.js";

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
});
