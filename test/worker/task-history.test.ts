import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ARCHIVE_CRON, ARCHIVE_CRONS, SWEEP_CRON } from "../../worker/crons.js";
import { openDb } from "../../worker/db/client.js";
import type { Bindings } from "../../worker/env.js";
import { INLINE_RESULT_BYTES } from "../../worker/dispatch/records.js";
import { newId } from "../../worker/lib/ids.js";
import { historyChunkKey, taskLogKey, taskResultKey } from "../../worker/lib/storage-keys.js";
import { DAY_MS, HOUR_MS, startOfUtcDay } from "../../worker/lib/time.js";
import { dailyTasks } from "../../worker/console/queries.js";
import { archiveTasks, type ArchiveRun } from "../../worker/task-history/archiver.js";
import { archiveAfterMs } from "../../worker/task-history/window.js";
import { purgeArchive } from "../../worker/task-history/retention.js";
import { retentionMs } from "../../worker/tasks/retention-period.js";
import { QueryBudget } from "../../worker/db/query-budget.js";
import { pruneArchivedIssues } from "../../worker/task-history/issue-pruning.js";
import { archivedIssuedSince, issueMinutes, issueMinutesAdded } from "../../worker/task-history/issue-minutes.js";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { sql as drizzleSql } from "drizzle-orm";
import { chunkKey } from "../../worker/task-history/chunk-names.js";
import { DamagedChunk, OpenChunk, putChunk, readChunk, readSegmentOf, SEGMENT_RECORDS } from "../../worker/task-history/chunk.js";
import type { TaskRow } from "../../worker/db/rows.js";
import { decodeSegments } from "../../worker/db/archive-segments.js";
import { jsonSlices, MAX_STATEMENT_JSON_BYTES } from "../../worker/db/json-slices.js";
import { call, callJson, clearQueue, deployedFunction, expectError, finishTask, finishTaskInD1, flushedDb, newAccount, newEndpoint, newTask, runCron, shardsCountIssuesFrom, sql } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";
import { allPages, reads } from "./task-reads.js";

/**
 * Issue 27: finished task records older than the archive's window (TASK_ARCHIVE_AFTER_HOURS, 1 in
 * wrangler.toml) leave D1 for chunks in R2, and every read route answers them as it answered them
 * live: same status, same shape, same order.
 */

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const bindings = env as unknown as Bindings;
const db = () => openDb(bindings);
/** The hourly sweep, then the archive's, run as if they fired `days` from now: with 2, everything finished by now is past the window. */
const sweepIn = async (days: number) => {
  await runCron(SWEEP_CRON, Date.now() + days * DAY_MS);
  await runCron(ARCHIVE_CRON, Date.now() + days * DAY_MS);
};
/** The archive's move alone, as the sweep runs it `days` from now (the sweep's other parts would fail a waiting task no node takes). */
const archiveIn = (days: number, run: ArchiveRun = {}) => archiveTasks(db(), env.BUCKET, archiveAfterMs(bindings), Date.now() + days * DAY_MS, run);
/** Days after which a task of now has passed the window (1 day) and the hold for a full chunk (7): it moves, however few its account has. */
const PAST = 9;
const inD1 = async (id: string) => (await env.DB.prepare("select id from tasks where id = ?").bind(id).first()) !== null;
/** The account's chunks' index rows, each with the name its columns make (or keep). */
const chunksOf = async (accountId: string) =>
  (await env.DB.prepare("select * from task_archive where account_id = ? order by last_id").bind(accountId).all<Record<string, unknown>>()).results.map(
    (r): Record<string, unknown> => ({
      ...r,
      key: chunkKey({ accountId, firstId: r.first_id as string, lastId: r.last_id as string, records: r.records as number, legacyKey: r.key as string | null }),
    }),
  );

/** A new account's function with `n` finished tasks. */
async function finishedTasks(n: number) {
  const { token, accountId } = await newAccount();
  const fn = await deployedFunction(token);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await newTask(token, fn));
  for (const id of ids) await finishTask(id);
  return { token, accountId, fn, ids };
}

