import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SWEEP_CRON } from "../../worker/crons.js";
import { DEFAULT_BILLED_MEM_MIB } from "../../worker/billing/billed-memory.js";
import { openDb } from "../../worker/db/client.js";
import { outcomesWritten } from "../../worker/dispatch/records.js";
import type { Outcome } from "../../worker/dispatch/outcomes.js";
import { DAY_MS } from "../../worker/lib/time.js";
import { call, callJson, clearQueue, deployedFunction, newAccount, newTask, runCron, sql, flushedDb } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const PERIOD = new Date().toISOString().slice(0, 7);

const totalsOf = async (accountId: string, period = PERIOD) =>
  (await flushedDb()).prepare("select invocations, duration_ms as durationMs, mib_ms as mibMs from usage_totals where account_id = ? and period = ?").bind(accountId, period).first();

const meter = (taskId: string, accountId: string, fn: string, period: string, durationMs: number, memMiB = 256) =>
  sql("insert into usage (task_id, account_id, function_id, period, finished_at, duration_ms, mem_mib) values (?, ?, ?, ?, 0, ?, ?) on conflict do nothing", taskId, accountId, fn, period, durationMs, memMiB);

describe("usage_totals", () => {
  it("adds each failed attempt's usage row to its account's period once, however often the same row is written", async () => {
    const { accountId } = await newAccount();
    await meter("t1#1", accountId, "f", PERIOD, 100);
    await meter("t2#1", accountId, "f", PERIOD, 50, 512);
    await meter("t2#1", accountId, "f", PERIOD, 50, 512);
    await meter("t3#2", accountId, "f", "2020-01", 7);
    expect(await totalsOf(accountId)).toEqual({ invocations: 2, durationMs: 150, mibMs: 100 * 256 + 50 * 512 });
    expect(await totalsOf(accountId, "2020-01")).toEqual({ invocations: 1, durationMs: 7, mibMs: 7 * 256 });
  });

  it("counts tasks reported twice by an agent once, and answers GET /v1/usage from the totals", async () => {
    const agent = await FakeAgent.connect("totals");
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    for (let i = 0; i < 3; i++) {
      const { id } = await callJson(`/v1/task/${fn}`, 201, { token, method: "POST" });
      await agent.next("task.assign");
      agent.done(id, "a", 200, { durationMs: 20 });
      agent.done(id, "b", 200, { durationMs: 20 });
      await call(`/v1/task/${id}/result?wait=5`, { token });
    }
    expect(await totalsOf(accountId)).toMatchObject({ invocations: 3, durationMs: 60 });
    expect(await callJson("/v1/usage", 200, { token })).toMatchObject({ invocations: 3, durationMs: 60 });
    // The usage answer reads the totals: a change to them alone shows.
    await sql("update usage_totals set invocations = 40 where account_id = ?", accountId);
    expect((await callJson("/v1/usage", 200, { token })).invocations).toBe(40);
  });

  it("is rebuilt from the usage rows by its migration, for a deployment that metered before it", async () => {
    const { accountId } = await newAccount();
    await meter("old-1", accountId, "f", PERIOD, 10);
    await meter("old-2", accountId, "f", PERIOD, 30);
    await sql("delete from usage_totals where account_id = ?", accountId);
    const migration = env.TEST_MIGRATIONS.find((m) => m.name.includes("usage_totals_trigger"))!;
    const backfill = migration.queries.find((q) => /^insert into `usage_totals`/i.test(q.trim()))!;
    await (await flushedDb()).prepare(backfill).run();
    expect(await totalsOf(accountId)).toEqual({ invocations: 2, durationMs: 40, mibMs: 40 * 256 });
  });
});

/** An agent's report of a task, as the shard hands it to the outcome batch. */
function outcomeOf(taskId: string, accountId: string, fn: string, at: number, o: { node?: string | null; status?: number; durationMs?: number } = {}): Outcome {
  const node = o.node === undefined ? "node-1" : o.node;
  return {
    taskId, accountId, functionId: fn, at, node, assignedAt: node ? at - 100 : null, rttMs: 1,
    report: { type: "task.done", taskId, status: o.status ?? 200, headers: {}, body: btoa("ok"), log: [], bodyUploaded: false, logUploaded: false, durationMs: o.durationMs ?? 40 },
  };
}

/** Every period's totals of an account. */
const allTotals = async (accountId: string) =>
  (await (await flushedDb()).prepare("select period, invocations, duration_ms as durationMs, mib_ms as mibMs from usage_totals where account_id = ? order by period").bind(accountId).all()).results;

