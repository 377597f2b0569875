import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, expectNoContent, flushedDb, holdRecords, newAccount } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";
import { shardStub } from "../../worker/dispatch/client.js";
import { openDb, sqlBatch } from "../../worker/db/client.js";
import type { TaskRow } from "../../worker/db/rows.js";
import type { Outcome, OutcomeLog } from "../../worker/dispatch/outcomes.js";
import type { HeldTasks } from "../../worker/task-life/held-tasks.js";
import { periodOf } from "../../worker/billing/plans.js";
import { DEFAULT_BILLED_MEM_MIB } from "../../worker/billing/billed-memory.js";
import { attemptMeterOf, meterOf, ShardMeters } from "../../worker/shard-metering/shard-meters.js";

beforeEach(clearQueue);
afterEach(async () => {
  await holdRecords(false);
  await FakeAgent.closeAll();
});

const PERIOD = periodOf(Date.now());

const shardRows = async (accountId: string) =>
  (await env.DB.prepare("select period, invocations, duration_ms as durationMs, mib_ms as mibMs from shard_usage where account_id = ?").bind(accountId).all()).results;
const totals = async (accountId: string) =>
  (await env.DB.prepare("select period, invocations, duration_ms as durationMs, mib_ms as mibMs from usage_totals where account_id = ?").bind(accountId).all()).results;
const usage = (token: string) => callJson<{ invocations: number; durationMs: number; gbSeconds: number }>("/v1/usage", 200, { token });

/** A function of a new account asking for 512 MiB, and (unless `agent` is false) an agent that runs its tasks. */
async function running(node: string, o: { agent?: boolean } = {}) {
  const { token, accountId } = await newAccount();
  const fn = await deployedFunction(token);
  await callJson(`/v1/function/${fn}/capabilities`, 204, { token, json: { memSize: 512 } });
  if (o.agent === false) return { token, accountId, fn, run: () => Promise.reject(new Error("no agent")) };
  const agent = await FakeAgent.connect(node);
  const run = async (durationMs: number) => {
    const { id } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: { n: 1 } });
    expect((await agent.next("task.assign")).taskId).toBe(id);
    agent.done(id, "ok", 200, { durationMs });
    await agent.next("ack");
    return id;
  };
  return { token, accountId, fn, run };
}

describe("metering a task's outcome in its shard", () => {
  it("adds each run task once to its shard's sums of the account's period, at the memory it asked for, and usage_totals by their growth", async () => {
    const { token, accountId, run } = await running("meter-node");
    await run(30);
    await run(12);
    await flushedDb();
    const expected = { period: PERIOD, invocations: 2, durationMs: 42, mibMs: 42 * 512 };
    expect(await shardRows(accountId)).toEqual([expected]);
    expect(await totals(accountId)).toEqual([expected]);
    expect(await usage(token)).toMatchObject({ invocations: 2, durationMs: 42 });
    // Nothing was left set: the next update by anyone else meters as before (migrations/0034).
    expect((await env.DB.prepare("select count(*) as n from metering_in_shard").first<{ n: number }>())!.n).toBe(0);
  });

  it("shows a caller's outcome in GET /v1/usage before D1 has it, and counts it once after", async () => {
    const { token, accountId, run } = await running("meter-held");
    await run(5);
    await flushedDb();
    await holdRecords(true);
    await run(7);
    expect(await shardRows(accountId)).toEqual([{ period: PERIOD, invocations: 1, durationMs: 5, mibMs: 5 * 512 }]);
    expect(await usage(token)).toMatchObject({ invocations: 2, durationMs: 12 });
    await holdRecords(false);
    expect(await usage(token)).toMatchObject({ invocations: 2, durationMs: 12 });
    expect(await totals(accountId)).toEqual([{ period: PERIOD, invocations: 2, durationMs: 12, mibMs: 12 * 512 }]);
  });

  it("counts once an outcome whose batch D1 committed while the shard still holds it (the answer lost), read before and after the batch is sent again", async () => {
    const { token, accountId, run } = await running("meter-lost");
    await holdRecords(true);
    await run(9);
    // D1 commits the shard's sums of the batch; the shard never hears of it and still holds the outcome.
    await runInDurableObject(shardStub(env, 0), async (o) => {
      const d = o as unknown as { meters: ShardMeters; outcomes: OutcomeLog; heldRows: HeldTasks };
      const batch = d.meters.forBatch(d.outcomes.all(), (id) => d.heldRows.created(id), () => d.outcomes.all(), Date.now());
      await sqlBatch(openDb(env), batch.statements);
    });
    expect(await totals(accountId)).toEqual([{ period: PERIOD, invocations: 1, durationMs: 9, mibMs: 9 * 512 }]);
    expect(await usage(token)).toMatchObject({ invocations: 1, durationMs: 9 });
    await holdRecords(false);
    expect(await totals(accountId)).toEqual([{ period: PERIOD, invocations: 1, durationMs: 9, mibMs: 9 * 512 }]);
    expect(await usage(token)).toMatchObject({ invocations: 1, durationMs: 9 });
  });
});

