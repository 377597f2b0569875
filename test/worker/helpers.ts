import { createExecutionContext, createScheduledController, env, runInDurableObject, SELF, waitOnExecutionContext } from "cloudflare:test";
import worker from "../../worker/index.js";
import { allShards, shardStub } from "../../worker/dispatch/client.js";
import type { Bindings } from "../../worker/env.js";
import { forgetShardsCountIssuesFrom } from "../../worker/tasks/issue-counts-from.js";
import type { IssueCounts, Issue } from "../../worker/shard-history/issue-counts.js";
import { afterAll, beforeEach, expect } from "vitest";
import { createApp } from "../../worker/app.js";

export const ADMIN = "test-admin-token";

export interface CallOptions {
  method?: string;
  token?: string | null;
  /** A value to send as JSON (Content-Type set), or a raw string/bytes with `headers`. */
  json?: unknown;
  body?: BodyInit;
  headers?: Record<string, string>;
  /** Aborting it drops the connection, as a client that went away. */
  signal?: AbortSignal;
}

/** URL, method, headers and body of a test call: token as Bearer, `json` serialised with its type. */
function requestParts(path: string, o: CallOptions) {
  const headers = new Headers(o.headers);
  if (o.token) headers.set("authorization", `Bearer ${o.token}`);
  let body = o.body;
  if (o.json !== undefined) {
    body = JSON.stringify(o.json);
    if (!headers.has("content-type")) headers.set("content-type", "application/json");
  }
  return { url: `https://api.test${path}`, method: o.method ?? (body === undefined ? "GET" : "POST"), headers, body };
}

export async function call(path: string, o: CallOptions = {}): Promise<Response> {
  const { url, ...init } = requestParts(path, o);
  return SELF.fetch(url, o.signal ? { ...init, signal: o.signal } : init);
}

/** Calls and parses JSON, asserting the status first (with the body in the failure message). */
export async function callJson<T = any>(path: string, status: number, o: CallOptions = {}): Promise<T> {
  const res = await call(path, o);
  const text = await res.text();
  expect(res.status, `${o.method ?? "GET"} ${path} → ${text}`).toBe(status);
  return (text ? JSON.parse(text) : undefined) as T;
}

export async function expectError(res: Response | Promise<Response>, status: number, code: string) {
  const r = await res;
  const body = (await r.json()) as any;
  expect({ status: r.status, code: body?.error?.code }, JSON.stringify(body)).toEqual({ status, code });
  expect(typeof body.error.message).toBe("string");
  return body.error as { code: string; message: string; details?: { field: string; message: string }[] };
}

export async function newAccount(name = "acme") {
  return callJson<{ accountId: string; token: string; tokenId: string }>("/v1/admin/accounts", 201, { token: ADMIN, json: { name } });
}

/** The operator grants the account privileged functions or network egress (or revokes the grant): both off by default. */
export const setGrant = (accountId: string, grant: "privileged" | "egress", allowed = true) =>
  callJson(`/v1/admin/accounts/${accountId}`, 204, { token: ADMIN, method: "PATCH", json: { [grant]: allowed } });
export const grantPrivileged = (accountId: string, privileged = true) => setGrant(accountId, "privileged", privileged);
export const grantEgress = (accountId: string, egress = true) => setGrant(accountId, "egress", egress);

export async function newFunction(token: string, body: Record<string, unknown> = {}) {
  const { id } = await callJson<{ id: string }>("/v1/function", 201, { token, json: { name: "hello", lang: "PY", type: "DOCKER", ...body } });
  return id;
}

export async function newTag(token: string, body: Record<string, unknown> = {}) {
  const { id } = await callJson<{ id: string }>("/v1/tag", 201, { token, json: { name: "prod", ...body } });
  return id;
}

