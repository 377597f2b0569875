import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { shardStub } from "../../worker/dispatch/client.js";
import { call, callJson, clearQueue, consolePage, deployedFunction, holdRecords, invocationsInD1, newAccount, newEndpoint, replayed, restartShard } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";
import { rowOf } from "../../worker/db/client.js";
import { tasks } from "../../worker/db/schema/tasks.js";

/**
 * Issue 26, read your own writes across a restart: a task whose outcome is durable in its shard
 * (the outcome log) reads finished on every read route, also when the shard restarted (eviction,
 * deploy, crash) before the group commit brought the outcome to D1. The shard's finished views are
 * memory only; a fresh instance makes each again, on the task's first read, from its held row and
 * its outcome log.
 */

beforeEach(clearQueue);
afterEach(async () => {
  await FakeAgent.closeAll();
  await holdRecords(false);
});

const DURATION_MS = 40;
/** Over the 4 KiB a row keeps inline (dispatch/records.ts): the result and the log go to R2. */
const BIG_BODY = "r".repeat(6000);
const BIG_LOG = ["l".repeat(5000)];

const inD1 = async (...ids: string[]) =>
  (await env.DB.prepare("select id, finished_at as finishedAt, result_key as resultKey, log_key as logKey from tasks where id in (select value from json_each(?)) order by id").bind(JSON.stringify(ids)).all()).results;

interface Finished {
  token: string;
  accountId: string;
  fn: string;
  /** POST /v1/task, a small result and log (inline in the row). */
  smallId: string;
  /** POST /gc/<endpoint>, a result and a log too large for the row (R2). */
  bigId: string;
}

/** Every route a caller reads the two tasks by, each read on its own (the first after a restart). */
const routes = {
  get: (s: Finished) => Promise.all([s.smallId, s.bigId].map((id) => callJson(`/v1/task/${id}`, 200, { token: s.token }))),
  result: (s: Finished) => Promise.all([s.smallId, s.bigId].map((id) => replayed(call(`/v1/task/${id}/result`, { token: s.token })))),
  waited: (s: Finished) => replayed(call(`/v1/task/${s.bigId}/result?wait=1`, { token: s.token })),
  publicResult: (s: Finished) => replayed(call(`/gc/${s.bigId}/result`)),
  log: (s: Finished) => Promise.all([s.smallId, s.bigId].map((id) => callJson(`/v1/task/${id}/log`, 200, { token: s.token }))),
  list: (s: Finished) => callJson(`/v1/task/list`, 200, { token: s.token }),
  listOfFunction: (s: Finished) => callJson(`/v1/task/list?functionId=${s.fn}`, 200, { token: s.token }),
  usage: (s: Finished) => callJson(`/v1/usage`, 200, { token: s.token }),
  counters: async (s: Finished) => (await callJson(`/v1/function/${s.fn}`, 200, { token: s.token })).metrics,
  consoleTask: async (s: Finished) => {
    const page = await consolePage(`/console/tasks/${s.bigId}`, s.token);
    return { status: /<dt>Status<\/dt><dd>(.*?)<\/dd>/.exec(page)?.[1], result: page.includes(`<pre aria-label="Result body">${BIG_BODY}</pre>`) };
  },
  consoleRuns: async (s: Finished) => {
    const page = await consolePage(`/console/tasks`, s.token);
    return [s.smallId, s.bigId].map((id) => new RegExp(`href="/console/tasks/${id}">${id}</a></td><td>(.*?)</td>`).exec(page)?.[1]);
  },
};

/** What each route answers now. */
async function reads(s: Finished) {
  const out: Record<string, unknown> = {};
  for (const [name, read] of Object.entries(routes)) out[name] = await read(s);
  return out as { [K in keyof typeof routes]: Awaited<ReturnType<(typeof routes)[K]>> };
}