describe("metering a retried task's failed attempts in its shard", () => {
  it("meters each failed attempt once in the shard's sums of attempts, at the task's memory, and writes no usage row", async () => {
    const { token, accountId, fn } = await running("meter-retry", { agent: false });
    await expectNoContent(call(`/v1/function/${fn}/retry`, { token, method: "PUT", json: { maxAttempts: 2, backoffSeconds: 1, deadLetterFunctionId: null } }));
    const agent = await FakeAgent.connect("meter-retry");
    const { id } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: { n: 1 } });
    expect((await agent.next("task.assign")).taskId).toBe(id);
    agent.done(id, "boom", 500, { durationMs: 8 });
    expect((await agent.next("task.assign", 4_000)).taskId).toBe(id);
    agent.done(id, "fine", 200, { durationMs: 5 });
    await agent.next("ack");
    await flushedDb();
    expect(await totals(accountId)).toEqual([{ period: PERIOD, invocations: 2, durationMs: 13, mibMs: 13 * 512 }]);
    const byShard = (await env.DB.prepare("select shard, invocations, duration_ms as durationMs from shard_usage where account_id = ? order by shard").bind(accountId).all()).results;
    expect(byShard).toEqual([
      { shard: expect.not.stringContaining("#"), invocations: 1, durationMs: 5 },
      { shard: expect.stringMatching(/#attempts$/), invocations: 1, durationMs: 8 },
    ]);
    expect((await env.DB.prepare("select count(*) as n from usage where account_id = ?").bind(accountId).first<{ n: number }>())!.n).toBe(0);
    expect(await usage(token)).toMatchObject({ invocations: 2, durationMs: 13 });
  });
});

const CREATED: TaskRow = {
  id: "t1", accountId: "acct", functionId: "fn", lang: "py", buildId: "b", endpointId: null, triggerId: null, parentTaskId: null,
  chainId: null, hop: 0, issuedAt: 0, assignedAt: null, finishedAt: null, progress: 0, status: 0, node: null, timeout: 30,
  cpuCount: 1, memSize: 128, privileged: false, egress: "none", networkLatency: 0, runtime: null, input: "{}", inputKey: null,
  resultStatus: null, resultHeaders: null, resultBody: null, resultKey: null, log: null, logKey: null,
  durationMs: null, attempts: 0, purgedAt: null, scheduledId: null,
};
const AT = Date.UTC(2026, 9, 31, 23, 59, 59, 999);
const outcome = (o: Partial<Outcome> & { status?: number; durationMs?: number } = {}): Outcome => ({
  taskId: "t1", accountId: "acct", functionId: "fn", at: AT, node: "node-1", assignedAt: AT - 10, rttMs: 1,
  report: {
    type: "task.done", taskId: "t1", status: o.status ?? 200, headers: {}, body: "", bodyUploaded: false, log: [], logUploaded: false, durationMs: o.durationMs ?? 20,
  },
  ...o,
});

describe("recording a retried task's failed attempt", () => {
  it("needs nothing of D1's row: the attempt is metered while D1 has no row of the task, and the row arrives with its attempts", async () => {
    const { token, accountId, fn } = await running("meter-no-row", { agent: false });
    await expectNoContent(call(`/v1/function/${fn}/retry`, { token, method: "PUT", json: { maxAttempts: 2, backoffSeconds: 1, deadLetterFunctionId: null } }));
    const agent = await FakeAgent.connect("meter-no-row");
    await holdRecords(true);
    const { id } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: { n: 1 } });
    expect((await agent.next("task.assign")).taskId).toBe(id);
    agent.done(id, "boom", 500, { durationMs: 6 });
    // The attempt is recorded (its run goes back to the queue only then) with D1 holding no row of the task.
    expect((await agent.next("task.assign", 4_000)).taskId).toBe(id);
    expect(await totals(accountId)).toEqual([{ period: PERIOD, invocations: 1, durationMs: 6, mibMs: 6 * 512 }]);
    expect(await env.DB.prepare("select id from tasks where id = ?").bind(id).first()).toBeNull();
    expect(await callJson(`/v1/task/${id}`, 200, { token })).toMatchObject({ attempts: 1 });
    agent.done(id, "fine", 200, { durationMs: 2 });
    await agent.next("ack");
    await holdRecords(false);
    expect(await env.DB.prepare("select attempts, status from tasks where id = ?").bind(id).first()).toEqual({ attempts: 2, status: 200 });
    expect(await totals(accountId)).toEqual([{ period: PERIOD, invocations: 2, durationMs: 8, mibMs: 8 * 512 }]);
  });
});