/** A minimal valid zip: one stored file `handler.py`. */
export function tinyZip(name = "handler.py", content = "def handle(event, context):\n    return 'hi'\n"): Uint8Array {
  const data = new TextEncoder().encode(content);
  const fname = new TextEncoder().encode(name);
  const crc = crc32(data);
  const local = new Uint8Array(30 + fname.length + data.length);
  const lv = new DataView(local.buffer);
  lv.setUint32(0, 0x04034b50, true);
  lv.setUint16(4, 20, true);
  lv.setUint32(14, crc, true);
  lv.setUint32(18, data.length, true);
  lv.setUint32(22, data.length, true);
  lv.setUint16(26, fname.length, true);
  local.set(fname, 30);
  local.set(data, 30 + fname.length);
  const central = new Uint8Array(46 + fname.length);
  const cv = new DataView(central.buffer);
  cv.setUint32(0, 0x02014b50, true);
  cv.setUint16(4, 20, true);
  cv.setUint16(6, 20, true);
  cv.setUint32(16, crc, true);
  cv.setUint32(20, data.length, true);
  cv.setUint32(24, data.length, true);
  cv.setUint16(28, fname.length, true);
  central.set(fname, 46);
  const end = new Uint8Array(22);
  const ev = new DataView(end.buffer);
  ev.setUint32(0, 0x06054b50, true);
  ev.setUint16(8, 1, true);
  ev.setUint16(10, 1, true);
  ev.setUint32(12, central.length, true);
  ev.setUint32(16, local.length, true);
  const out = new Uint8Array(local.length + central.length + end.length);
  out.set(local);
  out.set(central, local.length);
  out.set(end, local.length + central.length);
  return out;
}

function crc32(bytes: Uint8Array): number {
  let c = ~0;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
  }
  return ~c >>> 0;
}

export async function uploadBuild(token: string, functionId: string, zip: Uint8Array = tinyZip()) {
  return callJson<{ id: string }>(`/v1/build/${functionId}?arch=amd64`, 201, {
    token,
    body: zip,
    headers: { "content-type": "application/octet-stream" },
  });
}

/**
 * Marks a build finished as an agent would report it, and takes it off the dispatcher's queue
 * (the protocol itself is exercised in dispatch.test.ts and the e2e suite).
 */
export async function markBuild(buildId: string, status: "SUCCESS" | "FAILED" = "SUCCESS") {
  const build = await env.DB.prepare("update builds set status = ? where id = ? returning function_id").bind(status, buildId).first<{ function_id: string }>();
  await dropWork(buildId);
  // As the build's report would: the shard's admission reads what the function runs again.
  if (build) await shardStub(env, 0).admissionChanged({ functionId: build.function_id });
}

/**
 * Takes work off the dispatcher's queue behind its back (all of it without an id), then has it
 * re-read its storage, which it otherwise mirrors in memory.
 */
/**
 * Takes work out of the dispatcher, as a test that stands in for its agent and outcome does: the
 * shard's task rows are written to D1 first, and its copy of the task forgotten, so D1 answers.
 */
async function dropWork(id?: string) {
  await shardStub(env, 0).flushRecords();
  await runInDurableObject(shardStub(env, 0), (_o, state) => {
    for (const table of ["work", "held_task"]) {
      if (id) state.storage.sql.exec(`delete from ${table} where id = ?`, id);
      else state.storage.sql.exec(`delete from ${table}`);
    }
  });
  await shardStub(env, 0).resync();
}

/** Writes what the shards hold to D1 now: for tests that read D1 directly after a call. */
export async function recordsFlushed() {
  await shardStub(env, 0).flushRecords();
}

/** Empties the dispatcher's queue: storage lives as long as a test file, and tests must not share work. */
export const clearQueue = () => dropWork();

export async function deployedFunction(token: string, body: Record<string, unknown> = {}) {
  const id = await newFunction(token, body);
  const build = await uploadBuild(token, id);
  await markBuild(build.id);
  return id;
}

export const UNIX_SECONDS = /^\d{10}$/;
export const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
export const RECORD_ID = /^[0-9a-z]{30}$/;