describe("the archive's move (the archive sweep)", () => {
  it("moves tasks issued and finished before the window to R2 and out of D1", async () => {
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const done = await newTask(token, fn);
    await finishTask(done, { body: "ok", log: ["ran"] });

    await sweepIn(0.5 / 24); // inside the window (an hour): nothing moves
    expect(await inD1(done)).toBe(true);
    await sweepIn(2); // past it, but a lone record waits for a full chunk, or the hold
    expect(await inD1(done)).toBe(true);
    expect(await chunksOf(accountId)).toEqual([]);

    await sweepIn(PAST);
    expect(await inD1(done)).toBe(false);
    const [chunk] = await chunksOf(accountId);
    expect(chunk).toMatchObject({ key: historyChunkKey(accountId, done, done, 1), first_id: done, last_id: done, records: 1 });
    // The row keeps no name: its columns make it (migration 0031).
    expect(await env.DB.prepare("select key from task_archive where account_id = ?").bind(accountId).first("key")).toBeNull();
    expect((await env.DB.prepare("select function_id, account_id from task_archive_functions where last_id = ?").bind(done).all()).results).toEqual([
      { function_id: fn, account_id: accountId },
    ]);
    expect(await env.BUCKET.head(chunk!.key as string)).not.toBeNull();

    await sweepIn(PAST + 1); // again: nothing left to move, nothing counted twice
    expect(await chunksOf(accountId)).toHaveLength(1);
    expect(await env.DB.prepare("select sum(tasks) n from task_archive_counts where account_id = ?").bind(accountId).first("n")).toBe(1);
    expect(await env.DB.prepare("select sum(tasks) n from task_archive_totals where account_id = ?").bind(accountId).first("n")).toBe(1);
    expect(await env.DB.prepare("select count(*) n from task_archive_functions where account_id = ?").bind(accountId).first("n")).toBe(1);
  });

  it("leaves unfinished tasks, and tasks finished inside the window, however old their issue", async () => {
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const waiting = await newTask(token, fn);
    const late = await newTask(token, fn);
    await finishTask(late, { finishedAt: Date.now() + 5 * DAY_MS }); // held by a pause for days, say
    await flushedDb();
    // No hold here: every account moves whatever is past the window.
    expect(await archiveIn(5 + 0.5 / 24, { holdMs: 0 })).toBe(0); // half an hour after its finish: inside the window
    expect([await inD1(waiting), await inD1(late)]).toEqual([true, true]);
    expect(await archiveIn(5 + 2 / 24, { holdMs: 0 })).toBe(1);
    expect([await inD1(waiting), await inD1(late)]).toEqual([true, false]);
    expect(await chunksOf(accountId)).toHaveLength(1);
  });

  it("moves a busy account's full chunks at once, and a quiet account's records only after the hold", async () => {
    const busy = await newAccount("busy");
    const quiet = await newAccount("quiet");
    const fb = await deployedFunction(busy.token);
    const fq = await deployedFunction(quiet.token);
    const ids = [await newTask(busy.token, fb), await newTask(busy.token, fb), await newTask(busy.token, fb), await newTask(busy.token, fb)];
    const lone = await newTask(quiet.token, fq);
    for (const id of [...ids, lone]) await finishTask(id);
    expect(await archiveIn(2, { chunkSize: 3 })).toBe(3); // one full chunk of the busy account's oldest
    expect(await Promise.all([...ids, lone].map(inD1))).toEqual([false, false, false, true, true]);
    expect(await archiveIn(PAST, { chunkSize: 3 })).toBe(2); // past the hold: whatever is left
    expect((await chunksOf(busy.accountId)).map((c) => c.records)).toEqual([3, 1]);
    expect((await chunksOf(quiet.accountId)).map((c) => c.records)).toEqual([1]);
  });

  it("moves an account's next chunks with one read and one batch (the queries that bound a run), each chunk indexed on its own", async () => {
    const { token, accountId } = await newAccount();
    const [f1, f2] = [await deployedFunction(token), await deployedFunction(token)];
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push(await newTask(token, i < 3 ? f1 : f2));
    for (const id of ids) await finishTask(id);
    const counts = async () => (await env.DB.prepare("select sum(tasks) n from task_archive_totals where account_id = ?").bind(accountId).first("n")) ?? 0;
    // One look, one read of 2 × 3 rows, one batch: two full chunks in three queries.
    expect(await archiveIn(PAST, { chunkSize: 3, chunksPerRead: 2, maxQueries: 3 })).toBe(6);
    expect((await chunksOf(accountId)).map((c) => [c.first_id, c.last_id, c.records])).toEqual([[ids[0], ids[2], 3], [ids[3], ids[5], 3]]);
    const functions = await env.DB.prepare("select function_id, last_id from task_archive_functions where account_id = ? order by last_id, function_id").bind(accountId).all();
    expect(functions.results).toEqual([{ function_id: f1, last_id: ids[2] }, { function_id: f2, last_id: ids[5] }]);
    expect(await counts()).toBe(6);
    expect(await Promise.all(ids.map(inD1))).toEqual([false, false, false, false, false, false, true]);
    expect(await archiveIn(PAST, { chunkSize: 3, chunksPerRead: 2, maxQueries: 3 })).toBe(1);
    expect(await counts()).toBe(7);
    // Every read finds each record in its own chunk.
    for (const id of ids) expect((await callJson(`/v1/task/${id}`, 200, { token })).id).toBe(id);
    expect((await callJson<{ id: string }[]>(`/v1/task/list?limit=10`, 200, { token })).map((t) => t.id)).toEqual([...ids].reverse());
  });

  it("starts no read once a run has encoded its most NDJSON, whose CPU time the run's limit bounds", async () => {
    const { ids } = await finishedTasks(3);
    await flushedDb();
    expect(await archiveIn(PAST, { chunkSize: 1, chunksPerRead: 1, maxChars: 1 })).toBe(1);
    await archiveIn(PAST, { chunkSize: 1 });
    expect(await Promise.all(ids.map(inD1))).toEqual([false, false, false]);
  });

  it("keeps each account's records in chunks of its own", async () => {
    const a = await newAccount("a");
    const b = await newAccount("b");
    const fa = await deployedFunction(a.token);
    const fb = await deployedFunction(b.token);
    const ids = [await newTask(a.token, fa), await newTask(b.token, fb), await newTask(a.token, fa)];
    for (const id of ids) await finishTask(id);
    await archiveIn(PAST);
    expect((await chunksOf(a.accountId)).map((c) => [c.first_id, c.last_id, c.records])).toEqual([[ids[0], ids[2], 2]]);
    expect((await chunksOf(b.accountId)).map((c) => [c.first_id, c.last_id, c.records])).toEqual([[ids[1], ids[1], 1]]);
  });

  it("keeps each statement's one JSON parameter within D1's 100 KB, however many records a page holds", () => {
    const ids = Array.from({ length: 5000 }, () => newId());
    const slices = jsonSlices(ids);
    expect(slices.length).toBeGreaterThan(1);
    for (const json of slices) expect(new TextEncoder().encode(json).byteLength).toBeLessThanOrEqual(MAX_STATEMENT_JSON_BYTES);
    expect(slices.flatMap((json) => JSON.parse(json) as string[])).toEqual(ids);
  });

  it("runs at each of the archive sweep's three hourly triggers", async () => {
    for (const cron of ARCHIVE_CRONS) {
      const { token } = await newAccount();
      const id = await newTask(token, await deployedFunction(token));
      await finishTask(id);
      await flushedDb();
      await runCron(cron, Date.now() + PAST * DAY_MS);
      expect(await inD1(id)).toBe(false);
    }
  });

  it("waits an hour by default, never less, in TASK_ARCHIVE_AFTER_HOURS or else the days of its earlier name", () => {
    expect(archiveAfterMs({})).toBe(HOUR_MS);
    expect(archiveAfterMs({ TASK_ARCHIVE_AFTER_HOURS: "6" })).toBe(6 * HOUR_MS);
    expect(archiveAfterMs({ TASK_ARCHIVE_AFTER_HOURS: "0.25" })).toBe(HOUR_MS);
    expect(archiveAfterMs({ TASK_ARCHIVE_AFTER_HOURS: "soon" })).toBe(HOUR_MS);
    expect(archiveAfterMs({ TASK_ARCHIVE_AFTER_DAYS: "0.25" })).toBe(6 * HOUR_MS);
    expect(archiveAfterMs({ TASK_ARCHIVE_AFTER_DAYS: "30" })).toBe(30 * DAY_MS);
    expect(archiveAfterMs({ TASK_ARCHIVE_AFTER_DAYS: "0.01" })).toBe(HOUR_MS);
    expect(archiveAfterMs({ TASK_ARCHIVE_AFTER_HOURS: "2", TASK_ARCHIVE_AFTER_DAYS: "30" })).toBe(2 * HOUR_MS);
  });

  it("moves a busy account's records an hour after their finish, and its count of today still holds them", async () => {
    const { token, accountId, ids } = await finishedTasks(4);
    const today = async () => (await callJson<{ todayTasks: number }>("/v1/metrics", 200, { token })).todayTasks;
    const issued = (await env.DB.prepare("select issued_at from tasks where account_id = ?").bind(accountId).all<{ issued_at: number }>()).results;
    // Those issued since 00:00 UTC, as the route reads the day when it answers.
    const issuedToday = () => issued.filter((r) => r.issued_at >= startOfUtcDay(Date.now())).length;
    expect(issued).toHaveLength(4);
    expect(await today()).toBe(issuedToday());
    await archiveTasks(db(), env.BUCKET, archiveAfterMs(bindings), Date.now() + 30 * 60_000, { chunkSize: 2 }); // inside the hour
    expect(await Promise.all(ids.map(inD1))).toEqual([true, true, true, true]);
    await archiveTasks(db(), env.BUCKET, archiveAfterMs(bindings), Date.now() + 2 * HOUR_MS, { chunkSize: 2 });
    expect(await Promise.all(ids.map(inD1))).toEqual([false, false, false, false]);
    expect(await today()).toBe(issuedToday());
  });
});

