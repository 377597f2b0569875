import { env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { ADMIN, call, callDirect, callJson, clearQueue, expectError, expectNoContent, ISO_UTC, markBuild, newAccount, newFunction, sql, tinyZip, uploadBuild, flushedDb } from "./helpers.js";
import { limitDefaults } from "../../worker/limits/account-limits.js";

beforeEach(clearQueue);

const DEFAULTS = { schedules: 100, queuedBuilds: 10, artifactsKept: 5, syncWaits: 32 };

const setLimits = (accountId: string, limits: Record<string, unknown>) =>
  expectNoContent(call(`/v1/admin/accounts/${accountId}`, { token: ADMIN, method: "PATCH", json: { limits } }));

const limitsOf = async (accountId: string) => (await callJson(`/v1/admin/accounts/${accountId}`, 200, { token: ADMIN })).limits;

/** Never due while a test runs. */
const YEARLY = "0 0 1 1 *";
const createSchedule = (token: string, functionId: string) => callDirect("/v1/scheduled", { token, json: { functionId, cron: YEARLY, timezone: "UTC" } });

const upload = (token: string, functionId: string) =>
  call(`/v1/build/${functionId}?arch=amd64`, { token, body: tinyZip(), headers: { "content-type": "application/octet-stream" } });

describe("GET /v1/admin/accounts/<account_id>", () => {
  it("shows the account's plan, its grants (privileged, egress) and the limits that apply to it, the defaults until the operator changes one", async () => {
    const { accountId } = await newAccount("limited");
    expect(await callJson(`/v1/admin/accounts/${accountId}`, 200, { token: ADMIN })).toEqual({
      id: accountId,
      name: "limited",
      plan: "DEVELOPER",
      privileged: false,
      egress: false,
      createdAt: expect.stringMatching(ISO_UTC),
      limits: DEFAULTS,
    });
  });

  it("answers 404 for an unknown account and 401 without the operator secret", async () => {
    await expectError(call("/v1/admin/accounts/nosuchaccount", { token: ADMIN }), 404, "not_found");
    const { accountId, token } = await newAccount();
    await expectError(call(`/v1/admin/accounts/${accountId}`, { token }), 401, "unauthorized");
  });
});

describe("PATCH /v1/admin/accounts/<account_id> with limits", () => {
  it("changes any subset of the limits, keeps the others, and null gives a limit back its default", async () => {
    const { accountId } = await newAccount();
    await setLimits(accountId, { schedules: 3, syncWaits: 0 });
    expect(await limitsOf(accountId)).toEqual({ ...DEFAULTS, schedules: 3, syncWaits: 0 });
    await setLimits(accountId, { queuedBuilds: 40 });
    expect(await limitsOf(accountId)).toEqual({ ...DEFAULTS, schedules: 3, syncWaits: 0, queuedBuilds: 40 });
    await setLimits(accountId, { schedules: null });
    expect(await limitsOf(accountId)).toEqual({ ...DEFAULTS, syncWaits: 0, queuedBuilds: 40 });
  });

  it("takes a plan and limits together", async () => {
    const { accountId } = await newAccount();
    await expectNoContent(call(`/v1/admin/accounts/${accountId}`, { token: ADMIN, method: "PATCH", json: { plan: "TINY", limits: { artifactsKept: 2 } } }));
    expect(await callJson(`/v1/admin/accounts/${accountId}`, 200, { token: ADMIN })).toMatchObject({ plan: "TINY", limits: { ...DEFAULTS, artifactsKept: 2 } });
  });

  it("refuses an unknown limit, a negative or fractional value, and a value of the wrong type, changing nothing", async () => {
    const { accountId } = await newAccount();
    const patch = (limits: unknown) => call(`/v1/admin/accounts/${accountId}`, { token: ADMIN, method: "PATCH", json: { limits } });
    expect((await expectError(patch({ schedules: 5, builds: 3 }), 400, "validation_failed")).details).toEqual([{ field: "limits.builds", message: "is not a known field" }]);
    expect((await expectError(patch({ schedules: -1 }), 400, "validation_failed")).details).toEqual([{ field: "limits.schedules", message: "schedules must be at least 0" }]);
    expect((await expectError(patch({ syncWaits: 2.5 }), 400, "validation_failed")).details).toEqual([{ field: "limits.syncWaits", message: "syncWaits must be an integer" }]);
    expect((await expectError(patch({ queuedBuilds: "10" }), 400, "validation_failed")).details).toEqual([{ field: "limits.queuedBuilds", message: "queuedBuilds must be an integer" }]);
    // A function must keep the artifact it runs.
    expect((await expectError(patch({ artifactsKept: 0 }), 400, "validation_failed")).details).toEqual([{ field: "limits.artifactsKept", message: "artifactsKept must be at least 1" }]);
    await expectError(patch([1]), 400, "validation_failed");
    await expectError(call(`/v1/admin/accounts/${accountId}`, { token: ADMIN, method: "PATCH", json: {} }), 400, "validation_failed");
    expect(await limitsOf(accountId)).toEqual(DEFAULTS);
  });

  it("answers 404 for an unknown account", async () => {
    await expectError(call("/v1/admin/accounts/nosuchaccount", { token: ADMIN, method: "PATCH", json: { limits: { schedules: 1 } } }), 404, "not_found");
  });
});

describe("the operator's defaults (ACCOUNT_LIMITS)", () => {
  it("override the built-in values one by one; a malformed value leaves the built-in ones", () => {
    expect(limitDefaults({})).toEqual(DEFAULTS);
    expect(limitDefaults({ ACCOUNT_LIMITS: '{"schedules": 7}' })).toEqual({ ...DEFAULTS, schedules: 7 });
    for (const bad of ["{", '{"schedules": -1}', '{"nope": 1}', "[]"]) expect(limitDefaults({ ACCOUNT_LIMITS: bad }), bad).toEqual(DEFAULTS);
    expect(limitDefaults(env)).toEqual(DEFAULTS);
  });
});

describe("POST /v1/scheduled past the schedules limit", () => {
  it("accepts 100 schedules by default and refuses the 101st with 429 limit_reached, naming the limit and its value", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    for (let i = 0; i < 100; i++) expect((await createSchedule(token, fn)).status).toBe(201);
    const res = await createSchedule(token, fn);
    expect(res.status).toBe(429);
    expect(await res.json()).toEqual({
      error: { code: "limit_reached", message: "limit schedules reached: the account may hold 100 schedules", details: [{ field: "schedules", message: "limit is 100" }] },
    });
    // Deleting one makes room for one.
    const { results } = await callJson(`/v1/scheduled/list?limit=3`, 200, { token });
    await expectNoContent(call(`/v1/scheduled/${results[0].id}`, { token, method: "DELETE" }));
    expect((await createSchedule(token, fn)).status).toBe(201);
    expect((await createSchedule(token, fn)).status).toBe(429);
  });

  it("holds exactly the account's own limit under concurrent creates, and a raised limit lets more in", async () => {
    const { token, accountId } = await newAccount();
    const fn = await newFunction(token);
    await setLimits(accountId, { schedules: 3 });
    const statuses = (await Promise.all(Array.from({ length: 10 }, () => createSchedule(token, fn)))).map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(3);
    expect(statuses.filter((s) => s === 429)).toHaveLength(7);
    await setLimits(accountId, { schedules: 4 });
    expect((await createSchedule(token, fn)).status).toBe(201);
    await expectError(createSchedule(token, fn), 429, "limit_reached");
    // Another account is not held back by this one.
    const other = await newAccount();
    expect((await createSchedule(other.token, await newFunction(other.token))).status).toBe(201);
  });
});

