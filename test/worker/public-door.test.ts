import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { call, callJson, clearQueue, deployedFunction, expectError, finishTask, newAccount, newEndpoint, flushedDb } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";
import { counterFor } from "../../worker/counters/client.js";

beforeEach(clearQueue);

/** What Chromium sends when a person opens a link. */
const BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8";
afterEach(() => vi.useRealTimers());

/** Moves the Worker's clock (same isolate as the test); storage timers are not involved. */
const setNow = (iso: string) => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(new Date(iso));
};

async function setup(endpoint: Record<string, unknown> = {}) {
  const acct = await newAccount();
  const fn = await deployedFunction(acct.token);
  const ep = await newEndpoint(acct.token, fn, endpoint);
  return { ...acct, fn, ep };
}

const gc = (id: string, o: { method?: string; headers?: Record<string, string>; body?: string } = {}) =>
  call(`/gc/${id}`, { method: o.method ?? "POST", headers: o.headers, ...(o.body !== undefined ? { body: o.body } : {}) });

async function inputOf(taskId: string) {
  const row = await (await flushedDb()).prepare("select input, endpoint_id from tasks where id = ?").bind(taskId).first<{ input: string; endpoint_id: string }>();
  return { ...JSON.parse(row!.input), endpointId: row!.endpoint_id };
}