/** Issued tasks of a new account's function, taken off the queue and in D1: the test writes their outcomes itself. */
async function issued(n: number) {
  const { token, accountId } = await newAccount();
  const fn = await deployedFunction(token);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await newTask(token, fn));
  await clearQueue();
  await flushedDb();
  return { token, accountId, fn, ids, at: Date.now() };
}

describe("metering a task's outcome (the update that finishes its row)", () => {
  it("meters each finished task once, in the UTC month of its finish, with its memory or the default", async () => {
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const big = await deployedFunction(token);
    await callJson(`/v1/function/${big}/capabilities`, 204, { token, json: { memSize: 512 } });
    const ids = [await newTask(token, fn), await newTask(token, fn), await newTask(token, big)];
    await clearQueue();
    await flushedDb();
    await sql("update tasks set mem_size = 0 where id = ?", ids[0]); // a record from before memory was kept: the default
    const lastMs = Date.parse("2026-01-31T23:59:59.999Z");
    await outcomesWritten(openDb(env), env.BUCKET, [
      outcomeOf(ids[0]!, accountId, fn, lastMs, { durationMs: 10 }),
      outcomeOf(ids[1]!, accountId, fn, lastMs + 1, { durationMs: 20 }),
      outcomeOf(ids[2]!, accountId, big, lastMs + 2, { durationMs: 30 }),
    ], lastMs + 5);
    const mem = (await (await flushedDb()).prepare("select mem_size as m from tasks where id = ?").bind(ids[1]).first<{ m: number }>())!.m;
    expect(await allTotals(accountId)).toEqual([
      { period: "2026-01", invocations: 1, durationMs: 10, mibMs: 10 * DEFAULT_BILLED_MEM_MIB },
      { period: "2026-02", invocations: 2, durationMs: 50, mibMs: 20 * mem + 30 * 512 },
    ]);
  });

  it("counts an outcome committed again (a batch whose answer was lost, sent again) once, however long after, and leaves no usage row", async () => {
    const { token, accountId, fn, ids, at } = await issued(1);
    const id = ids[0]!;
    const outcome = outcomeOf(id, accountId, fn, at);
    await outcomesWritten(openDb(env), env.BUCKET, [outcome], at);
    const once = await allTotals(accountId);
    expect(once).toEqual([{ period: PERIOD, invocations: 1, durationMs: 40, mibMs: expect.any(Number) }]);
    await outcomesWritten(openDb(env), env.BUCKET, [outcome], at);
    // Past the usage rows' horizon: what kept it once before was a row, and it is the task's now.
    await runCron(SWEEP_CRON, at + 3 * DAY_MS, { TASK_ARCHIVE_AFTER_HOURS: "87600" });
    await outcomesWritten(openDb(env), env.BUCKET, [outcome], at);
    expect(await allTotals(accountId)).toEqual(once);
    expect((await (await flushedDb()).prepare("select count(*) as n from usage where account_id = ?").bind(accountId).first<{ n: number }>())!.n).toBe(0);
    expect((await callJson("/v1/usage", 200, { token })).invocations).toBe(1);
  });

  it("meters nothing for a task cancelled, or ended before any node had it", async () => {
    const { accountId, fn, ids: [cancelled, unrun], at } = await issued(2);
    await outcomesWritten(openDb(env), env.BUCKET, [outcomeOf(cancelled!, accountId, fn, at, { status: 410 }), outcomeOf(unrun!, accountId, fn, at, { node: null, status: 500 })], at);
    expect((await (await flushedDb()).prepare("select count(*) as n from tasks where account_id = ? and finished_at is not null").bind(accountId).first<{ n: number }>())!.n).toBe(2);
    expect(await allTotals(accountId)).toEqual([]);
  });

  it("adds nothing for a task's own usage row that a Worker from before the migration writes with its outcome, during the deploy", async () => {
    const { accountId, fn, ids, at } = await issued(1);
    const id = ids[0]!;
    await outcomesWritten(openDb(env), env.BUCKET, [outcomeOf(id, accountId, fn, at)], at);
    await meter(id, accountId, fn, PERIOD, 40); // the old batch's fourth statement
    expect(await allTotals(accountId)).toEqual([{ period: PERIOD, invocations: 1, durationMs: 40, mibMs: expect.any(Number) }]);
    await meter(`${id}#1`, accountId, fn, PERIOD, 5); // a failed attempt counts
    expect(await allTotals(accountId)).toEqual([{ period: PERIOD, invocations: 2, durationMs: 45, mibMs: expect.any(Number) }]);
  });
});