describe("PUT /v1/scheduled/<id>/payload", () => {
  it("keeps a large payload in R2, not in the D1 row, and refuses one over 10 MiB with 413", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    const { id } = await callJson("/v1/scheduled", 201, { token, json: { functionId: fn, cron: YEARLY, timezone: "UTC" } });
    const nine = new Uint8Array(9 * 1024 * 1024).fill(7);
    await expectNoContent(call(`/v1/scheduled/${id}/payload`, { token, method: "PUT", body: nine, headers: { "content-type": "application/octet-stream" } }));
    const row = await (await flushedDb()).prepare("select * from schedules where id = ?").bind(id).first<Record<string, unknown>>();
    expect(JSON.stringify(row).length).toBeLessThan(1024);
    const listed = await env.BUCKET.list({ prefix: "acct/" });
    expect(listed.objects.filter((o) => o.key.endsWith(`schedules/${id}/payload.bin`)).map((o) => o.size)).toEqual([nine.length]);
    const over = new Uint8Array(10 * 1024 * 1024 + 1);
    await expectError(call(`/v1/scheduled/${id}/payload`, { token, method: "PUT", body: over, headers: { "content-type": "application/octet-stream" } }), 413, "payload_too_large");
  });
});

describe("POST /v1/build/<function_id> past the queuedBuilds limit", () => {
  it("accepts 10 builds queued or running by default, refuses the 11th with 429 limit_reached and stores nothing of it", async () => {
    const { token, accountId } = await newAccount();
    const fn = await newFunction(token);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push((await uploadBuild(token, fn)).id);
    // One is running: it still counts.
    await sql("update builds set status = 'BUILDING' where id = ?", ids[0]);
    const res = await upload(token, fn);
    expect(res.status).toBe(429);
    expect(await res.json()).toEqual({
      error: {
        code: "limit_reached",
        message: "limit queuedBuilds reached: the account may have 10 builds queued or running at once",
        details: [{ field: "queuedBuilds", message: "limit is 10" }],
      },
    });
    const zips = (await env.BUCKET.list({ prefix: `acct/${accountId}/` })).objects.filter((o) => o.key.endsWith("source.zip"));
    expect(zips).toHaveLength(10);
    expect((await (await flushedDb()).prepare("select count(*) as n from builds where account_id = ?").bind(accountId).first<{ n: number }>())!.n).toBe(10);
    // A finished build (either way) makes room for one.
    await markBuild(ids[1]!, "FAILED");
    await uploadBuild(token, fn);
    await expectError(upload(token, fn), 429, "limit_reached");
  });

  it("reads the body to its end before refusing, so the client's connection stays usable", async () => {
    const { token, accountId } = await newAccount();
    const fn = await newFunction(token);
    await setLimits(accountId, { queuedBuilds: 0 });
    const total = 3 * 1024 * 1024;
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(ctrl) {
        if (sent >= total) return ctrl.close();
        const chunk = new Uint8Array(64 * 1024);
        chunk.set([0x50, 0x4b, 0x03, 0x04]);
        sent += chunk.length;
        ctrl.enqueue(chunk);
      },
    });
    const res = await call(`/v1/build/${fn}?arch=amd64`, { token, body, headers: { "content-type": "application/octet-stream", "content-length": String(total) } });
    expect(res.status).toBe(429);
    await res.text();
    expect(sent).toBe(total);
  });

  it("holds exactly the account's own limit under concurrent uploads, and a raised limit lets more in", async () => {
    const { token, accountId } = await newAccount();
    const fn = await newFunction(token);
    await setLimits(accountId, { queuedBuilds: 2 });
    const statuses = (await Promise.all(Array.from({ length: 6 }, () => upload(token, fn)))).map((r) => r.status);
    expect(statuses.sort()).toEqual([201, 201, 429, 429, 429, 429]);
    const zips = (await env.BUCKET.list({ prefix: `acct/${accountId}/` })).objects.filter((o) => o.key.endsWith("source.zip"));
    expect(zips).toHaveLength(2);
    await setLimits(accountId, { queuedBuilds: 3 });
    await uploadBuild(token, fn);
    await expectError(upload(token, fn), 429, "limit_reached");
  });
});
