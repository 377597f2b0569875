import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, finishTaskInD1, holdRecords, newAccount, newTrigger, flushedDb, recordsFlushed } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";
import { MAX_CHAIN_TASKS } from "../../worker/chains/limits.js";
import { newTaskId, shardStub } from "../../worker/dispatch/client.js";

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const record = (token: string, id: string) => callJson(`/v1/task/${id}`, 200, { token });

describe("triggers firing after a task", () => {
  it("chains A → B → C, passing each result as the next body", async () => {
    const agent = await FakeAgent.connect("chain");
    const { token } = await newAccount();
    const [a, b, c] = [await deployedFunction(token, { name: "a" }), await deployedFunction(token, { name: "b" }), await deployedFunction(token, { name: "c" })];
    const ab = await newTrigger(token, { functionId: a, nextId: b, includeResult: true });
    const bc = await newTrigger(token, { functionId: b, nextId: c, includeResult: true });
    const { id: first } = await callJson(`/v1/task/${a}`, 201, { token, method: "POST" });
    expect((await agent.next("task.assign")).taskId).toBe(first);
    agent.done(first, JSON.stringify({ step: "a" }));
    const second = await agent.next("task.assign");
    expect(second).toMatchObject({ functionId: b, input: { body: '{"step":"a"}', headers: { "content-type": "application/json" } } });
    expect(await record(token, second.taskId)).toMatchObject({ triggerId: ab, parentTaskId: first });
    agent.done(second.taskId, "plain text from b");
    const third = await agent.next("task.assign");
    // A result that is not JSON arrives as a JSON string.
    expect(third).toMatchObject({ functionId: c, input: { body: '"plain text from b"' } });
    expect(await record(token, third.taskId)).toMatchObject({ triggerId: bc, parentTaskId: second.taskId });
    await agent.close();
  });

  it("hands a binary result on byte for byte, with its Content-Type", async () => {
    const agent = await FakeAgent.connect("binary-chain");
    const { token } = await newAccount();
    const [a, b] = [await deployedFunction(token, { name: "a" }), await deployedFunction(token, { name: "b" })];
    await newTrigger(token, { functionId: a, nextId: b, includeResult: true });
    const { id: first } = await callJson(`/v1/task/${a}`, 201, { token, method: "POST" });
    expect((await agent.next("task.assign")).taskId).toBe(first);
    const png = "\x89PNG\r\n\x1a\n\x00\xff\xfe";
    agent.done(first, png, 200, { headers: { "content-type": "image/png" } });
    const second = await agent.next("task.assign");
    expect(second).toMatchObject({ functionId: b, input: { body: btoa(png), bodyEncoding: "base64", headers: { "content-type": "image/png" } } });
    await agent.close();
  });

  it("does not fire when the status does not match", async () => {
    const agent = await FakeAgent.connect("nomatch");
    const { token } = await newAccount();
    const a = await deployedFunction(token);
    const b = await deployedFunction(token);
    await newTrigger(token, { functionId: a, nextId: b, includeResult: false, status: 200 });
    const fired = await newTrigger(token, { functionId: a, nextId: b, includeResult: false, status: 500 });
    const { id } = await callJson(`/v1/task/${a}`, 201, { token, method: "POST" });
    await agent.next("task.assign");
    agent.done(id, "crash", 500);
    const next = await agent.next("task.assign");
    expect((await record(token, next.taskId)).triggerId).toBe(fired);
    expect(await agent.none("task.assign")).toBe(true);
    await agent.close();
  });

  it("passes no body with includeResult false", async () => {
    const agent = await FakeAgent.connect("nobody");
    const { token } = await newAccount();
    const a = await deployedFunction(token);
    const b = await deployedFunction(token);
    await newTrigger(token, { functionId: a, nextId: b, includeResult: false });
    const { id } = await callJson(`/v1/task/${a}`, 201, { token, method: "POST" });
    await agent.next("task.assign");
    agent.done(id, '{"secret":1}');
    expect((await agent.next("task.assign")).input).toMatchObject({ body: null });
    await agent.close();
  });

  it("stops a self-trigger after 10 hops", async () => {
    const agent = await FakeAgent.connect("loop", { slots: 1 });
    const { token } = await newAccount();
    const a = await deployedFunction(token);
    await newTrigger(token, { functionId: a, nextId: a, includeResult: true });
    await callJson(`/v1/task/${a}`, 201, { token, method: "POST" });
    const ids: string[] = [];
    for (let hop = 0; hop <= 10; hop++) {
      const t = await agent.next("task.assign");
      ids.push(t.taskId);
      agent.done(t.taskId, JSON.stringify({ hop }));
    }
    expect(await agent.none("task.assign", 500)).toBe(true);
    const list = await callJson(`/v1/task/list?functionId=${a}`, 200, { token });
    expect(list).toHaveLength(11);
    await agent.close();
  });

  it(`issues at most ${MAX_CHAIN_TASKS} tasks a chain, however wide it fans out, and says so in the parents' logs`, async () => {
    const agent = await FakeAgent.connect("fanout", { slots: 1000 });
    const { token } = await newAccount();
    const a = await deployedFunction(token);
    // Ten self-triggers: 10^hops tasks without a limit.
    for (let i = 0; i < 10; i++) await newTrigger(token, { functionId: a, nextId: a, includeResult: false });
    const { id: root } = await callJson(`/v1/task/${a}`, 201, { token, method: "POST" });
    let ran = 0;
    for (;;) {
      const t = await agent.next("task.assign", 1000).catch(() => undefined);
      if (!t) break;
      agent.done(t.taskId, "ok");
      ran++;
    }
    expect(ran).toBe(1 + MAX_CHAIN_TASKS);
    const counted = await (await flushedDb()).prepare("select count(*) as n from tasks where chain_id = ?").bind(root).first<{ n: number }>();
    expect(counted!.n).toBe(MAX_CHAIN_TASKS);
    const { n: cutParents } = (await (await flushedDb()).prepare("select count(*) as n from tasks where chain_id = ? and log like '%reached its limit%'").bind(root).first<{ n: number }>())!;
    expect(cutParents).toBeGreaterThan(0);
    const [note] = (await (await flushedDb()).prepare("select log from tasks where chain_id = ? and log like '%reached its limit%' limit 1").bind(root).all<{ log: string }>()).results;
    expect(JSON.parse(note!.log)).toContain(`[dispatcher] 10 trigger(s) not fired: the chain of task ${root} reached its limit of ${MAX_CHAIN_TASKS} tasks`);
  });

  it("fires the triggers of many tasks finishing together, once for each", async () => {
    const agent = await FakeAgent.connect("together", { slots: 100 });
    const { token } = await newAccount();
    const a = await deployedFunction(token);
    const b = await deployedFunction(token);
    await newTrigger(token, { functionId: a, nextId: b, includeResult: true });
    const firsts = await Promise.all(Array.from({ length: 30 }, () => callJson(`/v1/task/${a}`, 201, { token, method: "POST" }).then((r) => r.id as string)));
    for (let i = 0; i < 30; i++) await agent.next("task.assign");
    for (const id of firsts) agent.done(id, JSON.stringify({ from: id }));
    const parents = new Set<string>();
    for (let i = 0; i < 30; i++) {
      const t = await agent.next("task.assign");
      expect(t.functionId).toBe(b);
      parents.add(JSON.parse(t.input!.body!).from);
    }
    expect([...parents].sort()).toEqual([...firsts].sort());
    expect(await agent.none("task.assign")).toBe(true);
  });

  it("holds a triggered task of a paused function until it is resumed", async () => {
    const agent = await FakeAgent.connect("pausednext");
    const { token } = await newAccount();
    const a = await deployedFunction(token);
    const b = await deployedFunction(token);
    await newTrigger(token, { functionId: a, nextId: b, includeResult: false });
    await callJson(`/v1/function/${b}/togglePause`, 204, { token, method: "POST" });
    const { id } = await callJson(`/v1/task/${a}`, 201, { token, method: "POST" });
    await agent.next("task.assign");
    agent.done(id, "ok");
    expect(await agent.none("task.assign", 500)).toBe(true);
    expect((await callJson(`/v1/function/${b}`, 200, { token })).metrics.pendingTasks).toBe(1);
    await callJson(`/v1/function/${b}/togglePause`, 204, { token, method: "POST" });
    expect((await agent.next("task.assign")).functionId).toBe(b);
    await agent.close();
  });

  it("stops firing once either function is deleted (the trigger goes with it)", async () => {
    const agent = await FakeAgent.connect("deleted");
    const { token } = await newAccount();
    const a = await deployedFunction(token);
    const b = await deployedFunction(token);
    const t = await newTrigger(token, { functionId: a, nextId: b, includeResult: false });
    await callJson(`/v1/function/${b}`, 204, { token, method: "DELETE" });
    expect((await call(`/v1/trigger/${t}`, { token })).status).toBe(404);
    const { id } = await callJson(`/v1/task/${a}`, 201, { token, method: "POST" });
    await agent.next("task.assign");
    agent.done(id, "ok");
    expect(await agent.none("task.assign", 500)).toBe(true);
    await agent.close();
  });
});