/** The archive's bucket, each put waiting for `before()` first: a move held between its read of D1 and its batch. */
const bucketBeforePut = (before: () => Promise<unknown>): R2Bucket =>
  new Proxy(env.BUCKET, {
    get(b, name) {
      if (name === "put") return async (...a: Parameters<R2Bucket["put"]>) => (await before(), b.put(...a));
      const v = Reflect.get(b, name) as unknown;
      return typeof v === "function" ? v.bind(b) : v;
    },
  });
/** Resolves once `n` callers wait on it. */
function barrier(n: number): () => Promise<void> {
  const waiting: (() => void)[] = [];
  return () =>
    new Promise<void>((go) => {
      waiting.push(go);
      if (waiting.length >= n) for (const w of waiting.splice(0)) w();
    });
}

describe("the archive's move, when runs overlap or retention purges under it", () => {
  it("moves and counts a record once when two runs read it before either commits", async () => {
    const { token, accountId, fn, ids } = await finishedTasks(5);
    const bucket = bucketBeforePut(barrier(2));
    const at = Date.now() + PAST * DAY_MS;
    const runs = await Promise.all([at, at + 60_000].map((now) => archiveTasks(db(), bucket, archiveAfterMs(bindings), now)));
    expect(runs.sort()).toEqual([0, 5]);
    expect((await chunksOf(accountId)).map((c) => [c.key, c.records])).toEqual([[historyChunkKey(accountId, ids[0]!, ids[4]!, 5), 5]]);
    expect(await env.DB.prepare("select sum(tasks) n from task_archive_totals where account_id = ?").bind(accountId).first("n")).toBe(5);
    expect(await env.DB.prepare("select sum(tasks) n from task_archive_counts where account_id = ?").bind(accountId).first("n")).toBe(5);
    expect((await callJson(`/v1/function/${fn}`, 200, { token })).metrics.completedTasks).toBe(5);
    expect((await callJson<{ id: string }[]>("/v1/task/list?limit=10", 200, { token })).map((t) => t.id)).toEqual([...ids].reverse());
  });

  it("leaves a record that live retention purged after the move read it in D1, purged, and moves it at the next run", async () => {
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const ids = [await newTask(token, fn), await newTask(token, fn)];
    for (const id of ids) await finishTask(id, { body: "ok" });
    const purgedAt = Date.now();
    const bucket = bucketBeforePut(() => env.DB.prepare("update tasks set purged_at = ? where id = ?").bind(purgedAt, ids[0]).run());
    expect(await archiveTasks(db(), bucket, archiveAfterMs(bindings), Date.now() + PAST * DAY_MS)).toBe(0);
    expect(await Promise.all(ids.map(inD1))).toEqual([true, true]);
    expect(await chunksOf(accountId)).toEqual([]);
    expect((await env.BUCKET.list({ prefix: `history/${accountId}/` })).objects).toEqual([]);

    expect(await archiveIn(PAST)).toBe(2);
    const [chunk] = await chunksOf(accountId);
    const [first, second] = await readChunk(env.BUCKET, chunk!.key as string, decodeSegments(chunk!.segments as string)!);
    expect([first!.purgedAt, second!.purgedAt]).toEqual([purgedAt, null]);
    expect(chunk!.purge_due).toBe(second!.finishedAt);
  });
});

