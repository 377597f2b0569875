import { describe, expect, it } from "vitest";
import {
  call,
  callJson,
  expectError,
  expectNoContent,
  getJsonWithBody,
  getWithBody,
  ISO_UTC,
  newAccount,
  newEndpoint,
  newFunction,
  newTag,
  RECORD_ID,
} from "./helpers.js";

const DEFAULTS = { description: "", tags: [], dailyLimit: -1, origin: [], ip: [], timeLimit: null };

async function withFunction() {
  const { token } = await newAccount();
  return { token, fn: await newFunction(token) };
}

describe("POST /v1/endpoint/<function_id>", () => {
  it("answers 201 with the id; every field reads back", async () => {
    const { token, fn } = await withFunction();
    const tag = await newTag(token, { name: "public", color: "#0000FF" });
    const body = await callJson(`/v1/endpoint/${fn}`, 201, {
      token,
      json: {
        description: "Public hello",
        tag: [{ id: tag, name: "public", color: "#0000ff" }],
        dailyLimit: 1000,
        origin: ["https://example.com", "https://app.example.com:8443"],
        ip: ["203.0.113.7", "198.51.100.1"],
        timeLimit: { from: "08:00", to: "18:30", timezone: "Europe/Paris" },
      },
    });
    expect(body).toEqual({ id: expect.stringMatching(RECORD_ID) });
    expect(await callJson(`/v1/endpoint/${body.id}`, 200, { token })).toEqual({
      id: body.id,
      functionId: fn,
      description: "Public hello",
      tags: [{ id: tag, name: "public", color: "#0000ff" }],
      dailyLimit: 1000,
      origin: ["https://example.com", "https://app.example.com:8443"],
      ip: ["203.0.113.7", "198.51.100.1"],
      timeLimit: { from: "08:00", to: "18:30", timezone: "Europe/Paris" },
      createdAt: expect.stringMatching(ISO_UTC),
    });
  });

  it("takes an empty body (or none, without Content-Type) and applies the defaults", async () => {
    const { token, fn } = await withFunction();
    const a = await newEndpoint(token, fn);
    const { id: b } = await callJson(`/v1/endpoint/${fn}`, 201, { token, method: "POST" });
    for (const id of [a, b])
      expect(await callJson(`/v1/endpoint/${id}`, 200, { token })).toEqual({ id, functionId: fn, ...DEFAULTS, createdAt: expect.stringMatching(ISO_UTC) });
  });

  it("accepts dailyLimit -1 and 0 and refuses anything below -1 or not an integer", async () => {
    const { token, fn } = await withFunction();
    await newEndpoint(token, fn, { dailyLimit: -1 });
    await newEndpoint(token, fn, { dailyLimit: 0 });
    for (const dailyLimit of [-2, 1.5, "10", null, true]) {
      const err = await expectError(call(`/v1/endpoint/${fn}`, { token, json: { dailyLimit } }), 400, "validation_failed");
      expect(err.details?.[0]?.field).toBe("dailyLimit");
    }
  });

  it("takes unique https:// origins only", async () => {
    const { token, fn } = await withFunction();
    for (const origin of [["http://example.com"], ["example.com"], ["https://"], ["https://a.com", "https://a.com"], ["https://a.com", "https://A.COM:443/"], "https://a.com", [5], ["ftp://a.com"]]) {
      const err = await expectError(call(`/v1/endpoint/${fn}`, { token, json: { origin } }), 400, "validation_failed");
      expect(err.details?.[0]?.field, JSON.stringify(origin)).toMatch(/^origin/);
    }
  });

  it("takes unique IPv4 addresses only", async () => {
    const { token, fn } = await withFunction();
    await newEndpoint(token, fn, { ip: ["0.0.0.0", "255.255.255.255"] });
    for (const ip of [["256.1.1.1"], ["1.2.3"], ["::1"], ["2001:db8::1"], ["10.0.0.1", "10.0.0.1"], ["10.0.0.1/24"], "10.0.0.1", [""]]) {
      const err = await expectError(call(`/v1/endpoint/${fn}`, { token, json: { ip } }), 400, "validation_failed");
      expect(err.details?.[0]?.field, JSON.stringify(ip)).toMatch(/^ip/);
    }
  });

  it("takes a timeLimit of HH:MM times and an IANA time zone", async () => {
    const { token, fn } = await withFunction();
    await newEndpoint(token, fn, { timeLimit: { from: "22:00", to: "06:00", timezone: "America/New_York" } });
    await newEndpoint(token, fn, { timeLimit: { from: "00:00", to: "23:59", timezone: "UTC" } });
    const cases: unknown[] = [
      { from: "24:00", to: "06:00", timezone: "UTC" },
      { from: "9:00", to: "17:00", timezone: "UTC" },
      { from: "09:60", to: "17:00", timezone: "UTC" },
      { from: "09:00", to: "17:00:00", timezone: "UTC" },
      { from: "09:00", to: "17:00", timezone: "Mars/Olympus_Mons" },
      { from: "09:00", to: "17:00", timezone: "" },
      { from: "09:00", to: "17:00" },
      { from: "09:00", to: "17:00", timezone: "UTC", days: "weekdays" },
      "09:00-17:00",
    ];
    for (const timeLimit of cases) {
      const err = await expectError(call(`/v1/endpoint/${fn}`, { token, json: { timeLimit } }), 400, "validation_failed");
      expect(err.details?.[0]?.field, JSON.stringify(timeLimit)).toMatch(/^timeLimit/);
    }
  });

  it("refuses a long or non-ASCII description, bad tags and unknown fields", async () => {
    const { token, fn } = await withFunction();
    await newEndpoint(token, fn, { description: "d".repeat(256) });
    const cases: [Record<string, unknown>, string][] = [
      [{ description: "d".repeat(257) }, "description"],
      [{ description: "\u0001" }, "description"],
      [{ tag: ["x", "x"] }, "tag"],
      [{ tag: ["nosuchtag"] }, "tag[0]"],
      [{ functionId: fn }, "functionId"],
      [{ enabled: true }, "enabled"],
    ];
    for (const [json, field] of cases) {
      const err = await expectError(call(`/v1/endpoint/${fn}`, { token, json }), 400, "validation_failed");
      expect(err.details?.map((d) => d.field), JSON.stringify(json)).toEqual([field]);
    }
  });

  it("refuses a Content-Type other than JSON", async () => {
    const { token, fn } = await withFunction();
    await expectError(call(`/v1/endpoint/${fn}`, { token, body: "{}", headers: { "content-type": "text/plain" } }), 415, "unsupported_media_type");
  });

  it("answers 404 for an unknown function", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/endpoint/nosuchfunction", { token, json: {} }), 404, "not_found");
  });
});