describe("meterOf (which outcomes a shard meters, and how)", () => {
  it("meters one invocation of the run's duration at the memory asked for, in the UTC month of the finish", () => {
    expect(meterOf(outcome(), CREATED)).toEqual({ period: "2026-10", sums: { invocations: 1, durationMs: 20, mibMs: 20 * 128 } });
    expect(meterOf(outcome({ at: AT + 1 }), CREATED)!.period).toBe("2026-11");
  });

  it("bills the default memory for a task that asked for the node's default", () => {
    expect(meterOf(outcome(), { ...CREATED, memSize: 0 })!.sums.mibMs).toBe(20 * DEFAULT_BILLED_MEM_MIB);
  });

  it("meters a timed-out task (no report) at no duration", () => {
    expect(meterOf(outcome({ report: null }), CREATED)).toEqual({ period: "2026-10", sums: { invocations: 1, durationMs: 0, mibMs: 0 } });
  });

  it("meters nothing for a task cancelled, finished here by its function's deletion, or ended before any node had it", () => {
    expect(meterOf(outcome({ status: 410 }), CREATED)).toBeNull();
    expect(meterOf(outcome(), { ...CREATED, finishedAt: AT - 1, status: 410 })).toBeNull();
    expect(meterOf(outcome({ node: null }), CREATED)).toBeNull();
    expect(meterOf(outcome({ node: null }), { ...CREATED, node: "node-2" })).not.toBeNull();
  });

  it("leaves a task the shard does not hold to D1's update, and its failed attempts to usage rows", () => {
    expect(meterOf(outcome(), undefined)).toBeUndefined();
    expect(attemptMeterOf({ taskId: "t1", accountId: "acct", at: AT, durationMs: 3 }, undefined)).toBeUndefined();
  });

  it("meters a failed attempt as one invocation whatever its status, at its task's memory", () => {
    expect(attemptMeterOf({ taskId: "t1", accountId: "acct", at: AT, durationMs: 3 }, CREATED)).toEqual({ period: "2026-10", sums: { invocations: 1, durationMs: 3, mibMs: 3 * 128 } });
  });
});

describe("ShardMeters.forBatch", () => {
  const fresh = () => env.DISPATCHER.get(env.DISPATCHER.idFromName(`metering-test-${crypto.randomUUID()}`));

  it("sends sums absolute, on top of what D1 committed before, one row an account and period", async () => {
    await runInDurableObject(fresh(), (_o, state) => {
      const meters = new ShardMeters(state.storage.sql, "shard-x");
      const created = (id: string) => ({ ...CREATED, id });
      const first = meters.forBatch([outcome(), outcome({ taskId: "t2", durationMs: 5 })], created, () => [], AT);
      expect([...first.here]).toEqual(["t1", "t2"]);
      expect(first.statements).toHaveLength(1);
      // Not committed yet: the same batch built again sends the same sums.
      expect(meters.view("acct", "2026-10", [], created).sent).toEqual({ invocations: 0, durationMs: 0, mibMs: 0 });
      first.committed();
      expect(meters.view("acct", "2026-10", [], created).sent).toEqual({ invocations: 2, durationMs: 25, mibMs: 25 * 128 });
      const held = [outcome({ taskId: "t3", durationMs: 1 }), outcome({ taskId: "t4", accountId: "other" })];
      expect(meters.view("acct", "2026-10", held, created)).toEqual({
        shard: "shard-x", sent: { invocations: 2, durationMs: 25, mibMs: 25 * 128 }, held: { invocations: 1, durationMs: 1, mibMs: 128 },
      });
    });
  });

  it("forgets a past period once no outcome of it waits in the log, and survives a restart from storage", async () => {
    const stub = fresh();
    await runInDurableObject(stub, (_o, state) => {
      const meters = new ShardMeters(state.storage.sql, "shard-y");
      const created = (id: string) => ({ ...CREATED, id });
      const october = outcome();
      meters.forBatch([october], created, () => [october], AT).committed();
      // The next month's first batch: an October outcome still waits, so October is kept.
      const waiting = outcome({ taskId: "t9" });
      meters.forBatch([], created, () => [waiting], AT + 1).committed();
      expect(new ShardMeters(state.storage.sql, "shard-y").view("acct", "2026-10", [], created).sent.invocations).toBe(1);
      meters.forBatch([], created, () => [], AT + 1).committed();
      expect(new ShardMeters(state.storage.sql, "shard-y").view("acct", "2026-10", [], created).sent.invocations).toBe(0);
    });
  });
});