describe("reads of archived tasks", () => {
  it("answer every task route, the lists, the metrics, usage and the console's pages as they did live", async () => {
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const other = await deployedFunction(token);
    const ids: string[] = [];
    for (const [i, f] of [fn, other, fn, fn, other].entries()) {
      const id = await newTask(token, f, { n: i });
      await finishTask(id, { status: i === 3 ? 500 : 200, body: `{"n":${i}}`, contentType: "application/json", log: [`line ${i}`] });
      ids.push(id);
    }
    // Issued 10 days ago: past the week, so the archive keeps no issue time of them (the week's counts are below).
    await sql(`update tasks set issued_at = issued_at - ${10 * DAY_MS} where id in (select value from json_each(?))`, JSON.stringify(ids));
    const live = await newTask(token, fn); // unfinished: stays in D1, and is newer than all
    await flushedDb();
    const before = await reads(token, [...ids, live], fn);
    const daysBefore = await dailyTasks(bindings, db(), accountId, 30);

    await archiveIn(PAST);
    expect(await Promise.all(ids.map(inD1))).toEqual(ids.map(() => false));
    expect(await reads(token, [...ids, live], fn)).toEqual(before);
    expect(await dailyTasks(bindings, db(), accountId, 30)).toEqual(daysBefore);
    expect((await allPages(token, 2, other)).flat().map((t) => t.id)).toEqual([ids[4], ids[1]]);
  });

  it("answer a large result and log from R2 as they did live", async () => {
    const agent = await FakeAgent.connect("archived-large");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const { id } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: {} });
    await agent.next("task.assign");
    const body = "y".repeat(INLINE_RESULT_BYTES + 1);
    const log = Array.from({ length: 100 }, (_, i) => `line ${i} ${"x".repeat(80)}`);
    agent.done(id, body, 200, { log });
    expect(await (await call(`/v1/task/${id}/result?wait=5`, { token })).text()).toBe(body);
    await flushedDb();
    await archiveIn(PAST);
    expect(await inD1(id)).toBe(false);
    expect(await (await call(`/v1/task/${id}/result`, { token })).text()).toBe(body);
    expect((await callJson(`/v1/task/${id}/log`, 200, { token })).log).toEqual(log);
  });

  it("are another account's 404, as live ones are", async () => {
    const owner = await newAccount("owner");
    const stranger = await newAccount("stranger");
    const fn = await deployedFunction(owner.token);
    const id = await newTask(owner.token, fn);
    await finishTask(id);
    await archiveIn(PAST);
    for (const path of [`/v1/task/${id}`, `/v1/task/${id}/result`, `/v1/task/${id}/log`]) await expectError(call(path, { token: stranger.token }), 404, "not_found");
    expect(await callJson("/v1/task/list", 200, { token: stranger.token })).toEqual([]);
    await expectError(call(`/v1/task/list?functionId=${fn}`, { token: stranger.token }), 404, "not_found");
  });

  it("list a deleted function's archived tasks under its id", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await newTask(token, fn);
    await finishTask(id);
    await archiveIn(PAST);
    expect((await call(`/v1/function/${fn}`, { method: "DELETE", token })).status).toBe(204);
    expect((await callJson(`/v1/task/list?functionId=${fn}`, 200, { token })).map((t: { id: string }) => t.id)).toEqual([id]);
  });

  it("answer a public call's result to its owner's token only, as after its 5 minutes", async () => {
    const owner = await newAccount("owner");
    const stranger = await newAccount("stranger");
    const fn = await deployedFunction(owner.token);
    const ep = await newEndpoint(owner.token, fn);
    // A call of 10 days ago, its record still in D1 (the layout before the archive).
    const [old] = oldRows(owner.accountId, [fn], 1, { endpointId: ep, daysAgo: 10 });
    await insertOld([old!]);
    const answers = async () => {
      const res = await call(`/gc/${old!.id}/result`, { token: owner.token });
      return {
        owner: { status: res.status, body: await res.text() },
        anonymous: (await call(`/gc/${old!.id}/result`)).status,
        stranger: (await call(`/gc/${old!.id}/result`, { token: stranger.token })).status,
      };
    };
    const live = await answers();
    expect(live).toEqual({ owner: { status: 500, body: "old result" }, anonymous: 401, stranger: 404 }); // the first old row answered 500
    expect(await archiveIn(6)).toBe(1); // 10 days old: past the window and the hold
    expect(await answers()).toEqual(live);
    // Text no call could have been given (an "id" from before the service) is not found, token or not.
    await expectError(call(`/gc/${"0".repeat(30)}/result`), 404, "not_found");
  });
});

/** A function's metrics and its endpoint's, as the routes answer them. */
const fnAndEndpointCounts = async (token: string, fn: string, ep: string) => ({
  fn: (await callJson(`/v1/function/${fn}`, 200, { token })).metrics,
  ep: await callJson(`/v1/endpoint/${ep}/metrics`, 200, { token }),
});

