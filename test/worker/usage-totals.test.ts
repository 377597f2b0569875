import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, newAccount, sql, flushedDb } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const PERIOD = new Date().toISOString().slice(0, 7);

const totalsOf = async (accountId: string, period = PERIOD) =>
  (await flushedDb()).prepare("select invocations, duration_ms as durationMs, mib_ms as mibMs from usage_totals where account_id = ? and period = ?").bind(accountId, period).first();

const meter = (taskId: string, accountId: string, fn: string, period: string, durationMs: number, memMiB = 256) =>
  sql("insert into usage (task_id, account_id, function_id, period, finished_at, duration_ms, mem_mib) values (?, ?, ?, ?, 0, ?, ?) on conflict do nothing", taskId, accountId, fn, period, durationMs, memMiB);

describe("usage_totals", () => {
  it("adds each metered row to its account's period once, however often the same row is written", async () => {
    const { accountId } = await newAccount();
    await meter("t1", accountId, "f", PERIOD, 100);
    await meter("t2", accountId, "f", PERIOD, 50, 512);
    await meter("t2", accountId, "f", PERIOD, 50, 512);
    await meter("t3", accountId, "f", "2020-01", 7);
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