describe("ANY /gc/<endpoint_id>", () => {
  it("accepts a call without a token and hands query and JSON body to the function", async () => {
    const { ep, token } = await setup();
    const res = await gc(`${ep}?city=Paris&tag=a&tag=b`, { headers: { "content-type": "application/json" }, body: '{"x":1}' });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    expect(await inputOf(id)).toMatchObject({ method: "POST", query: { city: "Paris", tag: ["a", "b"] }, body: '{"x":1}', endpointId: ep });
    expect(await callJson(`/v1/endpoint/${ep}/metrics`, 200, { token })).toEqual({ todayTasks: 1, pendingTasks: 1, weekTasks: 1 });
  });

  it("takes /gc/<id>/ with a trailing slash and a query, as third-party upload apps send it", async () => {
    const { ep } = await setup();
    const res = await gc(`${ep}/?email=a%40b.example&filename=x.bin`, { headers: { "content-type": "application/json" }, body: '{"x":1}' });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    expect(await inputOf(id)).toMatchObject({ query: { email: "a@b.example", filename: "x.bin" }, endpointId: ep });
  });

  it("answers a browser (Accept prefers text/html) with a page linking the result, and JSON to everyone else", async () => {
    const { ep } = await setup();
    const res = await gc(ep, { method: "GET", headers: { accept: BROWSER_ACCEPT } });
    expect(res.status).toBe(201);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    const page = await res.text();
    const link = /href="(\/gc\/([0-9a-z]+)\/result)"/.exec(page);
    expect(link, page).not.toBeNull();
    expect((await inputOf(link![2]!)).endpointId).toBe(ep);
    for (const accept of ["*/*", "application/json", "application/json, text/html;q=0.5"]) {
      const other = await gc(ep, { method: "GET", headers: { accept } });
      expect(await other.json()).toEqual({ id: expect.stringMatching(/^[0-9a-z]+$/) });
    }
  });

  it("takes a file upload as application/octet-stream byte for byte, as the original service's apps send it", async () => {
    const { ep } = await setup();
    const file = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff]);
    const res = await call(`/gc/${ep}/?email=a%40b.example&filename=x.png`, { method: "POST", body: file, headers: { "content-type": "application/octet-stream" } });
    expect(res.status).toBe(201);
    const { id } = (await res.json()) as { id: string };
    const input = await inputOf(id);
    expect(input).toMatchObject({ body: btoa(String.fromCharCode(...file)), bodyEncoding: "base64", query: { filename: "x.png" } });
    expect(input.headers["content-type"]).toBe("application/octet-stream");
  });

  it("counts a browser refresh (GET) as one more call", async () => {
    const { ep, token } = await setup();
    expect((await gc(ep, { method: "GET" })).status).toBe(201);
    expect((await gc(ep, { method: "GET" })).status).toBe(201);
    expect((await callJson(`/v1/endpoint/${ep}/metrics`, 200, { token })).todayTasks).toBe(2);
  });

  it("answers 404 for an unknown endpoint", async () => {
    await expectError(gc("nosuchendpoint"), 404, "not_found");
  });

  it("answers 503 while the function is paused, and accepts again after resume", async () => {
    const { ep, fn, token } = await setup();
    await callJson(`/v1/function/${fn}/togglePause`, 204, { token, method: "POST" });
    await expectError(gc(ep), 503, "function_paused");
    await callJson(`/v1/function/${fn}/togglePause`, 204, { token, method: "POST" });
    expect((await gc(ep)).status).toBe(201);
  });

  it("refuses a caller whose address is not in the ip list", async () => {
    const { ep } = await setup({ ip: ["127.0.0.1"] });
    await expectError(gc(ep, { headers: { "cf-connecting-ip": "127.0.0.9" } }), 403, "ip_not_allowed");
    await expectError(gc(ep), 403, "ip_not_allowed");
    expect((await gc(ep, { headers: { "cf-connecting-ip": "127.0.0.1" } })).status).toBe(201);
  });

  it("refuses a missing or wrong Origin and answers an allowed one with CORS", async () => {
    const { ep } = await setup({ origin: ["https://app.example.com"] });
    await expectError(gc(ep), 403, "origin_not_allowed");
    await expectError(gc(ep, { headers: { origin: "https://evil.example.com" } }), 403, "origin_not_allowed");
    await expectError(gc(ep, { headers: { origin: "http://app.example.com" } }), 403, "origin_not_allowed");
    const ok = await gc(ep, { headers: { origin: "https://APP.example.com:443" } });
    expect(ok.status).toBe(201);
    expect(ok.headers.get("access-control-allow-origin")).toBe("https://APP.example.com:443");
  });

  it("accepts calls inside a window that wraps past midnight, in the endpoint's zone", async () => {
    const { ep } = await setup({ timeLimit: { from: "22:00", to: "06:00", timezone: "Pacific/Kiritimati" } });
    setNow("2026-11-21T09:00:00Z"); // 23:00 in Kiritimati (UTC+14)
    expect((await gc(ep)).status).toBe(201);
    setNow("2026-11-21T15:59:00Z"); // 05:59 next day
    expect((await gc(ep)).status).toBe(201);
    setNow("2026-11-21T16:00:00Z"); // 06:00: `to` is exclusive
    const err = await expectError(gc(ep), 403, "outside_time_window");
    expect(err.message).toContain("Pacific/Kiritimati");
  });

  it("refuses calls outside a window far west of UTC", async () => {
    const { ep } = await setup({ timeLimit: { from: "09:00", to: "17:00", timezone: "Pacific/Pago_Pago" } });
    setNow("2026-11-21T10:00:00Z"); // 23:00 the day before in Pago Pago (UTC-11)
    await expectError(gc(ep), 403, "outside_time_window");
    setNow("2026-11-21T20:00:00Z"); // 09:00
    expect((await gc(ep)).status).toBe(201);
  });

  it("runs the checks in the decisions' order", async () => {
    const { ep, fn, token } = await setup({ ip: ["10.0.0.1"], origin: ["https://a.example"], dailyLimit: 0 });
    await callJson(`/v1/function/${fn}/togglePause`, 204, { token, method: "POST" });
    await expectError(gc(ep), 503, "function_paused");
    await callJson(`/v1/function/${fn}/togglePause`, 204, { token, method: "POST" });
    await expectError(gc(ep), 403, "ip_not_allowed");
    await expectError(gc(ep, { headers: { "cf-connecting-ip": "10.0.0.1" } }), 403, "origin_not_allowed");
    await expectError(gc(ep, { headers: { "cf-connecting-ip": "10.0.0.1", origin: "https://a.example" } }), 429, "daily_limit_reached");
  });

  it("refuses a body that says JSON but is not, without counting it", async () => {
    const { ep, token } = await setup({ dailyLimit: 1 });
    await expectError(gc(ep, { body: "{nope", headers: { "content-type": "application/json" } }), 400, "invalid_json");
    expect((await gc(ep)).status).toBe(201);
    expect((await callJson(`/v1/endpoint/${ep}/metrics`, 200, { token })).todayTasks).toBe(1);
  });

  it("answers 409 for a function without a successful build, without counting", async () => {
    const { token } = await newAccount();
    const fn = (await callJson("/v1/function", 201, { token, json: { name: "nobuild", lang: "PY", type: "DOCKER" } })).id;
    const ep = await newEndpoint(token, fn, { dailyLimit: 5 });
    await expectError(gc(ep), 409, "no_successful_build");
    expect(await counterFor(env, ep).count(new Date().toISOString().slice(0, 10))).toBe(0);
  });
});

describe("daily limit", () => {
  it("accepts exactly dailyLimit of 50 concurrent calls, and the next local day accepts again", async () => {
    setNow("2026-11-21T12:00:00Z");
    const { ep } = await setup({ dailyLimit: 10, timeLimit: { from: "00:00", to: "00:00", timezone: "Asia/Tokyo" } });
    const answers = await Promise.all(Array.from({ length: 50 }, () => gc(ep)));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(40);
    const refused = answers.find((r) => r.status === 429)!;
    // 21:00 in Tokyo: three hours to local midnight.
    expect(refused.headers.get("retry-after")).toBe(String(3 * 3600));
    await expectError(refused, 429, "daily_limit_reached");
    setNow("2026-11-21T15:00:00Z"); // 00:00 the next day in Tokyo
    expect((await gc(ep)).status).toBe(201);
  });

  it("refuses every call with dailyLimit 0 and never limits with -1", async () => {
    const zero = await setup({ dailyLimit: 0 });
    await expectError(gc(zero.ep), 429, "daily_limit_reached");
    const unlimited = await setup({ dailyLimit: -1 });
    for (let i = 0; i < 5; i++) expect((await gc(unlimited.ep)).status).toBe(201);
  });

  it("keeps one counter object per endpoint that holds only recent days", async () => {
    const { ep } = await setup({ dailyLimit: 3 });
    const stub = counterFor(env, ep);
    expect(await stub.acquire("2026-01-01", 3)).toEqual({ accepted: true, count: 1 });
    await stub.acquire("2026-01-05", 3);
    const days = await runInDurableObject(stub, (_o, state) => state.storage.sql.exec<{ day: string }>("select day from days").toArray().map((r) => r.day));
    expect(days).toEqual(["2026-01-05"]);
  });
});

