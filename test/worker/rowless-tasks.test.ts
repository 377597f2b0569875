import { env, runInDurableObject } from "cloudflare:test";
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { dispatcherFor, shardStub } from "../../worker/dispatch/client.js";
import type { Dispatcher } from "../../worker/dispatch/durable-object.js";
import type { Bindings } from "../../worker/env.js";
import { ROLL_MS } from "../../worker/shard-history/archive.js";
import { dailyTasks } from "../../worker/console/queries.js";
import { openDb } from "../../worker/db/client.js";
import { DAY_MS, HOUR_MS, startOfUtcDay } from "../../worker/lib/time.js";
import { call, callJson, clearQueue, deployedFunction, expectNoContent, finishTask, newAccount, newEndpoint, newTask, newTrigger, recordsFlushed, shardsCountIssuesFrom, tasksRowless } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";
import { reads } from "./task-reads.js";

/**
 * Step 4 of the shard-resident history (docs/dispatch.md): with TASK_ROWS = "shard" a task is
 * rowless, recorded by its shard alone. D1 gets no row of it at its creation, its assignment or its
 * outcome; its metering is the shard's sums and its counts the shard's own. Every read route must
 * answer for it as for a task with a row, live and once only the shard's archive holds it.
 */

const bindings = env as unknown as Bindings;
const inShard = <T>(fn: (o: Dispatcher, state: DurableObjectState) => T | Promise<T>) =>
  runInDurableObject(shardStub(env, 0), (o, state) => fn(o as unknown as Dispatcher, state));
beforeEach(clearQueue);
beforeEach(() => tasksRowless(true));
// A task is rowless once the shards count every issue (migrations 0032 and 0033), as a deployment's have for long.
beforeEach(() => shardsCountIssuesFrom(Date.now() - HOUR_MS, { accountDays: Date.now() - DAY_MS }));
afterEach(() => FakeAgent.closeAll());
afterAll(async () => {
  await tasksRowless(false);
  await shardsCountIssuesFrom(Date.now(), { accountDays: Date.now() });
});

const rowsInD1 = async (ids: string[]) =>
  Number(await env.DB.prepare("select count(*) as n from tasks where id in (select value from json_each(?))").bind(JSON.stringify(ids)).first("n"));
const usageRows = async (accountId: string) => Number(await env.DB.prepare("select count(*) as n from usage where account_id = ?").bind(accountId).first("n"));

/** The shard's archive takes every record that waited, and its kept copies go: only the archive holds them then. */
async function onlyInShardArchive() {
  await recordsFlushed();
  await inShard(async (d, state) => {
    while ((await d.archive.run(Date.now() + ROLL_MS + 1)).archived);
    state.storage.sql.exec("delete from shard_record");
  });
}

/** Finished tasks of two functions, answers and logs of each kind, run by an agent. */
async function finishedTasks() {
  const agent = await FakeAgent.connect("rowless");
  const { token, accountId } = await newAccount();
  const fn = await deployedFunction(token);
  const other = await deployedFunction(token);
  const ep = await newEndpoint(token, fn);
  const ids: string[] = [];
  for (const [i, f] of [fn, other, fn, fn].entries()) ids.push((await callJson<{ id: string }>(`/v1/task/${f}`, 201, { token, json: { n: i } })).id);
  ids.push((await callJson<{ id: string }>(`/gc/${ep}`, 201, { token: null, json: { via: "gc" } })).id);
  for (let i = 0; i < ids.length; i++) {
    const id = (await agent.next("task.assign")).taskId;
    const n = ids.indexOf(id);
    agent.done(id, n === 3 ? "broke" : `{"n":${n}}`, n === 3 ? 500 : 200, { headers: { "content-type": n === 3 ? "text/plain" : "application/json" }, log: [`line ${n}`] });
  }
  for (const id of ids) await eventually(async () => (await callJson(`/v1/task/${id}`, 200, { token })).progress === 100);
  await recordsFlushed();
  return { agent, token, accountId, fn, other, ids };
}