describe("the week's counts of archived tasks", () => {
  // Records of a deployment from before the shards counted issues (migration 0032): its cutover is ahead of them.
  beforeEach(() => shardsCountIssuesFrom(Date.now() + 60_000));

  it("count a function's and an endpoint's tasks of the last 7 × 24 hours the same before and after their records move", async () => {
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const ep = await newEndpoint(token, fn);
    // Issued 1.5 to 10 days ago, some through the endpoint; the first two are inside the week, past the window.
    const ages = [1.5, 2, 3, 5, 6.9, 7.1, 9, 10];
    const rows = ages.map((days, i) => ({ ...oldRows(accountId, [fn], 1, { daysAgo: days, endpointId: i % 2 ? ep : undefined })[0]!, finished_at: Date.now() - days * DAY_MS + 1500, status: 200 }));
    await insertOld(rows.sort((x, y) => (x.id < y.id ? -1 : 1)));
    const today = await newTask(token, fn);
    await finishTask(today);
    await flushedDb();
    const counts = () => fnAndEndpointCounts(token, fn, ep);
    const before = await counts();
    expect(before.fn).toMatchObject({ todaysTasks: 1, weekTasks: 6, completedTasks: 9 });
    expect(before.ep).toMatchObject({ weekTasks: 2 });

    expect(await archiveIn(0, { holdMs: 0 })).toBe(ages.length);
    expect(await Promise.all(rows.map((r) => inD1(r.id)))).toEqual(rows.map(() => false));
    // Only the week's issue times are kept (those past it can never be counted again), under the function and under the endpoint.
    const kept = (scope: string) => env.DB.prepare("select sum(tasks) n from task_archive_minutes where scope = ?").bind(scope).first("n");
    expect([await kept(fn), await kept(ep)]).toEqual([5, 2]);
    expect(await counts()).toEqual(before);
  });

  it("once the shards count issues, keep no minutes of the tasks issued since, and count the same before and after the move", async () => {
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const ep = await newEndpoint(token, fn);
    await shardsCountIssuesFrom(Date.now() - DAY_MS);
    try {
      // Before the shards counted: issued 2 to 3 days ago, in D1 only. Since: issued now, through the API and the endpoint.
      const rows = [2, 2.5, 3].map((days, i) => ({ ...oldRows(accountId, [fn], 1, { daysAgo: days, endpointId: i ? ep : undefined })[0]!, finished_at: Date.now() - days * DAY_MS + 1500, status: 200 }));
      await insertOld(rows.sort((x, y) => (x.id < y.id ? -1 : 1)));
      const now = [await newTask(token, fn), (await callJson<{ id: string }>(`/gc/${ep}`, 201, { token: null, json: {} })).id];
      for (const id of now) await finishTask(id);
      await flushedDb();
      const counts = () => fnAndEndpointCounts(token, fn, ep);
      const before = await counts();
      expect(before.fn).toMatchObject({ todaysTasks: 2, weekTasks: 5, completedTasks: 5 });
      expect(before.ep).toMatchObject({ todayTasks: 1, weekTasks: 3 });
      // A day on: every record is past the window (other tests' too, which move with them).
      expect(await archiveIn(1, { holdMs: 0 })).toBeGreaterThanOrEqual(5);
      expect(await Promise.all([...rows.map((r) => r.id), ...now].map(inD1))).toEqual([false, false, false, false, false]);
      const kept = (scope: string) => env.DB.prepare("select sum(tasks) n from task_archive_minutes where scope = ?").bind(scope).first("n");
      expect([await kept(fn), await kept(ep)]).toEqual([3, 2]);
      expect(await counts()).toEqual(before);
    } finally {
      await shardsCountIssuesFrom(Date.now());
    }
  });

  it("count exactly from the millisecond the period starts, inside the minute it cuts", async () => {
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const minute = Math.floor((Date.now() - 3 * DAY_MS) / 60_000) * 60_000;
    const times = [minute + 1_000, minute + 30_000, minute + 59_999, minute + 60_000, minute + 60_000 + 5];
    const [model] = oldRows(accountId, [fn], 1, { daysAgo: 3 });
    const rows = times.map((t) => ({ ...model!, id: newId(t), issued_at: t, finished_at: t + 1500, status: 200 }));
    await insertOld(rows);
    expect(await archiveIn(0, { holdMs: 0 })).toBe(times.length);
    expect(await env.DB.prepare("select minute, tasks, offsets from task_archive_minutes where scope = ? order by minute").bind(fn).all().then((r) => r.results)).toEqual([
      { minute, tasks: 3, offsets: "1000,30000,59999" },
      { minute: minute + 60_000, tasks: 2, offsets: "0,5" },
    ]);
    const since = async (time: number) => {
      const q = new SQLiteAsyncDialect().sqlToQuery(drizzleSql`select ${archivedIssuedSince({ functionId: fn }, time)} as n`);
      return env.DB.prepare(q.sql).bind(...q.params).first("n");
    };
    expect(await since(minute)).toBe(5);
    expect(await since(minute + 30_000)).toBe(4);
    expect(await since(minute + 30_001)).toBe(3);
    expect(await since(minute + 60_000)).toBe(2);
    expect(await since(minute + 60_001)).toBe(1);
    expect(await since(minute + 120_000)).toBe(0);
  });
});

describe("the minutes of the week's issue times", () => {
  it("takes a minute busier than one statement's share in several entries, which the upsert adds up, and leaves out times past the week", async () => {
    const minute = Math.floor((Date.now() - DAY_MS) / 60_000) * 60_000;
    const scope = `busy-${newId(Date.now())}`;
    const rows = Array.from({ length: 12_001 }, (_, i) => ({ functionId: scope, endpointId: null, issuedAt: minute + (i % 60_000) }) as unknown as TaskRow);
    const old = { functionId: scope, endpointId: null, issuedAt: Date.now() - 8 * DAY_MS } as unknown as TaskRow;
    const entries = issueMinutes([...rows, old], Date.now());
    expect(entries.map(([m, sc, n]) => [m, sc, n])).toEqual([[minute, scope, 5_000], [minute, scope, 5_000], [minute, scope, 2_001]]);
    const dialect = new SQLiteAsyncDialect();
    for (const statement of issueMinutesAdded([...rows, old], Date.now())) {
      const q = dialect.sqlToQuery(statement);
      expect(q.sql.length + JSON.stringify(q.params).length).toBeLessThan(100_000);
      await env.DB.prepare(q.sql).bind(...q.params).run();
    }
    const row = await env.DB.prepare("select tasks, offsets from task_archive_minutes where scope = ?").bind(scope).first<{ tasks: number; offsets: string }>();
    expect(row!.tasks).toBe(12_001);
    expect(row!.offsets.split(",").map(Number)).toEqual(rows.map((r) => r.issuedAt - minute));
  });
});

