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
  newFunction,
  newTag,
  newTrigger,
  RECORD_ID,
} from "./helpers.js";
import { MAX_TRIGGERS_PER_FUNCTION } from "../../worker/services/triggers.js";

async function twoFunctions() {
  const { token } = await newAccount();
  const first = await newFunction(token, { name: "first" });
  const next = await newFunction(token, { name: "next" });
  return { token, first, next };
}

describe("POST /v1/trigger", () => {
  it("answers 201 with the id, and the trigger reads back as created", async () => {
    const { token, first, next } = await twoFunctions();
    const tag = await newTag(token, { name: "chain", color: "#00FF00" });
    const body = await callJson("/v1/trigger", 201, {
      token,
      json: { functionId: first, nextId: next, status: 404, includeResult: true, tag: [tag], description: "on miss" },
    });
    expect(body).toEqual({ id: expect.stringMatching(RECORD_ID) });
    expect(await callJson(`/v1/trigger/${body.id}`, 200, { token })).toEqual({
      id: body.id,
      functionId: first,
      nextId: next,
      tags: [{ id: tag, name: "chain", color: "#00ff00" }],
      status: 404,
      includeResult: true,
      description: "on miss",
      createdAt: expect.stringMatching(ISO_UTC),
    });
  });

  it("defaults status to 200, tags to none and description to empty; a self-trigger is allowed", async () => {
    const { token, first } = await twoFunctions();
    const id = await newTrigger(token, { functionId: first, nextId: first, includeResult: false });
    expect(await callJson(`/v1/trigger/${id}`, 200, { token })).toMatchObject({ status: 200, tags: [], description: "", includeResult: false });
  });

  it(`refuses a trigger past ${MAX_TRIGGERS_PER_FUNCTION} on one function with 409, and frees a place when one is deleted`, async () => {
    const { token, first, next } = await twoFunctions();
    const ids: string[] = [];
    for (let i = 0; i < MAX_TRIGGERS_PER_FUNCTION; i++) ids.push(await newTrigger(token, { functionId: first, nextId: first, includeResult: false }));
    const err = await expectError(call("/v1/trigger", { token, json: { functionId: first, nextId: next, includeResult: false } }), 409, "conflict");
    expect(err.message).toBe(`function ${first} already has ${MAX_TRIGGERS_PER_FUNCTION} triggers, the most a function can have: delete one first`);
    expect((await callJson(`/v1/trigger/list?functionId=${first}`, 200, { token })).totalCount).toBe(MAX_TRIGGERS_PER_FUNCTION);
    // Triggers into the function count for the one they start from, not for it.
    await newTrigger(token, { functionId: next, nextId: first, includeResult: false });
    await expectNoContent(call(`/v1/trigger/${ids[0]}`, { token, method: "DELETE" }));
    await newTrigger(token, { functionId: first, nextId: next, includeResult: false });
  });

  it(`keeps at most ${MAX_TRIGGERS_PER_FUNCTION} triggers when many are created at once`, async () => {
    const { token, first } = await twoFunctions();
    const results = await Promise.all(Array.from({ length: 16 }, () => call("/v1/trigger", { token, json: { functionId: first, nextId: first, includeResult: false } })));
    const created = results.filter((r) => r.status === 201).length;
    expect(results.every((r) => r.status === 201 || r.status === 409)).toBe(true);
    expect(created).toBeLessThanOrEqual(MAX_TRIGGERS_PER_FUNCTION);
    expect((await callJson(`/v1/trigger/list?functionId=${first}`, 200, { token })).totalCount).toBe(created);
  });

  it("requires functionId, nextId and includeResult", async () => {
    const { token, first, next } = await twoFunctions();
    for (const missing of ["functionId", "nextId", "includeResult"]) {
      const json: Record<string, unknown> = { functionId: first, nextId: next, includeResult: true };
      delete json[missing];
      const err = await expectError(call("/v1/trigger", { token, json }), 400, "validation_failed");
      expect(err.details?.map((d) => d.field)).toEqual([missing]);
    }
  });

  it("takes status as an integer HTTP status code from 100 to 599", async () => {
    const { token, first, next } = await twoFunctions();
    await newTrigger(token, { functionId: first, nextId: next, status: 100 });
    await newTrigger(token, { functionId: first, nextId: next, status: 599 });
    for (const status of [99, 600, 200.5, "200", null, true]) {
      const err = await expectError(call("/v1/trigger", { token, json: { functionId: first, nextId: next, includeResult: true, status } }), 400, "validation_failed");
      expect(err.details?.[0]?.field, JSON.stringify(status)).toBe("status");
    }
  });

  it("refuses a non-boolean includeResult, a long or non-ASCII description and bad tags", async () => {
    const { token, first, next } = await twoFunctions();
    const base = { functionId: first, nextId: next, includeResult: true };
    await newTrigger(token, { ...base, description: "d".repeat(256) });
    const cases: [Record<string, unknown>, string][] = [
      [{ includeResult: "true" }, "includeResult"],
      [{ includeResult: 1 }, "includeResult"],
      [{ description: "d".repeat(257) }, "description"],
      [{ description: "ünïcode" }, "description"],
      [{ tag: ["a", "a"] }, "tag"],
      [{ tag: ["nosuchtag"] }, "tag[0]"],
      [{ surprise: 1 }, "surprise"],
    ];
    for (const [extra, field] of cases) {
      const err = await expectError(call("/v1/trigger", { token, json: { ...base, ...extra } }), 400, "validation_failed");
      expect(err.details?.map((d) => d.field), JSON.stringify(extra)).toEqual([field]);
    }
  });

  it("refuses function ids that are not the caller's functions, naming the field", async () => {
    const { token, first } = await twoFunctions();
    const other = await newAccount();
    const theirs = await newFunction(other.token);
    for (const [json, field] of [
      [{ functionId: "nosuchfunction", nextId: first }, "functionId"],
      [{ functionId: first, nextId: "nosuchfunction" }, "nextId"],
      [{ functionId: theirs, nextId: first }, "functionId"],
      [{ functionId: first, nextId: theirs }, "nextId"],
      [{ functionId: "Not-An-Id", nextId: first }, "functionId"],
    ] as const) {
      const err = await expectError(call("/v1/trigger", { token, json: { ...json, includeResult: true } }), 400, "validation_failed");
      expect(err.details?.map((d) => d.field)).toEqual([field]);
    }
  });

  it("requires Content-Type: application/json", async () => {
    const { token, first, next } = await twoFunctions();
    const body = JSON.stringify({ functionId: first, nextId: next, includeResult: true });
    await expectError(call("/v1/trigger", { token, method: "POST", body }), 415, "unsupported_media_type");
  });
});