describe("a rowless task's life", () => {
  it("writes no row to D1: not at its creation, its assignment, its outcome, nor any batch after", async () => {
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await newTask(token, fn);
    await recordsFlushed();
    expect(await rowsInD1([id])).toBe(0);
    expect(await callJson(`/v1/task/${id}`, 200, { token })).toMatchObject({ id, status: 0, progress: 0 });

    const agent = await FakeAgent.connect("rowless-life");
    expect((await agent.next("task.assign")).taskId).toBe(id);
    await new Promise((r) => setTimeout(r, 200)); // past the assigned marks' delay
    expect(await callJson(`/v1/task/${id}`, 200, { token })).toMatchObject({ id, progress: 1 });
    expect(await rowsInD1([id])).toBe(0);

    agent.done(id, "ran", 200, { log: ["hello"] });
    expect(await (await call(`/v1/task/${id}/result?wait=5`, { token })).text()).toBe("ran");
    await recordsFlushed();
    expect(await rowsInD1([id])).toBe(0);
    expect(await usageRows(accountId)).toBe(0);
    expect(await callJson(`/v1/task/${id}`, 200, { token })).toMatchObject({ id, status: 200, progress: 100 });
    expect((await callJson(`/v1/task/${id}/log`, 200, { token })).log).toEqual(["hello"]);
  });

  it("has a row in D1 when issued before the shards count every issue, as before step 4", async () => {
    await shardsCountIssuesFrom(Date.now() + HOUR_MS, { accountDays: Date.now() + DAY_MS });
    const { token } = await newAccount();
    const id = await newTask(token, await deployedFunction(token));
    await recordsFlushed();
    expect(await rowsInD1([id])).toBe(1);
  });

  it("is held, readable and then recorded across a restart of its shard", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await newTask(token, fn);
    await shardStub(env, 0).resync(); // what a new instance does on its first request
    expect(await callJson(`/v1/task/${id}`, 200, { token })).toMatchObject({ id, progress: 0 });
    const agent = await FakeAgent.connect("rowless-restart");
    expect((await agent.next("task.assign")).taskId).toBe(id);
    agent.done(id, "after the restart");
    expect(await (await call(`/v1/task/${id}/result?wait=5`, { token })).text()).toBe("after the restart");
    await recordsFlushed();
    await shardStub(env, 0).resync();
    expect(await callJson(`/v1/task/${id}`, 200, { token })).toMatchObject({ id, status: 200, progress: 100 });
    expect(await rowsInD1([id])).toBe(0);
  });
});

describe("reads of rowless tasks", () => {
  it("answer every task route, the lists, the counts, usage and the console's pages, live and once only the shard's archive holds them", async () => {
    const { token, accountId, fn, ids } = await finishedTasks();
    expect(await rowsInD1(ids)).toBe(0);
    const live = await reads(token, ids, fn);
    // What D1's rows would have answered: five tasks (three of `fn`), one of them failed.
    expect((live.list as { id: string }[]).map((t) => t.id)).toEqual([...ids].reverse());
    expect((live.functionList as { id: string }[]).map((t) => t.id)).toEqual([ids[4], ids[3], ids[2], ids[0]]);
    expect(live.metrics).toEqual({ todaysTasks: 4, pendingTasks: 0, weekTasks: 4, completedTasks: 4 });
    expect(live.platform).toEqual({ completedTasks: 5, pendingTasks: 0 });
    expect(live.usage).toMatchObject({ invocations: 5, pending: 0 });
    expect(live[ids[3]!]).toMatchObject({ task: { status: 500 }, result: { status: 500, body: "broke" }, log: { log: ["line 3"] } });
    const days = await dailyTasks(bindings, openDb(bindings), accountId, 30);
    expect(days.total.at(-1)!.count).toBe(5);

    await onlyInShardArchive();
    expect(await reads(token, ids, fn)).toEqual(live);
    expect(await dailyTasks(bindings, openDb(bindings), accountId, 30)).toEqual(days);
    expect(await rowsInD1(ids)).toBe(0);
  });

  it("count beside tasks with rows in D1 (a deployment that switched layouts), each once", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await tasksRowless(false);
    const withRow = await newTask(token, fn);
    await tasksRowless(true);
    const withoutRow = await newTask(token, fn);
    await recordsFlushed();
    expect(await rowsInD1([withRow, withoutRow])).toBe(1);
    const pending = { todaysTasks: 2, pendingTasks: 2, weekTasks: 2, completedTasks: 0 };
    expect((await callJson(`/v1/function/${fn}`, 200, { token })).metrics).toEqual(pending);
    for (const id of [withRow, withoutRow]) await finishTask(id);
    expect((await callJson(`/v1/function/${fn}`, 200, { token })).metrics).toEqual({ ...pending, pendingTasks: 0, completedTasks: 2 });
    expect((await callJson("/v1/task/list", 200, { token })).map((t: { id: string }) => t.id)).toEqual([withoutRow, withRow]);
    expect(await callJson("/v1/usage", 200, { token })).toMatchObject({ invocations: 2, pending: 0 });
  });

  it("answer another account 404, live and archived", async () => {
    const { ids } = await finishedTasks();
    const stranger = await newAccount("stranger");
    const paths = [`/v1/task/${ids[0]}`, `/v1/task/${ids[0]}/result`, `/v1/task/${ids[0]}/log`];
    for (const path of paths) expect((await call(path, { token: stranger.token })).status).toBe(404);
    await onlyInShardArchive();
    for (const path of paths) expect((await call(path, { token: stranger.token })).status).toBe(404);
    expect(await callJson("/v1/task/list", 200, { token: stranger.token })).toEqual([]);
  });

  it("answer a creation sent again with the recorded task, creating and queueing nothing", async () => {
    const { token, accountId, fn, ids, agent } = await finishedTasks();
    const id = ids[0]!;
    const task = await callJson(`/v1/task/${id}`, 200, { token });
    const resend = () =>
      dispatcherFor(bindings, fn).createTask({
        id, accountId, functionId: fn, input: { method: "POST", query: {}, headers: {}, body: null }, staged: { id, input: "{}", inputKey: null }, now: Date.now(), mayExist: true,
      });
    expect(await resend()).toMatchObject({ task: { id, status: 200, finishedAt: expect.any(Number) }, finished: { id } });
    await onlyInShardArchive();
    expect(await resend()).toMatchObject({ task: { id, status: 200 }, finished: { id } });
    expect(await agent.none("task.assign", 300)).toBe(true);
    expect(await callJson(`/v1/task/${id}`, 200, { token })).toEqual(task);
  });
});