describe("the hourly sweep's pruning of archived issue times", () => {
  it("deletes the minutes that left the week, oldest first, and no other", async () => {
    // The earlier tests' rows, whose order in the table is theirs.
    await sql("delete from task_archive_minutes");
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const rows = [1.5, 2, 4, 6].map((days) => ({ ...oldRows(accountId, [fn], 1, { daysAgo: days })[0]!, finished_at: Date.now() - days * DAY_MS + 1500, status: 200 }));
    await insertOld(rows.sort((x, y) => (x.id < y.id ? -1 : 1)));
    await archiveIn(0, { holdMs: 0 });
    const minutes = async () =>
      (await env.DB.prepare("select minute, offsets from task_archive_minutes where scope = ? order by minute").bind(fn).all<{ minute: number; offsets: string }>()).results.map((r) => r.minute + Number(r.offsets));
    const issued = rows.map((r) => r.issued_at).sort((x, y) => x - y);
    expect(await minutes()).toEqual(issued);
    expect(await pruneArchivedIssues(db(), Date.now(), { page: 1 })).toBe(0);
    expect(await minutes()).toEqual(issued);
    // Three and a half days on, the two oldest (6 and 4 days old now) are past the week.
    expect(await pruneArchivedIssues(db(), Date.now() + 3.5 * DAY_MS, { page: 1, maxPages: 10 })).toBe(2);
    expect(await minutes()).toEqual(issued.slice(2));
  });
});

describe("a chunk's segments", () => {
  it("reads any record from its own segment alone, and the whole chunk in order", async () => {
    const rows = Array.from({ length: 2 * SEGMENT_RECORDS + 7 }, (_, i) => ({ id: newId(Date.now() - 1000 + i), accountId: "a", functionId: "f", issuedAt: i, finishedAt: i + 1, n: i }) as unknown as TaskRow);
    const { segments } = await putChunk(env.BUCKET, "history/test/segments.ndjson.gz", rows);
    // Each key: "" for the first; then a prefix of the segment's first id that sorts after the id before it.
    expect(segments.map(([key]) => key)).toEqual(["", expect.any(String), expect.any(String)]);
    for (const start of [SEGMENT_RECORDS, 2 * SEGMENT_RECORDS]) {
      const key = segments[start / SEGMENT_RECORDS]![0];
      expect(rows[start]!.id.startsWith(key)).toBe(true);
      expect(key > rows[start - 1]!.id).toBe(true);
      expect(key.length).toBeLessThan(rows[start]!.id.length);
    }
    expect((await readChunk(env.BUCKET, "history/test/segments.ndjson.gz", segments)).map((r) => r.id)).toEqual(rows.map((r) => r.id));
    for (const i of [0, SEGMENT_RECORDS - 1, SEGMENT_RECORDS, 2 * SEGMENT_RECORDS + 6]) {
      const segment = await readSegmentOf(env.BUCKET, "history/test/segments.ndjson.gz", segments, rows[i]!.id);
      expect(segment.length).toBeLessThanOrEqual(SEGMENT_RECORDS);
      expect(segment.find((r) => r.id === rows[i]!.id)).toEqual(rows[i]);
    }
  });

  it("reads a segment's lines that name an id: every record of that account or function, and of the rest only those whose payloads name it", async () => {
    const fns = ["f1", "f10", 'f"1\\'];
    const rows = Array.from({ length: 2 * SEGMENT_RECORDS }, (_, i) => ({
      id: newId(Date.now() - 1000 + i), accountId: i % 5 ? "a" : "b", functionId: fns[i % 3], issuedAt: i, finishedAt: i + 1, resultHeaders: i % 4 ? null : { "x-of": "f1" },
    }) as unknown as TaskRow);
    const { segments } = await putChunk(env.BUCKET, "history/test/mentions.ndjson.gz", rows);
    const open = await OpenChunk.read(env.BUCKET, "history/test/mentions.ndjson.gz", segments);
    for (const mention of [...fns, "a", "b", "f"]) {
      const named = (r: TaskRow) => r.accountId === mention || r.functionId === mention;
      const read = [...(await open.records(0, mention)), ...(await open.records(1, mention))];
      expect(read.filter(named)).toEqual(rows.filter(named));
      // "f1" is also in the result headers of f10's and the other's records, every fourth; "f" names nothing.
      expect(read.map((r) => r.id)).toEqual(rows.filter((r) => named(r) || (mention === "f1" && r.resultHeaders !== null)).map((r) => r.id));
    }
    expect([...(await open.records(0)), ...(await open.records(1))]).toEqual(rows);
  });

  it("reads a chunk rewritten since its index row was read (retention, before the row's update) by the segments the object carries", async () => {
    const key = "history/test/rewritten.ndjson.gz";
    const rows = Array.from({ length: 2 * SEGMENT_RECORDS + 7 }, (_, i) => ({ id: newId(Date.now() - 1000 + i), accountId: "a", functionId: "f", issuedAt: i, finishedAt: i + 1, resultBody: `result ${i}` }) as unknown as TaskRow);
    const { segments: before } = await putChunk(env.BUCKET, key, rows);
    // Purged: the inline results go, so every segment after the first starts elsewhere.
    const purged = rows.map((r) => ({ ...r, resultBody: null, purgedAt: 7 }) as TaskRow);
    const { segments: after } = await putChunk(env.BUCKET, key, purged);
    expect(after.map(([, at]) => at)).not.toEqual(before.map(([, at]) => at));
    expect(await readChunk(env.BUCKET, key, before)).toEqual(purged);
    for (const i of [0, SEGMENT_RECORDS + 3, 2 * SEGMENT_RECORDS + 6]) {
      const segment = await readSegmentOf(env.BUCKET, key, before, rows[i]!.id);
      expect(segment.find((r) => r.id === rows[i]!.id)).toEqual(purged[i]);
      expect(segment.length).toBeLessThanOrEqual(SEGMENT_RECORDS);
    }
  });

  it("reads a chunk written before segment keys were cut and names held the count (whole first ids as JSON; its name kept in its row) as it reads a new one", async () => {
    const { token, accountId, fn, ids } = await finishedTasks(SEGMENT_RECORDS + 3);
    const picked = [ids[0]!, ids[SEGMENT_RECORDS - 1]!, ids[SEGMENT_RECORDS]!, ids.at(-1)!];
    // Past the week, as above, so the week's counts are the same before and after the move.
    await sql(`update tasks set issued_at = issued_at - ${10 * DAY_MS} where id in (select value from json_each(?))`, JSON.stringify(ids));
    await flushedDb();
    // Read live only: a read of the new chunk would leave it decoded in this isolate's memory.
    const live = await reads(token, picked, fn);
    await archiveIn(PAST);
    const [chunk] = await chunksOf(accountId);
    expect(chunk!.records).toBe(ids.length);
    const key = chunk!.key as string;
    const offsets = decodeSegments(chunk!.segments as string)!.map(([, at]) => at);
    const legacy = JSON.stringify([[ids[0], offsets[0]], [ids[SEGMENT_RECORDS], offsets[1]]]);
    // Named as chunks were before the count was part of names, the name kept in its row.
    const oldName = `history/${accountId}/${ids[0]}-${ids.at(-1)}.ndjson.gz`;
    const object = (await env.BUCKET.get(key))!;
    await env.BUCKET.put(oldName, await object.arrayBuffer(), { customMetadata: { segments: legacy } });
    await env.BUCKET.delete(key);
    await env.DB.prepare("update task_archive set segments = ?, key = ? where account_id = ? and last_id = ?").bind(legacy, oldName, accountId, chunk!.last_id).run();
    expect(await reads(token, picked, fn)).toEqual(live);
  });

  it("answers a damaged chunk with an error, never a wrong record", async () => {
    await env.BUCKET.put("history/test/damaged.ndjson.gz", "not gzip at all");
    await expect(readChunk(env.BUCKET, "history/test/damaged.ndjson.gz", [["a", 0]])).rejects.toThrow(DamagedChunk);
    await expect(readChunk(env.BUCKET, "history/test/missing.ndjson.gz", [["a", 0]])).rejects.toThrow(DamagedChunk);
  });
});

