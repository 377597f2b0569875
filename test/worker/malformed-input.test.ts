import { beforeAll, describe, expect, it } from "vitest";
import { callDirect as call, tinyZip, onRowlessTasks } from "./helpers.js";
import { accountWithEverything, type Owned } from "./fixtures.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

/**
 * Malformed input never answers 500: every write operation (and every list filter body) gets
 * wrong types for each of its fields, huge strings, non-JSON, JSON that is not an object, deep
 * nesting, wrong Content-Types and invalid UTF-8. Every answer must be a 4xx in the error format.
 */

type Kind = "string" | "int" | "number" | "bool" | "array" | "timeLimit" | "intParam" | "readOnly";

const HUGE = "x".repeat(100 * 1024);
const deepArray = (n: number) => JSON.parse("[".repeat(n) + "]".repeat(n)) as unknown;
const deepObject = (n: number) => JSON.parse('{"a":'.repeat(n) + "{}" + "}".repeat(n)) as unknown;

/** Values of the wrong type (or shape) for a field of each kind. */
function wrongValues(kind: Kind): unknown[] {
  const junk = [HUGE, deepArray(2000), deepObject(2000), { $ne: null }, [null, { id: [] }]];
  const by: Record<Kind, unknown[]> = {
    string: [null, 0, -1.5, true, [], {}, ["a"], "\u0000", "\ud800"],
    int: [null, "1", 1.5, true, false, [], {}, [1], 1e308, -1e308, 2 ** 53 + 2],
    number: [null, "1", true, [], {}, [1], 1e308, -1e308],
    bool: [null, "true", 0, 1, [], {}, [true]],
    array: [null, "a", 1, true, {}, [null], [[]], [{}], [1, 1], Array.from({ length: 1000 }, (_, i) => `x${i}`)],
    timeLimit: ["09:00", 1, true, [], {}, { from: null, to: null, timezone: null }, { from: "09:00", to: "10:00", timezone: HUGE }],
    intParam: [null, "x", "", " 1", "1.5", 1.5, true, [], {}, 0, -3, 1e308],
    readOnly: [0, null, "x", {}],
  };
  return [...by[kind], ...junk];
}

interface WriteOp {
  name: string;
  method: string;
  path: (o: Owned) => string;
  /** A valid body: each case replaces one field of it. */
  valid: (o: Owned) => Record<string, unknown>;
  fields: Record<string, Kind>;
  /** GET with a JSON body (list filters). */
  get?: boolean;
  /** The empty body is a valid request here (all-optional bodies). */
  emptyIsValid?: boolean;
}

const ENDPOINT_FIELDS: Record<string, Kind> = { description: "string", tag: "array", dailyLimit: "int", origin: "array", ip: "array", timeLimit: "timeLimit" };
const LIST_FIELDS: Record<string, Kind> = { page: "intParam", limit: "intParam", functionId: "string" };

