import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { shardStub } from "../../worker/dispatch/client.js";
import { call, callJson, clearQueue, consolePage, deployedFunction, holdRecords, invocationsInD1, newAccount, newEndpoint, replayed } from "./helpers.js";
import { shardCounts } from "../../worker/task-life/held-reads.js";
import { usageOf } from "../../worker/billing/usage.js";
import { plansFrom } from "../../worker/billing/plans.js";
import { taskCounts } from "../../worker/tasks/counts.js";
import { openDb } from "../../worker/db/client.js";
import type { Bindings } from "../../worker/env.js";
import { eventually, FakeAgent } from "./fake-agent.js";

/**
 * Issue 26: a task lives in its dispatcher shard first, and D1 gets its row and its outcome later,
 * in batches. Every read route answers a caller's own new and just-finished tasks all the same:
 * here with the shard's writes to D1 held back (D1 lags as far as a test wants), then let go, when
 * the same answers come from D1.
 */

beforeEach(clearQueue);
afterEach(async () => {
  await FakeAgent.closeAll();
  await holdRecords(false);
});

describe("pending counts of a task whose row reaches D1 between the shard's answer and D1's", () => {
  it("counts it once", async () => {
    const s = await lagging();
    const scope = { accountId: s.accountId };
    // The read asks the shard first (both pending tasks are its own, D1 has neither)…
    const held = await shardCounts(env as unknown as Bindings, scope, Date.now());
    expect(held.pending).toBe(2);
    // …then the batch with their rows lands, before the read asks D1.
    await holdRecords(false);
    expect((await inD1(s.pendingId, s.gcPendingId)).map((r) => r.finishedAt)).toEqual([null, null]);
    const db = openDb(env as unknown as Bindings);
    const usage = await usageOf(db, plansFrom(env.PLANS), s.accountId, Date.now(), { meters: [], pending: held.pending, pendingElsewhere: [...held.finishedHere, ...held.pendingHere] });
    expect(usage.pending).toBe(2);
    const counts = await taskCounts(db, scope, Date.now(), { week: false, pendingElsewhere: [...held.finishedHere, ...held.pendingHere] });
    expect(counts.pending + held.pending).toBe(2);
  });
});

const DURATION_MS = 40;

interface Lagging {
  token: string;
  accountId: string;
  fn: string;
  ep: string;
  /** Created with POST /v1/task, taken by the agent, not finished. */
  pendingId: string;
  /** Created with POST /gc/<endpoint>, taken by the agent, not finished. */
  gcPendingId: string;
  /** Created with POST /gc/<endpoint>, finished by the agent. */
  doneId: string;
  memSize: number;
}

/** D1's copies of the tasks (direct reads: the helpers' `sql` would flush the shard first). */
const inD1 = async (...ids: string[]) =>
  (await env.DB.prepare("select id, finished_at as finishedAt from tasks where id in (select value from json_each(?)) order by id").bind(JSON.stringify(ids)).all<{ id: string; finishedAt: number | null }>()).results;

/** An account whose three new tasks D1 has not seen: two pending (one of each door), one finished by the (fake) agent. */
async function lagging(): Promise<Lagging> {
  const agent = await FakeAgent.connect("ryw-node");
  const { token, accountId } = await newAccount();
  const fn = await deployedFunction(token);
  const ep = await newEndpoint(token, fn);
  await holdRecords(true);
  const { id: pendingId } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: { n: 1 } });
  expect((await agent.next("task.assign")).taskId).toBe(pendingId);
  const { id: gcPendingId } = await callJson<{ id: string }>(`/gc/${ep}`, 201, { json: { n: 3 } });
  expect((await agent.next("task.assign")).taskId).toBe(gcPendingId);
  const { id: doneId } = await callJson<{ id: string }>(`/gc/${ep}`, 201, { json: { n: 2 } });
  expect((await agent.next("task.assign")).taskId).toBe(doneId);
  agent.done(doneId, "hello", 200, { durationMs: DURATION_MS });
  const done = await eventually(async () => {
    const t = await callJson(`/v1/task/${doneId}`, 200, { token });
    return t.finished ? t : undefined;
  });
  // D1 has none of the tasks yet: what follows is answered by the shard.
  expect(await inD1(pendingId, gcPendingId, doneId)).toEqual([]);
  return { token, accountId, fn, ep, pendingId, gcPendingId, doneId, memSize: done.capabilities.memSize };
}

/** Lets the shard write to D1, and checks that D1 now has the tasks (the pending ones unfinished). */
async function caughtUp(s: Lagging) {
  await holdRecords(false);
  const rows = await inD1(s.pendingId, s.gcPendingId, s.doneId);
  expect(rows.map((r) => [r.id, r.finishedAt != null]).sort()).toEqual([[s.doneId, true], [s.pendingId, false], [s.gcPendingId, false]].sort());
  expect(await invocationsInD1(s.accountId)).toBe(1);
}