/** The dispatcher's record of a finished task whose triggers are still to fire, as a commit leaves it. */
async function leaveDue(parent: { id: string; accountId: string; functionId: string; status: number; body: string }, plan: Record<string, string>) {
  const stored = { id: parent.id, accountId: parent.accountId, functionId: parent.functionId, status: parent.status, hop: 0, chainId: null, resultBody: parent.body, resultKey: null, resultHeaders: {} };
  await runInDurableObject(shardStub(env, 0), (_o, state) => {
    state.storage.sql.exec("insert or replace into chain_due (parent_id, parent, plan) values (?, ?, ?)", parent.id, JSON.stringify(stored), JSON.stringify(plan));
  });
}

const dueCount = () => runInDurableObject(shardStub(env, 0), (_o, state) => state.storage.sql.exec<{ n: number }>("select count(*) as n from chain_due").one().n);

async function noneDue() {
  for (let i = 0; i < 50 && (await dueCount()) > 0; i++) await new Promise((r) => setTimeout(r, 20));
  return (await dueCount()) === 0;
}

const tasksOf = async (functionId: string) => (await (await flushedDb()).prepare("select id, finished_at from tasks where function_id = ?").bind(functionId).all<{ id: string; finished_at: number | null }>()).results;

/** An agent, functions a → b joined by a trigger, and a task of a the agent has been assigned. */
async function chainStarted(node: string, includeResult: boolean) {
  const agent = await FakeAgent.connect(node);
  const { token, accountId } = await newAccount();
  const [a, b] = [await deployedFunction(token, { name: "a" }), await deployedFunction(token, { name: "b" })];
  const trigger = await newTrigger(token, { functionId: a, nextId: b, includeResult });
  const { id: parent } = await callJson(`/v1/task/${a}`, 201, { token, method: "POST" });
  expect((await agent.next("task.assign")).taskId).toBe(parent);
  return { agent, token, accountId, a, b, trigger, parent };
}