/**
 * Calls the Worker's fetch handler in this isolate, without SELF. SELF slows down with every
 * request a test makes, so the tables that send hundreds of requests go this way. It also lets a
 * GET carry a body, as the specification sends list filters: `fetch()` refuses one, so the
 * handler gets a request-shaped object instead.
 */
let app: ReturnType<typeof createApp> | undefined;

export async function callDirect(path: string, o: CallOptions = {}): Promise<Response> {
  const { url, method, headers, body } = requestParts(path, o);
  const request =
    method === "GET" && body !== undefined
      ? ({ url, method, headers, body: new Response(body).body } as unknown as Request)
      : new Request(url, { method, headers, ...(body === undefined ? {} : { body }) });
  const ctx = createExecutionContext();
  // The Hono app, not worker/index.ts: importing the entry here would load a second copy of the
  // Durable Object modules into the test isolate and confuse the dispatcher tests.
  const res = await (app ??= createApp()).fetch(request, env, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

export const getWithBody = (path: string, o: { token?: string; body: BodyInit; headers?: Record<string, string> }) =>
  callDirect(path, { method: "GET", ...o });

export async function getJsonWithBody<T = any>(path: string, status: number, o: { token: string; json: unknown }): Promise<T> {
  const res = await getWithBody(path, { token: o.token, body: JSON.stringify(o.json), headers: { "content-type": "application/json" } });
  const text = await res.text();
  expect(res.status, `GET ${path} ${JSON.stringify(o.json)} → ${text}`).toBe(status);
  return JSON.parse(text) as T;
}

export async function expectNoContent(res: Response | Promise<Response>, status = 204) {
  const r = await res;
  const text = await r.text();
  expect({ status: r.status, text }).toEqual({ status, text: "" });
}

export async function newTrigger(token: string, body: Record<string, unknown>) {
  const { id } = await callJson<{ id: string }>("/v1/trigger", 201, { token, json: { includeResult: false, ...body } });
  return id;
}

export async function newEndpoint(token: string, functionId: string, body: Record<string, unknown> = {}) {
  const { id } = await callJson<{ id: string }>(`/v1/endpoint/${functionId}`, 201, { token, json: body });
  return id;
}

export async function newTask(token: string, functionId: string, json: unknown = { n: 1 }) {
  const { id } = await callJson<{ id: string }>(`/v1/task/${functionId}`, 201, { token, json });
  return id;
}

/** Runs SQL against the Worker's D1, as the dispatcher and agents update rows. */
/**
 * Runs a statement on D1 after the shard wrote what it holds there and forgot its own copies: a test
 * that edits records stands in for the dispatcher, and D1 is then the truth.
 */
export const sql = async (query: string, ...binds: unknown[]) => {
  await d1IsTruth();
  const result = await env.DB.prepare(query).bind(...binds).run();
  // A lease refresh that read D1 before the edit must not answer the next admission from its answer.
  await forgetAdmissionAnswers();
  return result;
};

async function forgetAdmissionAnswers() {
  await runInDurableObject(shardStub(env, 0), async (o) => {
    const admission = (o as unknown as { admission: { whenIdle(): Promise<void>; accounts: Map<string, unknown> } }).admission;
    await admission.whenIdle();
    admission.accounts.clear();
  });
}

/**
 * The layout of the tasks every shard creates from now on: rowless (TASK_ROWS = "shard", what
 * wrangler.toml deploys) or with a row in D1 too (the suite's default, vitest.config.ts).
 */
export async function tasksRowless(on: boolean) {
  for (const shard of allShards(env as unknown as Bindings))
    await runInDurableObject(shard, (o) => {
      (o as unknown as { life: { rowless: boolean } }).life.rowless = on;
    });
}

/**
 * Runs the file's tests on rowless tasks, as deployed: for files whose tests read tasks through the
 * API alone, so that they hold in either layout (a shard that restarts mid-file gives rows again).
 */
export function onRowlessTasks() {
  beforeEach(() => tasksRowless(true));
  afterAll(() => tasksRowless(false));
}

/** The shard's task rows written to D1 and forgotten there (its queue keeps the work). */
export async function d1IsTruth() {
  await shardStub(env, 0).flushRecords();
  // The shard's copies of what D1 has go, and its admission starts afresh from D1 (a test may have
  // edited usage or tasks). A task created since the flush (a trigger firing meanwhile) stays held:
  // D1 does not have it, and deleting it would lose it.
  await runInDurableObject(shardStub(env, 0), (o, state) => {
    state.storage.sql.exec("delete from held_task where in_d1 = 1");
    // The records the shard keeps of finished tasks D1 has go too: a read by id answers from them
    // before D1. A rowless task's (released from the start) is its only record, and stays.
    state.storage.sql.exec("delete from shard_record where released = 0");
    for (const table of ["admission_lease", "admission_slots", "admission_ended"]) state.storage.sql.exec(`delete from ${table}`);
    const admission = (o as unknown as { admission: { accounts: Map<string, unknown>; functions: { changedAccount(id: string): void } } }).admission;
    for (const accountId of admission.accounts.keys()) admission.functions.changedAccount(accountId);
    admission.accounts.clear();
  });
  await env.DB.batch([env.DB.prepare("delete from invocation_leases"), env.DB.prepare("delete from slot_leases")]);
  await shardStub(env, 0).resync();
}

/** The invocations D1 has metered for an account, every period (a direct read: it does not flush the shard first). */
export const invocationsInD1 = async (accountId: string) =>
  (await env.DB.prepare("select coalesce(sum(invocations), 0) as n from usage_totals where account_id = ?").bind(accountId).first<{ n: number }>())!.n;

/** A task's outcome: `headers` are the response's whole (else a `contentType` alone, or none). */
type Finish = { status?: number; body?: string; contentType?: string; headers?: Record<string, string>; log?: string[]; finishedAt?: number };
const headersOf = (o: Finish) => o.headers ?? (o.contentType ? { "content-type": o.contentType } : {});

/**
 * Finishes a task as its agent's report would (on node-1, half a second after its assignment): its
 * shard accepts the outcome and records it through the group commit, as it does any report.
 */
export async function finishTask(taskId: string, o: Finish = {}) {
  const finishedAt = o.finishedAt ?? Date.now();
  const status = o.status ?? 200;
  const bytes = new TextEncoder().encode(o.body ?? "");
  const report = {
    type: "task.done" as const, taskId, status, headers: headersOf(o),
    body: btoa(String.fromCharCode(...bytes)), bodyUploaded: false, log: o.log ?? [], logUploaded: false, durationMs: 500,
  };
  type Work = { node: string | null; assigned_at: number | null };
  const accepted = await runInDurableObject(shardStub(env, 0), (d) => {
    const shard = d as unknown as { queue: { get(id: string): Work | undefined }; endings: { accept(w: Work, r: typeof report, now: number, rtt: number): void } };
    const w = shard.queue.get(taskId);
    if (!w) return false;
    shard.endings.accept({ ...w, node: w.node ?? "node-1", assigned_at: w.assigned_at ?? finishedAt - 500 }, report, finishedAt, 0);
    return true;
  });
  if (!accepted) throw new Error(`task ${taskId} is not in its shard's queue: finishTaskInD1 finishes a task of D1 alone`);
  await shardStub(env, 0).flushRecords();
}

/**
 * Finishes a task in D1's row alone, as the dispatcher recorded outcomes before the shards held
 * their tasks: the shard lets go of it first, so the row is what reads and D1's archive find.
 */
export async function finishTaskInD1(taskId: string, o: Finish = {}) {
  await dropWork(taskId);
  const status = o.status ?? 200;
  const finishedAt = o.finishedAt ?? Date.now();
  await sql(
    `update tasks set status = ?, progress = 100, assigned_at = ?, finished_at = ?, node = 'node-1', result_status = ?,
       result_headers = ?, result_body = ?, log = ? where id = ?`,
    status,
    finishedAt - 500,
    finishedAt,
    status,
    JSON.stringify(headersOf(o)),
    o.body ?? "",
    JSON.stringify(o.log ?? []),
    taskId,
  );
}

export const ERROR_SHAPE = {
  error: expect.objectContaining({ code: expect.stringMatching(/^[a-z][a-z_]*$/), message: expect.any(String) }),
};

/** Runs a Cron Trigger of wrangler.toml as if it fired at `scheduledTime` (with `vars`, or bindings, over wrangler.toml's), and waits for its work. */
export async function runCron(cron: string, scheduledTime: number, vars: Record<string, string | D1Database> = {}) {
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ scheduledTime, cron }) as ScheduledController, { ...env, ...vars }, ctx);
  await waitOnExecutionContext(ctx);
}