/** Two tasks finished by the agent, their outcomes durable in the shard, D1 holding none of them. */
async function finishedInShard(): Promise<Finished> {
  const agent = await FakeAgent.connect("restart-node");
  const { token, accountId } = await newAccount();
  const fn = await deployedFunction(token);
  const ep = await newEndpoint(token, fn);
  await holdRecords(true);
  const { id: smallId } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: { n: 1 } });
  expect((await agent.next("task.assign")).taskId).toBe(smallId);
  const { id: bigId } = await callJson<{ id: string }>(`/gc/${ep}`, 201, { json: { n: 2 } });
  expect((await agent.next("task.assign")).taskId).toBe(bigId);
  agent.done(smallId, "small", 201, { durationMs: DURATION_MS });
  agent.done(bigId, BIG_BODY, 200, { durationMs: DURATION_MS, log: BIG_LOG });
  for (const id of [smallId, bigId]) await eventually(async () => (await callJson(`/v1/task/${id}`, 200, { token })).finished);
  expect(await inD1(smallId, bigId)).toEqual([]);
  return { token, accountId, fn, smallId, bigId };
}

describe("reading a task whose shard restarted after its outcome, before D1 recorded it", () => {
  it("shows it finished on every read route, as before the restart, and D1 records it once", async () => {
    const s = await finishedInShard();
    const before = await reads(s);
    expect(before.get).toEqual([
      expect.objectContaining({ id: s.smallId, status: 201, progress: 100, finished: expect.any(String), node: "restart-node" }),
      expect.objectContaining({ id: s.bigId, status: 200, progress: 100, finished: expect.any(String), node: "restart-node" }),
    ]);
    expect(before.result).toEqual([{ status: 201, type: "text/plain", body: "small" }, { status: 200, type: "text/plain", body: BIG_BODY }]);
    expect(before.log).toEqual([expect.objectContaining({ log: [`ran ${s.smallId}`], finished: true }), expect.objectContaining({ log: BIG_LOG, finished: true })]);
    expect(before.usage).toMatchObject({ invocations: 2, pending: 0, durationMs: 2 * DURATION_MS });
    const heldBefore = await shardStub(env, 0).heldTask(s.bigId);
    expect(heldBefore).toMatchObject({ resultKey: expect.any(String), logKey: expect.any(String) });

    // Each route is the first read of a fresh instance, D1 still without the tasks.
    for (const [name, read] of Object.entries(routes)) {
      await restartShard({ held: true });
      expect.soft(await read(s), name).toEqual(before[name as keyof typeof routes]);
    }
    await restartShard({ held: true });
    expect(await shardStub(env, 0).heldTask(s.bigId)).toEqual(heldBefore);
    expect(await inD1(s.smallId, s.bigId)).toEqual([]);
    // Each R2 upload has a version of its own: the commit must use the objects the views point at, not put them again.
    const versions = async () => Promise.all([heldBefore!.resultKey!, heldBefore!.logKey!].map(async (key) => (await env.BUCKET.head(key))?.version));
    const rebuilt = await versions();
    expect(rebuilt).toEqual([expect.any(String), expect.any(String)]);

    await holdRecords(false);
    // One record each, pointing at the R2 objects the views pointed at, metered once.
    expect(await inD1(s.smallId, s.bigId)).toEqual(
      [
        { id: s.smallId, finishedAt: expect.any(Number), resultKey: null, logKey: null },
        { id: s.bigId, finishedAt: heldBefore!.finishedAt, resultKey: heldBefore!.resultKey, logKey: heldBefore!.logKey },
      ].sort((a, b) => (a.id < b.id ? -1 : 1)),
    );
    expect(await versions()).toEqual(rebuilt);
    expect(await invocationsInD1(s.accountId)).toBe(2);
    // The held copy is gone: what the shard answers now is the record it kept of D1's row (worker/shard-history/).
    const recorded = await env.DB.prepare("select * from tasks where id = ?").bind(s.bigId).first<Record<string, unknown>>();
    expect(await shardStub(env, 0).heldTask(s.bigId)).toEqual(rowOf(tasks, recorded!));
    expect(await reads(s)).toEqual(before);
  });
});