describe("retention of archived tasks", () => {
  it("deletes their inputs, results and logs after the retention period; the records stay", async () => {
    const agent = await FakeAgent.connect("archived-retention");
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const { id } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: {} });
    await agent.next("task.assign");
    agent.done(id, "z".repeat(INLINE_RESULT_BYTES + 1), 200, { log: Array.from({ length: 100 }, () => "x".repeat(90)) });
    expect((await call(`/v1/task/${id}/result?wait=5`, { token })).status).toBe(200);
    const small = await newTask(token, fn);
    // D1's own record: a shard's kept record answers by its own clock, not the sweeps' days ahead.
    await finishTaskInD1(small, { body: "small", log: ["one"] });
    await sweepIn(PAST);
    expect(await env.BUCKET.head(taskResultKey(accountId, id))).not.toBeNull();

    await sweepIn(31);
    for (const t of [id, small]) {
      await expectError(call(`/v1/task/${t}/result`, { token }), 410, "expired");
      await expectError(call(`/v1/task/${t}/log`, { token }), 410, "expired");
      expect(await callJson(`/v1/task/${t}`, 200, { token })).toMatchObject({ id: t, status: 200, progress: 100, responseHeaders: null });
    }
    for (const key of [taskResultKey(accountId, id), taskLogKey(accountId, id)]) expect(await env.BUCKET.head(key), key).toBeNull();
    expect((await chunksOf(accountId)).map((c) => c.purge_due)).toEqual([null]);
  });

  it("updates the index rows of 25 chunks a D1 batch: a run takes its look and a batch a group", async () => {
    const { token, accountId, ids } = await finishedTasks(3);
    await flushedDb();
    await archiveIn(PAST, { chunkSize: 1 });
    expect(await chunksOf(accountId)).toHaveLength(3);
    const now = Date.now() + 40 * DAY_MS;
    // Every chunk due then, the earlier tests' too.
    const due = (await env.DB.prepare("select count(*) n from task_archive where purge_due < ?").bind(now - retentionMs(bindings)).first<number>("n"))!;
    const budget = new QueryBudget(1000);
    expect(await purgeArchive(db(), env.BUCKET, retentionMs(bindings), now, budget)).toBeGreaterThanOrEqual(3);
    expect(1000 - budget.left()).toBe(1 + Math.ceil(due / 25));
    expect((await chunksOf(accountId)).map((c) => c.purge_due)).toEqual([null, null, null]);
    for (const id of ids) await expectError(call(`/v1/task/${id}/result`, { token }), 410, "expired");
  });
});