/** A result read as a caller sees it: status, Content-Type and body. */
export async function replayed(res: Response | Promise<Response>) {
  const r = await res;
  return { status: r.status, type: r.headers.get("content-type"), body: await r.text() };
}

/** A console page's HTML, read with the session cookie of `token` (200 asserted). */
export async function consolePage(path: string, token: string) {
  const res = await call(path, { headers: { cookie: `gc_console=${token}` } });
  expect(res.status).toBe(200);
  return res.text();
}

/** Holds the shard's writes to D1 back (or lets them go, writing what waited): D1 lags behind the shard. */
export async function holdRecords(on: boolean, shard = 0) {
  await runInDurableObject(shardStub(env, shard), (o) => {
    (o as unknown as { commits: { held: boolean } }).commits.held = on;
  });
  if (!on) await shardStub(env, shard).flushRecords();
}

/**
 * The shard restarts, as after an eviction, a deploy or a crash: its instance is aborted (memory,
 * sockets and parked readers go) and the next call makes a fresh one over the same storage. Its
 * alarm goes first and `held` applies to the fresh instance at once, so that no commit slips in
 * between and D1 lags exactly as far as the test says.
 */
export async function restartShard(o: { held: boolean }) {
  const stub = shardStub(env, 0);
  const aborted = await runInDurableObject(stub, async (_o, state) => {
    await state.storage.deleteAlarm();
    state.abort("restart (test)");
  }).then(
    () => "not aborted",
    (e: unknown) => String(e),
  );
  expect(aborted).toContain("restart (test)");
  await holdRecords(o.held);
}