describe("triggers firing across a restart of the dispatcher", () => {
  it("fires, in the next instance, the triggers of a task whose outcome was committed before they fired", async () => {
    const { agent, token, accountId, a, b, trigger, parent } = await chainStarted("restart-chain", true);
    // The parent is recorded finished in D1 and the instance that committed it went before firing.
    await finishTaskInD1(parent, { body: '{"from":"a"}' });
    const planned = newTaskId(env, b);
    await leaveDue({ id: parent, accountId, functionId: a, status: 200, body: '{"from":"a"}' }, { [trigger]: planned });

    await shardStub(env, 0).resync(); // what a new instance does on its first request
    const next = await agent.next("task.assign");
    expect(next).toMatchObject({ taskId: planned, functionId: b, input: { body: '{"from":"a"}' } });
    expect(await record(token, planned)).toMatchObject({ triggerId: trigger, parentTaskId: parent });
    expect(await noneDue()).toBe(true);
    await agent.close();
  });

  it("creates nothing twice when the firing runs again: its shard holds the task, or D1 has it once the shard let it go", async () => {
    const { agent, token, accountId, a, b, trigger, parent } = await chainStarted("refire-chain", false);
    agent.done(parent, "ok");
    const child = (await agent.next("task.assign")).taskId;
    expect(await noneDue()).toBe(true);
    const due = { id: parent, accountId, functionId: a, status: 200, body: "ok" };

    // Run again while the task is running: its shard has it, and queues it no second time.
    await leaveDue(due, { [trigger]: child });
    await shardStub(env, 0).resync();
    expect(await noneDue()).toBe(true);
    expect(await agent.none("task.assign", 500)).toBe(true);

    // Finished and recorded, the shard holds it no more: run again, the firing finds it in D1.
    agent.done(child, "done");
    expect((await call(`/v1/task/${child}/result?wait=5`, { token })).status).toBe(200);
    await recordsFlushed();
    expect(await runInDurableObject(shardStub(env, 0), (_o, state) => state.storage.sql.exec("select 1 from held_task where id = ?", child).toArray().length)).toBe(0);
    await leaveDue(due, { [trigger]: child });
    await shardStub(env, 0).resync();
    expect(await noneDue()).toBe(true);
    expect(await agent.none("task.assign", 500)).toBe(true);
    expect(await tasksOf(b)).toEqual([{ id: child, finished_at: expect.any(Number) }]);
    await agent.close();
  });
});

describe("a triggered task's life in its function's shard", () => {
  it("is created in the shard, assigned and readable, with its parent and trigger, before D1 has its row", async () => {
    const { agent, token, accountId, a, b, trigger, parent } = await chainStarted("held-chain", false);
    // Recorded in D1 alone, as before the shards held tasks: nothing fires until the test's firing.
    await finishTaskInD1(parent, { body: "ok" });
    const planned = newTaskId(env, b);
    await holdRecords(true);
    try {
      await leaveDue({ id: parent, accountId, functionId: a, status: 200, body: "ok" }, { [trigger]: planned });
      await shardStub(env, 0).resync();
      expect((await agent.next("task.assign")).taskId).toBe(planned);
      expect(await env.DB.prepare("select id from tasks where id = ?").bind(planned).first()).toBeNull();
      expect(await record(token, planned)).toMatchObject({ id: planned, triggerId: trigger, parentTaskId: parent, functionId: b });
      const listed = await callJson(`/v1/task/list?functionId=${b}`, 200, { token });
      expect(JSON.stringify(listed)).toContain(planned);
    } finally {
      await holdRecords(false);
    }
    expect(await env.DB.prepare("select parent_task_id as p from tasks where id = ?").bind(planned).first()).toEqual({ p: parent });
    await agent.close();
  });
});