describe("GET /v1/trigger/<trigger_id>", () => {
  it("answers 404 for an unknown id", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/trigger/nosuchtrigger", { token }), 404, "not_found");
  });
});

describe("PATCH /v1/trigger/<trigger_id>", () => {
  it("changes status, includeResult, description and tags; every field is optional", async () => {
    const { token, first, next } = await twoFunctions();
    const tag = await newTag(token);
    const id = await newTrigger(token, { functionId: first, nextId: next, includeResult: false, description: "before" });
    await expectNoContent(call(`/v1/trigger/${id}`, { token, method: "PATCH", json: { status: 500, includeResult: true, tag: [{ id: tag }], description: "after" } }));
    expect(await callJson(`/v1/trigger/${id}`, 200, { token })).toMatchObject({
      functionId: first,
      nextId: next,
      status: 500,
      includeResult: true,
      description: "after",
      tags: [{ id: tag, name: "prod", color: "#808080" }],
    });
    await expectNoContent(call(`/v1/trigger/${id}`, { token, method: "PATCH", json: {} }));
    await expectNoContent(call(`/v1/trigger/${id}`, { token, method: "PATCH", json: { tag: [] } }));
    expect(await callJson(`/v1/trigger/${id}`, 200, { token })).toMatchObject({ status: 500, includeResult: true, tags: [] });
  });

  it("refuses functionId and nextId, which are set at creation", async () => {
    const { token, first, next } = await twoFunctions();
    const id = await newTrigger(token, { functionId: first, nextId: next });
    for (const field of ["functionId", "nextId"]) {
      const err = await expectError(call(`/v1/trigger/${id}`, { token, method: "PATCH", json: { [field]: first } }), 400, "validation_failed");
      expect(err.details).toEqual([{ field, message: expect.stringContaining("cannot be edited") }]);
    }
    expect(await callJson(`/v1/trigger/${id}`, 200, { token })).toMatchObject({ functionId: first, nextId: next });
  });

  it("validates like create", async () => {
    const { token, first, next } = await twoFunctions();
    const id = await newTrigger(token, { functionId: first, nextId: next });
    const patch = (json: unknown) => call(`/v1/trigger/${id}`, { token, method: "PATCH", json });
    await expectError(patch({ status: 600 }), 400, "validation_failed");
    await expectError(patch({ includeResult: "no" }), 400, "validation_failed");
    await expectError(patch({ description: "d".repeat(257) }), 400, "validation_failed");
    await expectError(patch({ tag: ["nosuchtag"] }), 400, "validation_failed");
    await expectError(patch({ createdAt: "now" }), 400, "validation_failed");
    await expectError(call(`/v1/trigger/${id}`, { token, method: "PATCH", body: "{}" }), 415, "unsupported_media_type");
  });

  it("answers 404 for an unknown id", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/trigger/nosuchtrigger", { token, method: "PATCH", json: { status: 201 } }), 404, "not_found");
  });
});