/** D1 as the truth (d1IsTruth): for tests that read or edit records directly. */
export async function flushedDb() {
  await d1IsTruth();
  return env.DB;
}

/**
 * Sets when the shards began to count every task's issue (migration 0032's row), and with
 * `accountDays` when they began to count accounts' (0033's), and makes the Worker read them again.
 */
export async function shardsCountIssuesFrom(ms: number, o: { accountDays?: number } = {}) {
  await env.DB.prepare("update issue_counts_from set from_ms = ?").bind(ms - (ms % 60_000)).run();
  // The accounts' cutover is a UTC midnight (migration 0033): the one at or after `accountDays`.
  const day = 86_400_000;
  if (o.accountDays !== undefined) await env.DB.prepare("update issue_counts_from set accounts_from_ms = ?").bind(Math.ceil(o.accountDays / day) * day).run();
  forgetShardsCountIssuesFrom();
}

/**
 * The shard's counts of issues made again from D1's rows: a test that edits issue times or
 * endpoints in D1 (tasks of days ago, made now) stands in for the shard that would have counted
 * them at those times.
 */
export async function recountShardIssues() {
  await d1IsTruth();
  const { results } = await env.DB.prepare("select account_id as accountId, function_id as functionId, endpoint_id as endpointId, issued_at as issuedAt from tasks").all<Issue>();
  await runInDurableObject(shardStub(env, 0), (o, state) => {
    for (const t of ["shard_issue_hour", "shard_issue_second"]) state.storage.sql.exec(`delete from ${t}`);
    const now = Date.now();
    for (const issue of results) (o as unknown as { issues: IssueCounts }).issues.issued(issue, now);
  });
}
