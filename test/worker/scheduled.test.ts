import { describe, expect, it } from "vitest";
import {
  call,
  callJson,
  clearQueue,
  deployedFunction,
  expectError,
  expectNoContent,
  getJsonWithBody,
  getWithBody,
  ISO_UTC,
  newAccount,
  newFunction,
  RECORD_ID, flushedDb } from "./helpers.js";

/** Never due while a test runs (midnight on the 1st of January): firing is tested in scheduled-alarms. */
const YEARLY = "0 0 1 1 *";

async function newSchedule(token: string, body: Record<string, unknown>) {
  const { id } = await callJson<{ id: string }>("/v1/scheduled", 201, { token, json: { cron: YEARLY, timezone: "UTC", ...body } });
  return id;
}

async function owner() {
  const acct = await newAccount();
  const fn = await newFunction(acct.token);
  return { ...acct, fn };
}

const fieldsOf = (err: { details?: { field: string }[] }) => err.details?.map((d) => d.field);

describe("POST /v1/scheduled", () => {
  it("answers 201 with the id; the new schedule is active and has no payload", async () => {
    const { token, fn } = await owner();
    const body = await callJson("/v1/scheduled", 201, { token, json: { functionId: fn, cron: "*/5 9-17 * * mon-fri", timezone: "Europe/London", description: "office hours" } });
    expect(body).toEqual({ id: expect.stringMatching(RECORD_ID) });
    expect(await callJson(`/v1/scheduled/${body.id}`, 200, { token })).toEqual({
      id: body.id,
      active: true,
      functionId: fn,
      cron: "*/5 9-17 * * mon-fri",
      timezone: "Europe/London",
      description: "office hours",
      inlinePayload: null,
      createdAt: expect.stringMatching(ISO_UTC),
    });
  });

  it("defaults the description to empty, and requires functionId, cron and timezone", async () => {
    const { token, fn } = await owner();
    const id = await newSchedule(token, { functionId: fn });
    expect(await callJson(`/v1/scheduled/${id}`, 200, { token })).toMatchObject({ description: "" });
    for (const missing of ["functionId", "cron", "timezone"]) {
      const json: Record<string, unknown> = { functionId: fn, cron: YEARLY, timezone: "UTC" };
      delete json[missing];
      expect(fieldsOf(await expectError(call("/v1/scheduled", { token, json }), 400, "validation_failed"))).toEqual([missing]);
    }
  });

  it.each([
    ["61 * * * *", "minute field"],
    ["* 25 * * *", "hour field"],
    ["* * 32 * *", "day of month field"],
    ["* * * 0 *", "month field"],
    ["* * * * funday", "day of week field"],
    ["*/0 * * * *", "step"],
    ["* * * *", "five fields"],
    ["0 0 30 2 *", "never run"],
  ])("refuses the cron expression %j, saying what is wrong", async (cron, says) => {
    const { token, fn } = await owner();
    const err = await expectError(call("/v1/scheduled", { token, json: { functionId: fn, cron, timezone: "UTC" } }), 400, "validation_failed");
    expect(err.details).toEqual([{ field: "cron", message: expect.stringContaining(says) }]);
  });

  it("refuses an unknown time zone, a non-string cron, unknown fields and a long description", async () => {
    const { token, fn } = await owner();
    const base = { functionId: fn, cron: YEARLY, timezone: "UTC" };
    const cases: [Record<string, unknown>, string][] = [
      [{ timezone: "Mars/Olympus_Mons" }, "timezone"],
      [{ timezone: "" }, "timezone"],
      [{ cron: 5 }, "cron"],
      [{ description: "d".repeat(257) }, "description"],
      [{ active: false }, "active"],
      [{ payload: "x" }, "payload"],
    ];
    for (const [change, field] of cases)
      expect(fieldsOf(await expectError(call("/v1/scheduled", { token, json: { ...base, ...change } }), 400, "validation_failed")), JSON.stringify(change)).toEqual([field]);
  });

  it("refuses a functionId of another account with 400 naming the field, as triggers do", async () => {
    const { token } = await owner();
    const other = await owner();
    const err = await expectError(call("/v1/scheduled", { token, json: { functionId: other.fn, cron: YEARLY, timezone: "UTC" } }), 400, "validation_failed");
    expect(fieldsOf(err)).toEqual(["functionId"]);
  });

  it("requires a JSON Content-Type", async () => {
    const { token, fn } = await owner();
    await expectError(call("/v1/scheduled", { token, body: JSON.stringify({ functionId: fn, cron: YEARLY, timezone: "UTC" }), headers: { "content-type": "text/plain" } }), 415, "unsupported_media_type");
  });
});