describe("GET /v1/endpoint/<endpoint_id>", () => {
  it("answers 404 for an unknown id", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/endpoint/nosuchendpoint", { token }), 404, "not_found");
  });
});

describe("PATCH /v1/endpoint/<endpoint_id>", () => {
  it("changes the given fields, answers 204 and leaves the others alone", async () => {
    const { token, fn } = await withFunction();
    const tag = await newTag(token);
    const id = await newEndpoint(token, fn, { description: "v1", dailyLimit: 5, ip: ["10.0.0.1"] });
    await expectNoContent(call(`/v1/endpoint/${id}`, { token, method: "PATCH", json: { origin: ["https://x.dev"], tag: [tag], timeLimit: { from: "01:00", to: "02:00", timezone: "Asia/Tokyo" } } }));
    expect(await callJson(`/v1/endpoint/${id}`, 200, { token })).toEqual({
      id,
      functionId: fn,
      description: "v1",
      tags: [{ id: tag, name: "prod", color: "#808080" }],
      dailyLimit: 5,
      origin: ["https://x.dev"],
      ip: ["10.0.0.1"],
      timeLimit: { from: "01:00", to: "02:00", timezone: "Asia/Tokyo" },
      createdAt: expect.stringMatching(ISO_UTC),
    });
  });

  it("removes the time window with timeLimit null and empties lists with []", async () => {
    const { token, fn } = await withFunction();
    const id = await newEndpoint(token, fn, { ip: ["10.0.0.1"], origin: ["https://a.io"], timeLimit: { from: "01:00", to: "02:00", timezone: "UTC" } });
    await expectNoContent(call(`/v1/endpoint/${id}`, { token, method: "PATCH", json: { timeLimit: null, ip: [], origin: [], dailyLimit: -1 } }));
    expect(await callJson(`/v1/endpoint/${id}`, 200, { token })).toMatchObject({ timeLimit: null, ip: [], origin: [], dailyLimit: -1 });
  });

  it("validates like create and refuses functionId", async () => {
    const { token, fn } = await withFunction();
    const id = await newEndpoint(token, fn);
    const patch = (json: unknown) => call(`/v1/endpoint/${id}`, { token, method: "PATCH", json });
    await expectError(patch({ dailyLimit: -5 }), 400, "validation_failed");
    await expectError(patch({ origin: ["http://a.com"] }), 400, "validation_failed");
    await expectError(patch({ ip: ["1.1.1.1.1"] }), 400, "validation_failed");
    await expectError(patch({ timeLimit: { from: "1", to: "2", timezone: "UTC" } }), 400, "validation_failed");
    await expectError(patch({ functionId: fn }), 400, "validation_failed");
    expect(await callJson(`/v1/endpoint/${id}`, 200, { token })).toMatchObject(DEFAULTS);
  });

  it("answers 404 for an unknown id", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/endpoint/nosuchendpoint", { token, method: "PATCH", json: { dailyLimit: 1 } }), 404, "not_found");
  });
});