/**
 * Each read route, read while D1 lags and again once it caught up: both answers as expected, and
 * equal (the second from D1 where the shard has let go of the tasks).
 */
function readsItsOwnWrites<T>(name: string, read: (s: Lagging) => Promise<T>, expected: (s: Lagging) => unknown) {
  describe(name, () => {
    it("shows a task just created and one just finished while D1 lags, and the same once D1 has them", async () => {
      const s = await lagging();
      const held = await read(s);
      expect(held).toEqual(expected(s));
      await caughtUp(s);
      expect(await read(s)).toEqual(held);
    });
  });
}


readsItsOwnWrites(
  "GET /v1/task/<id>",
  async (s) => Promise.all([s.pendingId, s.gcPendingId, s.doneId].map((id) => callJson(`/v1/task/${id}`, 200, { token: s.token }))),
  (s) => [
    expect.objectContaining({ id: s.pendingId, functionId: s.fn, status: 0, finished: null }),
    expect.objectContaining({ id: s.gcPendingId, functionId: s.fn, endpointId: s.ep, status: 0, finished: null, node: "ryw-node" }),
    expect.objectContaining({ id: s.doneId, functionId: s.fn, endpointId: s.ep, status: 200, progress: 100, finished: expect.any(String), node: "ryw-node" }),
  ],
);

readsItsOwnWrites(
  "GET /v1/task/<id>/result",
  async (s) => replayed(call(`/v1/task/${s.doneId}/result`, { token: s.token })),
  () => ({ status: 200, type: "text/plain", body: "hello" }),
);

readsItsOwnWrites(
  "GET /gc/<task_id>/result (a public call's result)",
  async (s) => replayed(call(`/gc/${s.doneId}/result`)),
  () => ({ status: 200, type: "text/plain", body: "hello" }),
);

readsItsOwnWrites(
  "GET /v1/task/<id>/log",
  async (s) => callJson(`/v1/task/${s.doneId}/log`, 200, { token: s.token }),
  (s) => expect.objectContaining({ log: [`ran ${s.doneId}`] }),
);

/** The three tasks of the setup as a list shows them: newest first, the finished one finished. */
const newestFirst = (s: Lagging) => [
  expect.objectContaining({ id: s.doneId, status: 200, progress: 100 }),
  expect.objectContaining({ id: s.gcPendingId, status: 0 }),
  expect.objectContaining({ id: s.pendingId, status: 0 }),
];

readsItsOwnWrites(
  "GET /v1/task/list",
  async (s) => callJson(`/v1/task/list`, 200, { token: s.token }),
  newestFirst,
);

readsItsOwnWrites(
  "GET /v1/task/list?functionId=<id>",
  async (s) => callJson(`/v1/task/list?functionId=${s.fn}`, 200, { token: s.token }),
  newestFirst,
);

readsItsOwnWrites(
  "GET /v1/usage",
  async (s) => callJson(`/v1/usage`, 200, { token: s.token }),
  (s) => expect.objectContaining({ invocations: 1, pending: 2, durationMs: DURATION_MS, gbSeconds: Math.round(((DURATION_MS * s.memSize) / 1024 / 1000) * 1000) / 1000 }),
);

readsItsOwnWrites(
  "GET /v1/function/<id> (its task counters)",
  async (s) => (await callJson(`/v1/function/${s.fn}`, 200, { token: s.token })).metrics,
  () => ({ todaysTasks: 3, weekTasks: 3, pendingTasks: 2, completedTasks: 1 }),
);

readsItsOwnWrites(
  "GET /v1/endpoint/<id>/metrics",
  async (s) => callJson(`/v1/endpoint/${s.ep}/metrics`, 200, { token: s.token }),
  () => ({ todayTasks: 2, pendingTasks: 1, weekTasks: 2 }),
);

readsItsOwnWrites(
  "GET /v1/metrics (the account's tasks)",
  async (s) => {
    const m = await callJson(`/v1/metrics`, 200, { token: s.token });
    return { pendingTasks: m.pendingTasks, todayTasks: m.todayTasks, completedTasks: m.completedTasks };
  },
  () => ({ pendingTasks: 2, todayTasks: 3, completedTasks: 1 }),
);

readsItsOwnWrites(
  "GET /console/tasks (the runs page)",
  async (s) => {
    const page = await consolePage("/console/tasks", s.token);
    return [s.doneId, s.gcPendingId, s.pendingId].map((id) => page.includes(`href="/console/tasks/${id}"`));
  },
  () => [true, true, true],
);