describe("PATCH /v1/scheduled/:id", () => {
  it("answers 204 and changes active, cron, timezone and description", async () => {
    const { token, fn } = await owner();
    const id = await newSchedule(token, { functionId: fn, description: "before" });
    await expectNoContent(call(`/v1/scheduled/${id}`, { token, method: "PATCH", json: { active: false, cron: "30 6 * * sun", timezone: "America/New_York", description: "after" } }));
    expect(await callJson(`/v1/scheduled/${id}`, 200, { token })).toMatchObject({ active: false, cron: "30 6 * * sun", timezone: "America/New_York", description: "after" });
    // Without a description, the description stays.
    await expectNoContent(call(`/v1/scheduled/${id}`, { token, method: "PATCH", json: { active: true, cron: YEARLY, timezone: "UTC" } }));
    expect(await callJson(`/v1/scheduled/${id}`, 200, { token })).toMatchObject({ active: true, cron: YEARLY, timezone: "UTC", description: "after" });
  });

  it("requires active, cron and timezone, and refuses bad values and other fields", async () => {
    const { token, fn } = await owner();
    const id = await newSchedule(token, { functionId: fn });
    const base = { active: true, cron: YEARLY, timezone: "UTC" };
    for (const missing of ["active", "cron", "timezone"]) {
      const json: Record<string, unknown> = { ...base };
      delete json[missing];
      expect(fieldsOf(await expectError(call(`/v1/scheduled/${id}`, { token, method: "PATCH", json }), 400, "validation_failed"))).toEqual([missing]);
    }
    const cases: [Record<string, unknown>, string][] = [
      [{ active: "yes" }, "active"],
      [{ cron: "* * * * * *" }, "cron"],
      [{ timezone: "Europe/Atlantis" }, "timezone"],
      [{ functionId: fn }, "functionId"],
    ];
    for (const [change, field] of cases)
      expect(fieldsOf(await expectError(call(`/v1/scheduled/${id}`, { token, method: "PATCH", json: { ...base, ...change } }), 400, "validation_failed"))).toEqual([field]);
  });

  it("answers 404 for another account's schedule and leaves it alone", async () => {
    const a = await owner();
    const b = await owner();
    const id = await newSchedule(a.token, { functionId: a.fn });
    await expectError(call(`/v1/scheduled/${id}`, { token: b.token, method: "PATCH", json: { active: false, cron: YEARLY, timezone: "UTC" } }), 404, "not_found");
    expect(await callJson(`/v1/scheduled/${id}`, 200, { token: a.token })).toMatchObject({ active: true });
  });
});

describe("GET /v1/scheduled/:id", () => {
  it("answers 404 for an unknown id and for another account's schedule", async () => {
    const a = await owner();
    const b = await owner();
    const id = await newSchedule(a.token, { functionId: a.fn });
    await expectError(call(`/v1/scheduled/${id}`, { token: b.token }), 404, "not_found");
    await expectError(call("/v1/scheduled/nosuchschedule", { token: a.token }), 404, "not_found");
  });
});