describe("DELETE /v1/endpoint/<endpoint_id>", () => {
  it("answers 204 with an empty body, after which the endpoint is gone", async () => {
    const { token, fn } = await withFunction();
    const id = await newEndpoint(token, fn);
    await expectNoContent(call(`/v1/endpoint/${id}`, { token, method: "DELETE" }));
    await expectError(call(`/v1/endpoint/${id}`, { token }), 404, "not_found");
    await expectError(call(`/v1/endpoint/${id}`, { token, method: "DELETE" }), 404, "not_found");
  });
});

describe("GET /v1/endpoint/<endpoint_id>/metrics", () => {
  it("answers zeros for a new endpoint and 404 for an unknown one", async () => {
    const { token, fn } = await withFunction();
    const id = await newEndpoint(token, fn);
    expect(await callJson(`/v1/endpoint/${id}/metrics`, 200, { token })).toEqual({ todayTasks: 0, pendingTasks: 0, weekTasks: 0 });
    await expectError(call("/v1/endpoint/nosuchendpoint/metrics", { token }), 404, "not_found");
  });
});

describe("GET /v1/endpoint/list", () => {
  async function manyEndpoints(n: number) {
    const ctx = await withFunction();
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push(await newEndpoint(ctx.token, ctx.fn, { description: `e${i}` }));
    return { ...ctx, newestFirst: ids.reverse() };
  }
  const idsOf = (env: { results: { id: string }[] }) => env.results.map((r) => r.id);

  it("answers the envelope with items {id, functionId, description, tags, createdAt}, newest first", async () => {
    const { token, fn } = await withFunction();
    const tag = await newTag(token);
    const older = await newEndpoint(token, fn, { description: "old", dailyLimit: 3 });
    const newer = await newEndpoint(token, fn, { tag: [tag] });
    expect(await callJson("/v1/endpoint/list", 200, { token })).toEqual({
      pageCount: 1,
      pageSize: 10,
      totalCount: 2,
      results: [
        { id: newer, functionId: fn, description: "", tags: [{ id: tag, name: "prod", color: "#808080" }], createdAt: expect.stringMatching(ISO_UTC) },
        { id: older, functionId: fn, description: "old", tags: [], createdAt: expect.stringMatching(ISO_UTC) },
      ],
    });
  });

  it("pages at the bounds of limit: 3 and 999; a page past the end is empty", async () => {
    const { token, newestFirst } = await manyEndpoints(7);
    const p3 = await getJsonWithBody("/v1/endpoint/list", 200, { token, json: { limit: 3, page: 3 } });
    expect({ ...p3, results: idsOf(p3) }).toEqual({ pageCount: 3, pageSize: 3, totalCount: 7, results: newestFirst.slice(6) });
    const all = await getJsonWithBody("/v1/endpoint/list", 200, { token, json: { limit: 999 } });
    expect({ ...all, results: idsOf(all) }).toEqual({ pageCount: 1, pageSize: 999, totalCount: 7, results: newestFirst });
    expect(await getJsonWithBody("/v1/endpoint/list", 200, { token, json: { limit: 3, page: 4 } })).toEqual({ pageCount: 3, pageSize: 3, totalCount: 7, results: [] });
  });

  it("defaults to page 1 of 10", async () => {
    const { token, newestFirst } = await manyEndpoints(11);
    const body = await callJson("/v1/endpoint/list", 200, { token });
    expect({ ...body, results: idsOf(body) }).toEqual({ pageCount: 2, pageSize: 10, totalCount: 11, results: newestFirst.slice(0, 10) });
  });

  it("refuses limit 2 and 1000 and page 0", async () => {
    const { token } = await newAccount();
    for (const json of [{ limit: 2 }, { limit: 1000 }, { page: 0 }, { functionId: 5 }])
      await expectError(getWithBody("/v1/endpoint/list", { token, body: JSON.stringify(json) }), 400, "validation_failed");
    await expectError(call("/v1/endpoint/list?limit=1000", { token }), 400, "validation_failed");
  });

  it("filters by functionId, in the body or the query, the body winning", async () => {
    const { token, fn } = await withFunction();
    const other = await newFunction(token, { name: "other" });
    const mine = await newEndpoint(token, fn);
    const theirs = await newEndpoint(token, other);
    expect(idsOf(await getJsonWithBody("/v1/endpoint/list", 200, { token, json: { functionId: fn } }))).toEqual([mine]);
    expect(idsOf(await callJson(`/v1/endpoint/list?functionId=${other}`, 200, { token }))).toEqual([theirs]);
    expect(idsOf(await getJsonWithBody(`/v1/endpoint/list?functionId=${other}`, 200, { token, json: { functionId: fn } }))).toEqual([mine]);
    await expectError(call("/v1/endpoint/list?functionId=nosuchfunction", { token }), 404, "not_found");
  });
});