describe("DELETE /v1/trigger/<trigger_id>", () => {
  it("answers 204, after which the trigger is gone", async () => {
    const { token, first, next } = await twoFunctions();
    const id = await newTrigger(token, { functionId: first, nextId: next });
    await expectNoContent(call(`/v1/trigger/${id}`, { token, method: "DELETE" }));
    await expectError(call(`/v1/trigger/${id}`, { token }), 404, "not_found");
    await expectError(call(`/v1/trigger/${id}`, { token, method: "DELETE" }), 404, "not_found");
  });
});

describe("GET /v1/trigger/list", () => {
  /** n triggers of `first` (past the limit of one function, of a third one), plus one of `next`, oldest first. */
  async function manyTriggers(n: number) {
    const ctx = await twoFunctions();
    const third = n > MAX_TRIGGERS_PER_FUNCTION ? await newFunction(ctx.token, { name: "third" }) : ctx.first;
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push(await newTrigger(ctx.token, { functionId: i < MAX_TRIGGERS_PER_FUNCTION ? ctx.first : third, nextId: ctx.next, status: 200 + i }));
    const ofNext = await newTrigger(ctx.token, { functionId: ctx.next, nextId: ctx.first });
    return { ...ctx, ids, ofNext };
  }

  it("answers the envelope with items {id, functionId, nextId, tags, status, includeResult, createdAt}, newest first", async () => {
    const { token, first, next } = await twoFunctions();
    const tag = await newTag(token);
    const older = await newTrigger(token, { functionId: first, nextId: next, includeResult: true, description: "not listed" });
    const newer = await newTrigger(token, { functionId: next, nextId: first, status: 201, tag: [tag] });
    expect(await callJson("/v1/trigger/list", 200, { token })).toEqual({
      pageCount: 1,
      pageSize: 10,
      totalCount: 2,
      results: [
        { id: newer, functionId: next, nextId: first, tags: [{ id: tag, name: "prod", color: "#808080" }], status: 201, includeResult: false, createdAt: expect.stringMatching(ISO_UTC) },
        { id: older, functionId: first, nextId: next, tags: [], status: 200, includeResult: true, createdAt: expect.stringMatching(ISO_UTC) },
      ],
    });
  });

  it("answers an empty envelope for an account without triggers", async () => {
    const { token } = await newAccount();
    expect(await callJson("/v1/trigger/list", 200, { token })).toEqual({ pageCount: 0, pageSize: 10, totalCount: 0, results: [] });
  });

  it("pages at the bounds of limit: 3 and 20, with a page past the end empty", async () => {
    const { token, ids, ofNext } = await manyTriggers(20);
    const newestFirst = [ofNext, ...ids.reverse()];
    const p1 = await getJsonWithBody("/v1/trigger/list", 200, { token, json: { limit: 20 } });
    expect({ ...p1, results: p1.results.map((r: { id: string }) => r.id) }).toEqual({ pageCount: 2, pageSize: 20, totalCount: 21, results: newestFirst.slice(0, 20) });
    const p2 = await getJsonWithBody("/v1/trigger/list", 200, { token, json: { limit: 20, page: 2 } });
    expect(p2.results.map((r: { id: string }) => r.id)).toEqual(newestFirst.slice(20));
    expect(await getJsonWithBody("/v1/trigger/list", 200, { token, json: { limit: 20, page: 3 } })).toEqual({ pageCount: 2, pageSize: 20, totalCount: 21, results: [] });
    const p7 = await getJsonWithBody("/v1/trigger/list", 200, { token, json: { limit: 3, page: 7 } });
    expect({ ...p7, results: p7.results.map((r: { id: string }) => r.id) }).toEqual({ pageCount: 7, pageSize: 3, totalCount: 21, results: newestFirst.slice(18, 21) });
    expect(await getJsonWithBody("/v1/trigger/list", 200, { token, json: { limit: 3, page: 8 } })).toMatchObject({ pageCount: 7, results: [] });
  });

  it("defaults to page 1 of 10", async () => {
    const { token, ids, ofNext } = await manyTriggers(11);
    const body = await callJson("/v1/trigger/list", 200, { token });
    expect({ ...body, results: body.results.map((r: { id: string }) => r.id) }).toEqual({
      pageCount: 2,
      pageSize: 10,
      totalCount: 12,
      results: [ofNext, ...ids.reverse()].slice(0, 10),
    });
  });

  it("refuses limit 2 and 21, page 0 and non-integers, in the body and in the query", async () => {
    const { token } = await newAccount();
    for (const json of [{ limit: 2 }, { limit: 21 }, { page: 0 }, { page: -1 }, { limit: 3.5 }, { limit: "ten" }, { limit: null }, { sort: "id" }])
      await expectError(getWithBody("/v1/trigger/list", { token, body: JSON.stringify(json), headers: { "content-type": "application/json" } }), 400, "validation_failed");
    for (const q of ["limit=2", "limit=21", "page=0", "page=x", "limit=3&limit=4", "sort=id"])
      await expectError(call(`/v1/trigger/list?${q}`, { token }), 400, "validation_failed");
  });

  it("accepts the filters as query parameters; the body wins over the query", async () => {
    const { token } = await manyTriggers(5);
    expect(await callJson("/v1/trigger/list?limit=4&page=2", 200, { token })).toMatchObject({ pageCount: 2, pageSize: 4, totalCount: 6 });
    const res = await getJsonWithBody("/v1/trigger/list?limit=4&page=2", 200, { token, json: { limit: 3 } });
    expect(res).toMatchObject({ pageCount: 2, pageSize: 3, totalCount: 6 });
    expect(res.results).toHaveLength(3);
  });

  it("restricts the list to one function with functionId; an unknown function answers 404", async () => {
    const { token, first, next, ids, ofNext } = await manyTriggers(4);
    const byFirst = await getJsonWithBody("/v1/trigger/list", 200, { token, json: { functionId: first } });
    expect(byFirst.totalCount).toBe(4);
    expect(byFirst.results.map((r: { id: string }) => r.id)).toEqual([...ids].reverse());
    const byNext = await callJson(`/v1/trigger/list?functionId=${next}`, 200, { token });
    expect(byNext.results.map((r: { id: string }) => r.id)).toEqual([ofNext]);
    await expectError(getWithBody("/v1/trigger/list", { token, body: '{"functionId":"nosuchfunction"}' }), 404, "not_found");
  });

  it("takes a filter body with or without Content-Type, but not under another type (415)", async () => {
    const { token } = await newAccount();
    expect((await getWithBody("/v1/trigger/list", { token, body: '{"limit":3}' })).status).toBe(200);
    await expectError(getWithBody("/v1/trigger/list", { token, body: '{"limit":3}', headers: { "content-type": "text/plain" } }), 415, "unsupported_media_type");
    const bodiless = await call("/v1/trigger/list?limit=4", { token, headers: { "content-type": "text/plain" } });
    expect([bodiless.status, ((await bodiless.json()) as { pageSize: number }).pageSize]).toEqual([200, 4]);
  });

  it("refuses a filter body that is not a JSON object", async () => {
    const { token } = await newAccount();
    await expectError(getWithBody("/v1/trigger/list", { token, body: "{limit:3}" }), 400, "invalid_json");
    await expectError(getWithBody("/v1/trigger/list", { token, body: "[3]" }), 400, "validation_failed");
    await expectError(getWithBody("/v1/trigger/list", { token, body: JSON.stringify({ limit: 3, pad: "x".repeat(10 * 1024 * 1024) }) }), 413, "payload_too_large");
  });
});