describe("OPTIONS /gc/<endpoint_id>", () => {
  it("answers the CORS preflight for an allowed origin without counting a call", async () => {
    const { ep, token } = await setup({ origin: ["https://app.example.com"], dailyLimit: 1 });
    const res = await call(`/gc/${ep}`, { method: "OPTIONS", headers: { origin: "https://app.example.com", "access-control-request-method": "POST", "access-control-request-headers": "content-type" } });
    expect(res.status).toBe(204);
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(res.headers.get("access-control-allow-headers")).toBe("content-type");
    const other = await call(`/gc/${ep}`, { method: "OPTIONS", headers: { origin: "https://evil.example" } });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    expect((await gc(ep, { headers: { origin: "https://app.example.com" } })).status).toBe(201);
    expect((await callJson(`/v1/endpoint/${ep}/metrics`, 200, { token })).todayTasks).toBe(1);
  });
});

describe("GET /gc/<task_id>/result", () => {
  async function finishedPublicTask() {
    setNow("2026-11-21T12:00:00Z");
    const s = await setup();
    const { id } = (await (await gc(s.ep)).json()) as { id: string };
    await finishTask(id, { contentType: "text/plain", body: "public answer" });
    return { ...s, id };
  }

  it("is readable without a token for 5 minutes after the call", async () => {
    const { id } = await finishedPublicTask();
    setNow("2026-11-21T12:04:59Z");
    const res = await call(`/gc/${id}/result`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain");
    expect(await res.text()).toBe("public answer");
  });

  it("then needs the owner's token: 401 without, 404 with another account's", async () => {
    const { id, token } = await finishedPublicTask();
    setNow("2026-11-21T12:05:01Z");
    await expectError(call(`/gc/${id}/result`), 401, "unauthorized");
    const stranger = await newAccount("stranger");
    await expectError(call(`/gc/${id}/result`, { token: stranger.token }), 404, "not_found");
    expect(await (await call(`/gc/${id}/result`, { token })).text()).toBe("public answer");
    expect(await (await call(`/v1/task/${id}/result`, { token })).text()).toBe("public answer");
  });

  it("answers 404 result_not_ready with Retry-After and X-Task-Status until the task finishes, after ?wait", async () => {
    const { ep } = await setup();
    const { id } = (await (await gc(ep)).json()) as { id: string };
    const res = await call(`/gc/${id}/result?wait=1`);
    expect(res.status).toBe(404);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(res.headers.get("x-task-status")).toBe("pending");
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("result_not_ready");
  });

  it("says running once an agent has the task, and the owner's /v1 result keeps its 202", async () => {
    const { ep, token } = await setup();
    const { id } = (await (await gc(ep)).json()) as { id: string };
    const agent = await FakeAgent.connect("public-runner");
    expect((await agent.next("task.assign")).taskId).toBe(id);
    const res = await call(`/gc/${id}/result`);
    expect(res.status).toBe(404);
    expect(res.headers.get("x-task-status")).toBe("running");
    expect((await call(`/v1/task/${id}/result`, { token })).status).toBe(202);
    await agent.close();
  });

  it("shows a browser a page that refreshes itself while the task is not finished", async () => {
    const { ep } = await setup();
    const { id } = (await (await gc(ep)).json()) as { id: string };
    const res = await call(`/gc/${id}/result`, { headers: { accept: BROWSER_ACCEPT } });
    expect(res.status).toBe(404);
    expect(res.headers.get("content-type")).toMatch(/^text\/html/);
    expect(res.headers.get("x-task-status")).toBe("pending");
    const page = await res.text();
    expect(page).toContain('<meta http-equiv="refresh" content="1">');
    expect(page).toContain(id);
  });

  it("matches with one trailing slash, as real clients send it", async () => {
    const { id } = await finishedPublicTask();
    setNow("2026-11-21T12:01:00Z");
    expect(await (await call(`/gc/${id}/result/`)).text()).toBe("public answer");
  });

  it("does not serve tasks that were not issued through a public endpoint", async () => {
    const { token, fn } = await setup();
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, method: "POST" });
    await expectError(call(`/gc/${id}/result`), 404, "not_found");
  });
});