readsItsOwnWrites(
  "GET /console/functions/<id> (counters and recent tasks)",
  async (s) => {
    const page = await consolePage(`/console/functions/${s.fn}`, s.token);
    return {
      counters: /<dt>Tasks today<\/dt><dd>(\d+)<\/dd><dt>Pending<\/dt><dd>(\d+)<\/dd><dt>Last 7 days<\/dt><dd>(\d+)<\/dd><dt>Completed<\/dt><dd>(\d+)<\/dd>/.exec(page)?.slice(1),
      listed: [s.doneId, s.gcPendingId, s.pendingId].map((id) => page.includes(`href="/console/tasks/${id}"`)),
    };
  },
  () => ({ counters: ["3", "2", "3", "1"], listed: [true, true, true] }),
);

readsItsOwnWrites(
  "GET /console/usage (this period and the daily chart)",
  async (s) => {
    const page = await consolePage("/console/usage", s.token);
    return { invocations: /id="invocations">(\d+)</.exec(page)?.[1], pending: /(\d+) pending/.exec(page)?.[1], today: /Tasks per day over the last 30 days: [\d, ]*?(\d+)"/.exec(page)?.[1] };
  },
  () => ({ invocations: "1", pending: "2", today: "3" }),
);

readsItsOwnWrites(
  "GET /console (the functions' tasks today)",
  async (s) => {
    const page = await consolePage("/console", s.token);
    return /: ([\d, ]+) tasks over the last 7 days/.exec(page)?.[1]?.split(", ").at(-1);
  },
  () => "3",
);

describe("pending counts of a task D1 has, finished in its shard", () => {
  it("no longer counts it as pending, though D1 still has it unfinished", async () => {
    const agent = await FakeAgent.connect("ryw-node");
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const { id } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: {} });
    await agent.next("task.assign");
    await eventually(async () => (await inD1(id)).length === 1);
    await holdRecords(true);
    agent.done(id, "late", 200, { durationMs: DURATION_MS });
    await eventually(async () => (await callJson(`/v1/task/${id}`, 200, { token })).finished);
    expect(await inD1(id)).toEqual([{ id, finishedAt: null }]);
    expect(await invocationsInD1(accountId)).toBe(0);
    expect((await callJson(`/v1/function/${fn}`, 200, { token })).metrics).toEqual({ todaysTasks: 1, weekTasks: 1, pendingTasks: 0, completedTasks: 1 });
    expect(await callJson(`/v1/usage`, 200, { token })).toMatchObject({ invocations: 1, pending: 0, durationMs: DURATION_MS });
    await holdRecords(false);
    expect(await invocationsInD1(accountId)).toBe(1);
    expect((await callJson(`/v1/function/${fn}`, 200, { token })).metrics).toEqual({ todaysTasks: 1, weekTasks: 1, pendingTasks: 0, completedTasks: 1 });
    expect(await callJson(`/v1/usage`, 200, { token })).toMatchObject({ invocations: 1, pending: 0, durationMs: DURATION_MS });
  });
});

describe("GET /v1/task/<id>/result?wait of a task that finished in its shard a while ago, D1 still without its outcome", () => {
  it("is answered with the finished task by the shard, however long ago it finished, while D1 lags", async () => {
    const s = await lagging();
    const shard = shardStub(env, 0);
    // The shard's recently finished rows last a few seconds; D1 may lag much longer (failing).
    await runInDurableObject(shard, (o) => (o as unknown as { finished: { rows: Map<string, unknown> } }).finished.rows.clear());
    const answer = await shard.awaitOwnTask(s.doneId, s.accountId, 1000);
    expect(answer).toEqual({ row: expect.objectContaining({ id: s.doneId, status: 200, resultBody: "hello", finishedAt: expect.any(Number) }) });
    expect(await replayed(call(`/v1/task/${s.doneId}/result?wait=1`, { token: s.token }))).toEqual({ status: 200, type: "text/plain", body: "hello" });
    await caughtUp(s);
  });

  it("is answered by the shard's copy at once, not after the wait", async () => {
    const agent = await FakeAgent.connect("ryw-node");
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    await holdRecords(true);
    const { id } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: {} });
    agent.done((await agent.next("task.assign")).taskId, "kept in the shard", 200, { durationMs: DURATION_MS });
    await eventually(async () => (await callJson(`/v1/task/${id}`, 200, { token })).finished);
    // Past the seconds the shard keeps rows it just finished for readers; D1 has no outcome still.
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      vi.setSystemTime(Date.now() + 60_000);
      // The wait the route parks on: with no time to wait, only a row already known answers.
      expect(await shardStub(env, 0).awaitOwnTask(id, accountId, 0)).toMatchObject({ row: { id, status: 200 } });
      expect(await shardStub(env, 0).awaitOwnTask(id, "another-account", 0)).toBeNull();
    } finally {
      vi.useRealTimers();
    }
    const res = await call(`/v1/task/${id}/result?wait=30`, { token });
    expect({ status: res.status, body: await res.text() }).toEqual({ status: 200, body: "kept in the shard" });
  });
});