describe("retention of archived tasks, record by record", () => {
  it("purges each record of a chunk when its own finish is past the period, not before", async () => {
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const early = await newTask(token, fn);
    const late = await newTask(token, fn);
    // D1's own records: a shard's kept record answers by its own clock, not the sweeps' days ahead.
    await finishTaskInD1(early, { body: "early", log: ["e"] });
    await finishTaskInD1(late, { body: "late", log: ["l"], finishedAt: Date.now() + 10 * DAY_MS });
    await sweepIn(PAST + 10);
    expect((await chunksOf(accountId)).map((c) => c.records)).toEqual([2]);

    await sweepIn(31); // 30 days after the early finish, 20 after the late one
    await expectError(call(`/v1/task/${early}/result`, { token }), 410, "expired");
    expect(await (await call(`/v1/task/${late}/result`, { token })).text()).toBe("late");
    expect((await callJson(`/v1/task/${late}/log`, 200, { token })).log).toEqual(["l"]);

    await sweepIn(41);
    await expectError(call(`/v1/task/${late}/result`, { token }), 410, "expired");
    expect((await chunksOf(accountId)).map((c) => c.purge_due)).toEqual([null]);
  });
});

describe("moving an existing deployment's history", () => {
  it("loses no record and answers every read the same while the move goes on", async () => {
    const a = await newAccount("a");
    const b = await newAccount("b");
    const fa = [await deployedFunction(a.token), await deployedFunction(a.token)];
    const fb = await deployedFunction(b.token);
    // The old layout: every record in `tasks`, 40 to 9 days old, a few of them never finished.
    const rows = [...oldRows(a.accountId, fa, 260), ...oldRows(b.accountId, [fb], 90)];
    await insertOld(rows);
    const sample = rows.filter((_, i) => i % 37 === 0).map((r) => r.id);
    const snapshot = async () => ({
      a: await allPages(a.token, 50),
      a0: await allPages(a.token, 30, fa[0]),
      b: await allPages(b.token, 40),
      metrics: [(await callJson(`/v1/function/${fa[0]}`, 200, { token: a.token })).metrics, (await callJson(`/v1/function/${fb}`, 200, { token: b.token })).metrics],
      gets: await Promise.all(sample.map((id) => callJson(`/v1/task/${id}`, 200, { token: rows.find((r) => r.id === id)!.accountId === a.accountId ? a.token : b.token }))),
    });
    const before = await snapshot();
    expect(before.a.flat()).toHaveLength(260);

    // The move in small steps (chunks of 60 records, one a run), every read compared in between.
    let steps = 0;
    while ((await archiveTasks(db(), env.BUCKET, archiveAfterMs(bindings), Date.now(), { chunkSize: 60, chunksPerRead: 1, maxQueries: 3 })) > 0) {
      expect(await snapshot()).toEqual(before);
      steps++;
    }
    expect(steps).toBeGreaterThan(4);
    // Every record was past the window and the hold (9 to 40 days old): the steps moved them all.
    expect(await archiveIn(PAST)).toBe(0);
    expect(await snapshot()).toEqual(before);
    const left = (await env.DB.prepare("select count(*) n from tasks where account_id in (?, ?)").bind(a.accountId, b.accountId).first("n")) as number;
    expect(left).toBe(rows.filter((r) => r.finished_at === null).length);
    const archived = await env.DB.prepare("select sum(records) n from task_archive where account_id in (?, ?)").bind(a.accountId, b.accountId).first("n");
    expect(archived).toBe(rows.length - left);
  });
});

interface OldRow {
  id: string;
  account_id: string;
  function_id: string;
  endpoint_id: string | null;
  issued_at: number;
  finished_at: number | null;
  status: number;
}

/** `n` task rows of the layout before the archive, spread from 40 to 9 days ago, every 23rd unfinished. */
function oldRows(accountId: string, fns: string[], n: number, o: { endpointId?: string; daysAgo?: number } = {}): (OldRow & { accountId: string })[] {
  const start = Date.now() - (o.daysAgo ?? 40) * DAY_MS;
  const step = Math.floor((31 * DAY_MS) / n);
  return Array.from({ length: n }, (_, i) => {
    const issued = start + i * step;
    const finished = i % 23 === 5 ? null : issued + 1500;
    return {
      id: newId(issued), account_id: accountId, accountId, function_id: fns[i % fns.length]!, endpoint_id: o.endpointId ?? null,
      issued_at: issued, finished_at: finished, status: finished ? (i % 7 ? 200 : 500) : 0,
    };
  });
}

async function insertOld(rows: OldRow[]) {
  await flushedDb();
  const stmt = `insert into tasks (id, account_id, function_id, endpoint_id, lang, issued_at, assigned_at, finished_at, progress, status, node, timeout, cpu_count, mem_size, privileged,
      input, result_status, result_headers, result_body, log)
    select json_extract(value, '$.id'), json_extract(value, '$.account_id'), json_extract(value, '$.function_id'), json_extract(value, '$.endpoint_id'), 'py', json_extract(value, '$.issued_at'),
      json_extract(value, '$.finished_at') - 500, json_extract(value, '$.finished_at'), case when json_extract(value, '$.finished_at') is null then 0 else 100 end,
      json_extract(value, '$.status'), 'node-old', 30, 1, 256, 0, '{"method":"POST","query":{},"headers":{},"body":"{}"}',
      nullif(json_extract(value, '$.status'), 0), '{"content-type":"text/plain"}', 'old result', '["old line"]'
    from json_each(?)`;
  for (let i = 0; i < rows.length; i += 100) await env.DB.prepare(stmt).bind(JSON.stringify(rows.slice(i, i + 100))).run();
}