describe("GET /v1/scheduled/list", () => {
  it("answers the pagination envelope, newest first, without payloads or creation times", async () => {
    const { token, fn } = await owner();
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await newSchedule(token, { functionId: fn, description: `s${i}` }));
    const page = await getJsonWithBody("/v1/scheduled/list", 200, { token, json: { limit: 3 } });
    expect(page).toEqual({
      pageCount: 2,
      pageSize: 3,
      totalCount: 4,
      results: ids.reverse().slice(0, 3).map((id, i) => ({ id, active: true, functionId: fn, cron: YEARLY, timezone: "UTC", description: `s${3 - i}` })),
    });
    expect(await getJsonWithBody("/v1/scheduled/list", 200, { token, json: { limit: 3, page: 2 } })).toMatchObject({ totalCount: 4, results: [{ id: ids[3] }] });
    expect(await getJsonWithBody("/v1/scheduled/list", 200, { token, json: { limit: 3, page: 3 } })).toMatchObject({ results: [] });
    expect(await callJson("/v1/scheduled/list", 200, { token })).toMatchObject({ pageSize: 10, totalCount: 4 });
    expect(await callJson("/v1/scheduled/list?limit=999", 200, { token })).toMatchObject({ pageSize: 999, pageCount: 1 });
  });

  it("filters by functionId and by timezone, and shows only the caller's schedules", async () => {
    const { token, fn } = await owner();
    const other = await newFunction(token, { name: "other" });
    const paris = await newSchedule(token, { functionId: fn, timezone: "Europe/Paris" });
    const utc = await newSchedule(token, { functionId: other });
    const stranger = await owner();
    await newSchedule(stranger.token, { functionId: stranger.fn, timezone: "Europe/Paris" });
    const ids = async (json: unknown) => (await getJsonWithBody("/v1/scheduled/list", 200, { token, json })).results.map((r: { id: string }) => r.id);
    expect(await ids({ functionId: fn })).toEqual([paris]);
    expect(await ids({ timezone: "Europe/Paris" })).toEqual([paris]);
    expect(await ids({ timezone: "UTC", functionId: other })).toEqual([utc]);
    expect(await ids({})).toEqual([utc, paris]);
  });

  it("refuses limit 2 and 1000, page 0, an unknown zone and unknown fields; another account's function answers 404", async () => {
    const { token } = await owner();
    for (const json of [{ limit: 2 }, { limit: 1000 }, { page: 0 }, { timezone: "Nowhere/City" }, { tag: "x" }]) {
      const err = await expectError(getWithBody("/v1/scheduled/list", { token, body: JSON.stringify(json), headers: { "content-type": "application/json" } }), 400, "validation_failed");
      expect(fieldsOf(err)).toEqual(Object.keys(json));
    }
    await expectError(call("/v1/scheduled/list?limit=2", { token }), 400, "validation_failed");
    await expectError(call("/v1/scheduled/list?limit=1000", { token }), 400, "validation_failed");
    const stranger = await owner();
    await expectError(call(`/v1/scheduled/list?functionId=${stranger.fn}`, { token }), 404, "not_found");
  });
});

describe("PUT /v1/scheduled/:id/payload", () => {
  it("stores the body of any Content-Type byte for byte, as base64, with its Content-Type and the query string", async () => {
    const { token, fn } = await owner();
    const id = await newSchedule(token, { functionId: fn });
    const bytes = new Uint8Array([0, 255, 1, 254, 0x80, 10]);
    await expectNoContent(call(`/v1/scheduled/${id}/payload?a=1&b=x&b=y`, { token, method: "PUT", body: bytes, headers: { "content-type": "application/octet-stream" } }));
    expect((await callJson(`/v1/scheduled/${id}`, 200, { token })).inlinePayload).toEqual({ query: "a=1&b=x&b=y", body: btoa(String.fromCharCode(...bytes)), contentType: "application/octet-stream" });
    // A second PUT replaces the first; an empty body and no query are a payload too.
    await expectNoContent(call(`/v1/scheduled/${id}/payload`, { token, method: "PUT" }));
    expect((await callJson(`/v1/scheduled/${id}`, 200, { token })).inlinePayload).toEqual({ query: "", body: "", contentType: null });
  });

  it("refuses a body that says JSON and is not, and answers 404 for another account's schedule", async () => {
    const a = await owner();
    const b = await owner();
    const id = await newSchedule(a.token, { functionId: a.fn });
    await expectError(call(`/v1/scheduled/${id}/payload`, { token: a.token, method: "PUT", body: "{not json", headers: { "content-type": "application/json" } }), 400, "invalid_json");
    await expectError(call(`/v1/scheduled/${id}/payload`, { token: b.token, method: "PUT", body: "hijack", headers: { "content-type": "text/plain" } }), 404, "not_found");
    expect((await callJson(`/v1/scheduled/${id}`, 200, { token: a.token })).inlinePayload).toBeNull();
  });
});