const OPS: WriteOp[] = [
  {
    name: "POST /v1/function",
    method: "POST",
    path: () => "/v1/function",
    valid: () => ({ name: "ok", lang: "GO", type: "DOCKER" }),
    fields: { name: "string", description: "string", tag: "array", lang: "string", type: "string" },
  },
  {
    name: "PATCH /v1/function/<id>",
    method: "PATCH",
    path: (o) => `/v1/function/${o.fn}`,
    valid: () => ({ name: "ok" }),
    fields: { name: "string", description: "string", tag: "array" },
  },
  {
    name: "POST /v1/function/<id>/capabilities",
    method: "POST",
    path: (o) => `/v1/function/${o.fn}/capabilities`,
    valid: () => ({ timeout: 30 }),
    fields: { timeout: "int", cpuCount: "number", memSize: "int", privileged: "bool", privilaged: "bool", networkLatency: "readOnly" },
  },
  { name: "POST /v1/tag", method: "POST", path: () => "/v1/tag", valid: () => ({ name: "ok" }), fields: { name: "string", color: "string" } },
  { name: "PATCH /v1/tag/<id>", method: "PATCH", path: (o) => `/v1/tag/${o.tag}`, valid: () => ({ name: "ok" }), fields: { name: "string", color: "string" } },
  {
    name: "POST /v1/trigger",
    method: "POST",
    path: () => "/v1/trigger",
    valid: (o) => ({ functionId: o.fn, nextId: o.next, includeResult: true }),
    fields: { functionId: "string", nextId: "string", status: "int", tag: "array", includeResult: "bool", description: "string" },
  },
  {
    name: "PATCH /v1/trigger/<id>",
    method: "PATCH",
    path: (o) => `/v1/trigger/${o.trigger}`,
    valid: () => ({ status: 200 }),
    fields: { status: "int", tag: "array", includeResult: "bool", description: "string", functionId: "readOnly", nextId: "readOnly" },
  },
  { name: "POST /v1/endpoint/<function_id>", method: "POST", path: (o) => `/v1/endpoint/${o.fn}`, valid: () => ({}), fields: ENDPOINT_FIELDS, emptyIsValid: true },
  { name: "PATCH /v1/endpoint/<id>", method: "PATCH", path: (o) => `/v1/endpoint/${o.endpoint}`, valid: () => ({}), fields: ENDPOINT_FIELDS, emptyIsValid: true },
  {
    name: "POST /v1/scheduled",
    method: "POST",
    path: () => "/v1/scheduled",
    valid: (o) => ({ functionId: o.fn, cron: "0 0 1 1 *", timezone: "UTC" }),
    fields: { functionId: "string", cron: "string", timezone: "string", description: "string" },
  },
  {
    name: "PATCH /v1/scheduled/<id>",
    method: "PATCH",
    path: (o) => `/v1/scheduled/${o.schedule}`,
    valid: () => ({ active: true, cron: "0 0 1 1 *", timezone: "UTC" }),
    fields: { active: "bool", cron: "string", timezone: "string", description: "string", functionId: "readOnly" },
  },
  { name: "GET /v1/scheduled/list (filter body)", method: "GET", path: () => "/v1/scheduled/list", valid: () => ({}), fields: { ...LIST_FIELDS, timezone: "string" }, get: true, emptyIsValid: true },
  { name: "GET /v1/trigger/list (filter body)", method: "GET", path: () => "/v1/trigger/list", valid: () => ({}), fields: LIST_FIELDS, get: true, emptyIsValid: true },
  { name: "GET /v1/endpoint/list (filter body)", method: "GET", path: () => "/v1/endpoint/list", valid: () => ({}), fields: LIST_FIELDS, get: true, emptyIsValid: true },
];