describe("DELETE /v1/function/<function_id> with rowless tasks", () => {
  it("ends the unfinished ones cancelled (410), recorded by the shard and metered nothing", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const ids = [await newTask(token, fn), await newTask(token, fn)];
    await expectNoContent(call(`/v1/function/${fn}`, { token, method: "DELETE" }));
    await recordsFlushed();
    for (const id of ids) expect(await callJson(`/v1/task/${id}`, 200, { token })).toMatchObject({ id, status: 410, progress: 100 });
    expect((await callJson(`/v1/task/list?functionId=${fn}`, 200, { token })).map((t: { id: string }) => t.id)).toEqual([...ids].reverse());
    expect(await callJson("/v1/usage", 200, { token })).toMatchObject({ invocations: 0, pending: 0 });
    expect(await rowsInD1(ids)).toBe(0);
    await onlyInShardArchive();
    for (const id of ids) expect(await callJson(`/v1/task/${id}`, 200, { token })).toMatchObject({ id, status: 410 });
  });
});

describe("triggers and dead letters of rowless tasks", () => {
  it("fire the next function's task from the shard's record of the parent", async () => {
    const agent = await FakeAgent.connect("rowless-chain");
    const { token } = await newAccount();
    const [a, b] = [await deployedFunction(token, { name: "a" }), await deployedFunction(token, { name: "b" })];
    await newTrigger(token, { functionId: a, nextId: b, includeResult: true });
    const parent = await newTask(token, a);
    expect((await agent.next("task.assign")).taskId).toBe(parent);
    agent.done(parent, '{"from":"a"}');
    const child = await agent.next("task.assign", 10_000);
    expect(child).toMatchObject({ functionId: b, input: { body: '{"from":"a"}' } });
    expect(await callJson(`/v1/task/${child.taskId}`, 200, { token })).toMatchObject({ parentTaskId: parent, functionId: b });
    expect(await rowsInD1([parent, child.taskId])).toBe(0);
  });

  it("send a task whose attempts ran out to the dead-letter function, built from the shard's record", async () => {
    const agent = await FakeAgent.connect("rowless-dead-letter");
    const { token } = await newAccount();
    const [fn, dl] = [await deployedFunction(token), await deployedFunction(token)];
    await expectNoContent(call(`/v1/function/${fn}/retry`, { token, method: "PUT", json: { maxAttempts: 2, backoffSeconds: 1, deadLetterFunctionId: dl } }));
    const id = await newTask(token, fn);
    await agent.next("task.assign");
    agent.done(id, "boom", 500, { log: ["no stock"] });
    await agent.next("task.assign", 4_000);
    agent.done(id, "still boom", 502, { log: ["still no stock"] });
    const letter = await agent.next("task.assign", 4_000);
    expect(letter.functionId).toBe(dl);
    expect(JSON.parse(letter.input!.body!)).toMatchObject({ taskId: id, status: 502, attempts: 2, logTail: "--- attempt 1 ---\nno stock\n--- attempt 2 ---\nstill no stock" });
    expect(await callJson(`/v1/task/${id}`, 200, { token })).toMatchObject({ status: 502, attempts: 2 });
    expect(await callJson("/v1/usage", 200, { token })).toMatchObject({ invocations: 2 });
    expect(await rowsInD1([id, letter.taskId])).toBe(0);
  });
});

describe("the console's chart of rowless tasks", () => {
  it("counts each function's tasks on their day of issue", async () => {
    const { token, accountId } = await newAccount();
    const [fn, other] = [await deployedFunction(token), await deployedFunction(token)];
    for (const f of [fn, fn, other]) await newTask(token, f);
    const { byFunction, total } = await dailyTasks(bindings, openDb(bindings), accountId, 7);
    expect(total.at(-1)).toEqual({ day: new Date(startOfUtcDay(Date.now())).toISOString().slice(0, 10), count: 3 });
    expect(byFunction.get(fn)!.at(-1)).toBe(2);
    expect(byFunction.get(other)!.at(-1)).toBe(1);
  });
});