describe("POST /v1/scheduled/:id/try", () => {
  it("answers 201 with a task of the function carrying the payload and the schedule's id", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await newSchedule(token, { functionId: fn });
    const bytes = new Uint8Array([0xc3, 0x28, 0x00, 0xff]); // not UTF-8
    await expectNoContent(call(`/v1/scheduled/${id}/payload?city=Oslo`, { token, method: "PUT", body: bytes, headers: { "content-type": "image/x-raw" } }));
    const task = await callJson(`/v1/scheduled/${id}/try`, 201, { token, method: "POST" });
    expect(task).toEqual({ id: expect.stringMatching(RECORD_ID) });
    expect(await callJson(`/v1/task/${task.id}`, 200, { token })).toMatchObject({ functionId: fn, scheduledId: id, status: 0, endpointId: null, triggerId: null });
    const row = await (await flushedDb()).prepare("select input from tasks where id = ?").bind(task.id).first<{ input: string }>();
    expect(JSON.parse(row!.input)).toEqual({ method: "POST", query: { city: "Oslo" }, headers: { "content-type": "image/x-raw" }, body: btoa(String.fromCharCode(...bytes)), bodyEncoding: "base64" });
    await clearQueue();
  });

  it("hands over UTF-8 text as text, and runs an empty POST without a payload", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await newSchedule(token, { functionId: fn });
    const bare = await callJson(`/v1/scheduled/${id}/try`, 201, { token, method: "POST" });
    await expectNoContent(call(`/v1/scheduled/${id}/payload`, { token, method: "PUT", body: '{"n": "ünï"}', headers: { "content-type": "application/json" } }));
    const withJson = await callJson(`/v1/scheduled/${id}/try`, 201, { token, method: "POST" });
    const input = async (taskId: string) => JSON.parse((await (await flushedDb()).prepare("select input from tasks where id = ?").bind(taskId).first<{ input: string }>())!.input);
    expect(await input(bare.id)).toEqual({ method: "POST", query: {}, headers: {}, body: null });
    expect(await input(withJson.id)).toEqual({ method: "POST", query: {}, headers: { "content-type": "application/json" }, body: '{"n": "ünï"}' });
    await clearQueue();
  });

  it("answers as the task API does for a function without a build (409), and 404 for another account's schedule", async () => {
    const a = await owner();
    const b = await owner();
    const id = await newSchedule(a.token, { functionId: a.fn });
    await expectError(call(`/v1/scheduled/${id}/try`, { token: a.token, method: "POST" }), 409, "no_successful_build");
    await expectError(call(`/v1/scheduled/${id}/try`, { token: b.token, method: "POST" }), 404, "not_found");
  });
});

describe("DELETE /v1/scheduled/:id", () => {
  it("answers 204, after which the schedule is gone", async () => {
    const { token, fn } = await owner();
    const id = await newSchedule(token, { functionId: fn });
    await expectNoContent(call(`/v1/scheduled/${id}`, { token, method: "DELETE" }));
    await expectError(call(`/v1/scheduled/${id}`, { token }), 404, "not_found");
    await expectError(call(`/v1/scheduled/${id}`, { token, method: "DELETE" }), 404, "not_found");
  });

  it("answers 404 for another account's schedule and keeps it", async () => {
    const a = await owner();
    const b = await owner();
    const id = await newSchedule(a.token, { functionId: a.fn });
    await expectError(call(`/v1/scheduled/${id}`, { token: b.token, method: "DELETE" }), 404, "not_found");
    await callJson(`/v1/scheduled/${id}`, 200, { token: a.token });
  });

  it("is what deleting the function does to its schedules", async () => {
    const { token, fn } = await owner();
    const id = await newSchedule(token, { functionId: fn });
    await expectNoContent(call(`/v1/function/${fn}`, { token, method: "DELETE" }));
    await expectError(call(`/v1/scheduled/${id}`, { token }), 404, "not_found");
  });
});
