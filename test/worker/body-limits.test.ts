import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { createApp } from "../../worker/app.js";
import { bodyRuleFor } from "../../worker/http/body-limits.js";
import { callJson, expectError, newAccount, newFunction, onRowlessTasks } from "./helpers.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

const KiB = 1024;
const MiB = 1024 * KiB;

/**
 * A body of `size` bytes made as it is read: `head` first, then filler. `pulled` says how much of
 * it the Worker took; with `declared` it carries its Content-Length, else it goes chunked.
 */
function body(size: number, head = "") {
  const first = new TextEncoder().encode(head);
  const state = { pulled: 0 };
  const stream = new ReadableStream<Uint8Array>({
    pull(ctrl) {
      if (state.pulled >= size) return ctrl.close();
      const chunk = state.pulled === 0 && first.length ? first : new Uint8Array(Math.min(64 * KiB, size - state.pulled)).fill(0x61);
      state.pulled += chunk.byteLength;
      ctrl.enqueue(chunk);
    },
  });
  return { stream, state };
}

function send(method: string, path: string, size: number, o: { declared: boolean; head?: string; headers?: Record<string, string> }) {
  const b = body(size, o.head);
  const headers: Record<string, string> = { ...o.headers, ...(o.declared ? { "content-length": String(size) } : {}) };
  return { response: SELF.fetch(`https://api.test${path}`, { method, headers, body: b.stream }), state: b.state };
}

const form = { "content-type": "application/x-www-form-urlencoded" };

describe("POST /console/signin", () => {
  for (const declared of [true, false])
    it(`refuses a ${declared ? "declared" : "chunked"} form over 16 KiB with 413 before parsing it, a valid token in it or not`, async () => {
      const { token } = await newAccount();
      const { response } = send("POST", "/console/signin", 30 * MiB, { declared, head: `token=${token}&next=%2Fconsole&pad=`, headers: form });
      const res = await response;
      expect(res.headers.get("set-cookie")).toBeNull();
      const error = await expectError(res, 413, "payload_too_large");
      expect(error.message).toBe("the body exceeds 16 KiB, the limit for a sign-in form");
    });

  it("still signs in with a form within the limit", async () => {
    const { token } = await newAccount();
    const res = await SELF.fetch("https://api.test/console/signin", { method: "POST", headers: form, body: `token=${token}&next=%2Fconsole`, redirect: "manual" });
    expect(res.status).toBe(303);
    expect(res.headers.get("set-cookie")).toMatch(/^gc_console=/);
  });
});

describe("POST /console/signout", () => {
  for (const declared of [true, false])
    it(`refuses a ${declared ? "declared" : "chunked"} form over 16 KiB with 413`, async () => {
      const { response } = send("POST", "/console/signout", 30 * MiB, { declared, head: "_csrf=x&pad=", headers: form });
      await expectError(response, 413, "payload_too_large");
    });
});

/** Routes whose body is more than a JSON document or a console form, and the limit of each. */
const SPECIAL: Record<string, number> = {
  "POST /v1/build/:functionId": 50 * MiB,
  "POST /v1/task/:functionId": 10 * MiB,
  "PUT /v1/scheduled/:id/payload": 10 * MiB,
  "ALL /gc/:id": 10 * MiB,
  "OPTIONS /gc/:id": 10 * MiB,
  "POST /v1/billing/webhook": 1 * MiB,
  "PUT /v1/agent/builds/:id/artifact": 512 * MiB,
  "PUT /v1/agent/tasks/:id/result": 64 * MiB,
  "PUT /v1/agent/tasks/:id/storage/:setBy": 1 * MiB,
  "PUT /v1/agent/tasks/:id/log": 16 * MiB,
  "POST /console/signin": 16 * KiB,
  "POST /console/signout": 16 * KiB,
  "POST /console/functions/:id/deploy": 50 * MiB,
  "POST /console/functions/:id/invoke": 10 * MiB,
  "POST /console/schedules/:id/payload": 10 * MiB,
};

/** The rest: JSON bodies of the API (10 MiB, list filters on GET included), console forms, and routes that take none. */
function expectedLimit(method: string, path: string): number {
  const special = SPECIAL[`${method} ${path}`];
  if (special !== undefined) return special;
  if (path.startsWith("/v1/") || path === "/v1") return 10 * MiB;
  if (path.startsWith("/console")) return 1 * MiB;
  return 64 * KiB;
}

const routes = createApp()
  .routes.filter((r) => !r.path.endsWith("*"))
  .map((r) => ({ method: r.method, path: r.path, sample: r.path.replace(/:[A-Za-z]+(\{[^}]*\})?/g, "x1") }));

describe("every route's body limit", () => {
  it("covers the routes this table names", () => {
    const known = new Set(routes.map((r) => `${r.method} ${r.path}`));
    expect(Object.keys(SPECIAL).filter((k) => !known.has(k))).toEqual([]);
  });

  for (const r of routes)
    it(`${r.method} ${r.path}: ${expectedLimit(r.method, r.path) / KiB} KiB`, async () => {
      const method = r.method === "ALL" ? "POST" : r.method;
      const limit = expectedLimit(r.method, r.path);
      expect(bodyRuleFor(method, r.sample).limit).toBe(limit);
      // Sent for real where that is cheap (a test's fetch cannot give GET a body): a declared
      // length over the limit is refused before the route's own checks, authentication first.
      if (limit <= 1 * MiB && method !== "GET") {
        await expectError(send(method, r.sample, limit + 1, { declared: true }).response, 413, "payload_too_large");
        const within = await SELF.fetch(`https://api.test${r.sample}`, { method, body: "a".repeat(Math.min(limit, 1024)) });
        expect(within.status).not.toBe(413);
      }
    });
});

describe("a chunked body, counted as its route reads it", () => {
  const cases: [string, (token: string) => Promise<[string, string, Record<string, string>]>, number][] = [
    ["a task's body", async (token) => ["POST", "/v1/task/x1", { authorization: `Bearer ${token}` }], 10 * MiB],
    ["a schedule's payload", async (token) => ["PUT", "/v1/scheduled/x1/payload", { authorization: `Bearer ${token}` }], 10 * MiB],
    ["a public call", async (token) => {
      const fn = await newFunction(token);
      const { id } = await callJson<{ id: string }>(`/v1/endpoint/${fn}`, 201, { token, json: {} });
      return ["POST", `/gc/${id}`, {}];
    }, 10 * MiB],
    ["a console form", async (token) => {
      const signin = await SELF.fetch("https://api.test/console/signin", { method: "POST", headers: form, body: `token=${token}`, redirect: "manual" });
      const cookie = signin.headers.get("set-cookie")!.split(";")[0]!;
      return ["POST", "/console/tags", { ...form, cookie }];
    }, 1 * MiB],
  ];
  for (const [what, request, limit] of cases)
    it(`refuses ${what} one byte over ${limit / MiB} MiB, and takes one at the limit`, async () => {
      const { token } = await newAccount();
      const [method, path, headers] = await request(token);
      const over = send(method, path, limit + 1, { declared: false, headers });
      await expectError(over.response, 413, "payload_too_large");
      const at = await send(method, path, limit, { declared: false, headers }).response;
      expect(at.status).not.toBe(413);
    });
});