const NOT_JSON = ["{", "}", "nul", "{'name':'x'}", '{"name":"x",}', "<xml/>", "name=x", "\u0000", "{\"a\":1}garbage", HUGE, "[".repeat(200_000)];
const NOT_OBJECTS = ["[]", "null", "42", '"string"', "true", '[{"name":"x"}]', JSON.stringify(deepArray(5000))];
const WRONG_TYPES = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", "application/xml", "json"];
const INVALID_UTF8 = [
  new Uint8Array([0x7b, 0x22, 0x6e, 0x61, 0x6d, 0x65, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), // {"name":"\xff\xfe"}
  new Uint8Array([0xc3, 0x28]),
  new Uint8Array([0xef, 0xbb, 0xbf, 0x7b, 0x7d, 0xed, 0xa0, 0x80]), // BOM, {}, a lone surrogate
];

async function expect4xx(res: Response, what: string) {
  const text = await res.text();
  expect(res.status, `${what} → ${res.status} ${text.slice(0, 300)}`).toBeGreaterThanOrEqual(400);
  expect(res.status, `${what} → ${res.status} ${text.slice(0, 300)}`).toBeLessThan(500);
  let body: unknown;
  expect(() => (body = JSON.parse(text)), `${what}: not JSON: ${text.slice(0, 300)}`).not.toThrow();
  expect(body, what).toEqual({
    error: { code: expect.stringMatching(/^[a-z][a-z_]*$/), message: expect.any(String), ...((body as any).error?.details ? { details: expect.any(Array) } : {}) },
  });
}

describe("malformed input never answers 500", { timeout: 60_000 }, () => {
  let o: Owned;
  beforeAll(async () => {
    o = await accountWithEverything();
  }, 30_000);

  const send = (op: WriteOp, body: BodyInit, contentType: string | null = "application/json") => {
    const headers: Record<string, string> = contentType === null ? {} : { "content-type": contentType };
    return call(op.path(o), { token: o.token, method: op.method, body, headers });
  };

  for (const op of OPS) {
    describe(op.name, () => {
      it("accepts its valid body, so that the refusals below are the junk's doing", async () => {
        const res = await send(op, JSON.stringify(op.valid(o)));
        expect(res.status, await res.text()).toBeLessThan(300);
      });

      it("refuses a wrong type, a huge string or deep nesting in every field", async () => {
        for (const [field, kind] of Object.entries(op.fields))
          for (const value of wrongValues(kind)) {
            const json = JSON.stringify({ ...op.valid(o), [field]: value });
            await expect4xx(await send(op, json), `${field}=${json.slice(0, 80)}`);
          }
      });

      it("refuses a body that is not JSON, not an object, or not UTF-8", async () => {
        const bodies: BodyInit[] = [...NOT_JSON, ...NOT_OBJECTS, ...INVALID_UTF8];
        if (!op.emptyIsValid) bodies.push("", "   ");
        for (const body of bodies) await expect4xx(await send(op, body), `body ${String(body).slice(0, 40)}`);
      });

      it("refuses a wrong Content-Type", async () => {
        const valid = JSON.stringify({ ...op.valid(o), ...(op.emptyIsValid ? { description: "x" } : {}) });
        const body = op.get ? JSON.stringify({ limit: 5 }) : valid;
        for (const ct of WRONG_TYPES) await expect4xx(await send(op, body, ct), `Content-Type ${ct}`);
        if (!op.emptyIsValid) await expect4xx(await send(op, body, null), "no Content-Type");
      });

      it("refuses unknown fields, including prototype keys", async () => {
        for (const json of ['{"__proto__":{"admin":true}}', '{"constructor":{"prototype":{}}}', '{"zzz":1}', '{"":1}'])
          await expect4xx(await send(op, JSON.stringify({ ...op.valid(o), ...JSON.parse(json) })), json);
      });
    });
  }

  describe("POST /v1/task/<function_id>", () => {
    it("accepts a JSON body", async () => {
      expect((await call(`/v1/task/${o.fn}`, { token: o.token, json: { a: 1 } })).status).toBe(201);
    });

    it("refuses a body that says JSON but is not JSON or not UTF-8", async () => {
      for (const body of [...NOT_JSON, ...INVALID_UTF8])
        for (const ct of ["application/json", "application/problem+json"]) {
          const headers = { "content-type": ct };
          await expect4xx(await call(`/v1/task/${o.fn}`, { token: o.token, method: "POST", body, headers }), `task body ${String(body).slice(0, 40)} as ${ct}`);
        }
    });
  });

  describe("POST /v1/build/<function_id>", () => {
    it("refuses bodies that are not zip archives, wrong Content-Types and bad queries", async () => {
      const upload = (body: BodyInit, query = "?arch=amd64", contentType = "application/octet-stream") =>
        call(`/v1/build/${o.fn}${query}`, { token: o.token, method: "POST", body, headers: { "content-type": contentType } });
      expect((await upload(tinyZip())).status).toBe(201);
      for (const body of [...NOT_JSON, ...NOT_OBJECTS, ...INVALID_UTF8, '{"name":"x"}', crypto.getRandomValues(new Uint8Array(4096))])
        await expect4xx(await upload(body), `zip body ${String(body).slice(0, 40)}`);
      for (const ct of [...WRONG_TYPES, "application/json", "application/zip", ""]) await expect4xx(await upload(tinyZip(), "?arch=amd64", ct), `Content-Type ${ct}`);
      for (const q of ["", "?arch=", "?arch=arm64", "?arch[]=amd64", `?arch=${HUGE}`, "?arch=%FF", "?arch=%00", "?arch=amd64&x=%E0%A4%A"])
        await expect4xx(await upload(tinyZip(), q), `query ${q.slice(0, 40)}`);
    });
  });

  describe("query parameters and paths", () => {
    it("refuse malformed values with a 4xx", async () => {
      const queries = ["%FF", "%E0%A4%A", "%00", "-1", "1e3", "0x10", "[]", "99999999999999999999999", "x".repeat(10_000)];
      const paths = [
        (q: string) => `/v1/function/list?tag=${q}`,
        (q: string) => `/v1/build/list?page=${q}`,
        (q: string) => `/v1/build/list?limit=${q}`,
        (q: string) => `/v1/build/list?functionId=${q}`,
        (q: string) => `/v1/task/list?limit=${q}`,
        (q: string) => `/v1/trigger/list?page=${q}`,
        (q: string) => `/v1/endpoint/list?limit=${q}`,
        (q: string) => `/v1/scheduled/list?timezone=${q}`,
        (q: string) => `/v1/scheduled/${q}`,
        (q: string) => `/v1/task/${o.task}/result?wait=${q}`,
        (q: string) => `/v1/function/${q}`,
        (q: string) => `/v1/task/${q}/result`,
        (q: string) => `/v1/endpoint/${q}/metrics`,
      ];
      for (const path of paths) for (const q of queries) await expect4xx(await call(path(q), { token: o.token }), path(q).slice(0, 80));
    });
  });
});
