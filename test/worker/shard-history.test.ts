import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { shardStub } from "../../worker/dispatch/client.js";
import type { Dispatcher } from "../../worker/dispatch/durable-object.js";
import { rowOf } from "../../worker/db/client.js";
import type { TaskRow } from "../../worker/db/rows.js";
import { tasks } from "../../worker/db/schema/tasks.js";
import { ROLL_MS } from "../../worker/shard-history/archive.js";
import { INLINE_PAYLOAD_CHARS } from "../../worker/shard-history/compact-record.js";
import { FinishedRecords } from "../../worker/shard-history/finished-records.js";
import { idBytes, idFloorAt, idText } from "../../worker/shard-history/id-bytes.js";
import { newId } from "../../worker/lib/ids.js";
import { HOUR_MS } from "../../worker/lib/time.js";
import { call, callJson, clearQueue, consolePage, deployedFunction, newAccount, newEndpoint, recordsFlushed } from "./helpers.js";
import { allPages } from "./task-reads.js";
import { eventually, FakeAgent } from "./fake-agent.js";

/**
 * Step 1 of the shard-resident history (docs/dispatch.md): a shard keeps the compact record of each
 * task it finishes, in its own SQLite, for the window. Nothing answers from it yet; what it must be
 * is D1's row, field for field, but for payloads too large to keep inline, which it names.
 */

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const keptRecord = (taskId: string) => runInDurableObject(shardStub(env, 0), (o) => (o as unknown as Dispatcher).history.get(taskId, Date.now()));
const keptCount = () => runInDurableObject(shardStub(env, 0), (o) => (o as unknown as Dispatcher).history.count());

async function d1Row(taskId: string): Promise<TaskRow> {
  await recordsFlushed();
  const raw = await env.DB.prepare("select * from tasks where id = ?").bind(taskId).first<Record<string, unknown>>();
  expect(raw).not.toBeNull();
  return rowOf(tasks, raw!);
}

async function finished(token: string, taskId: string) {
  const res = await call(`/v1/task/${taskId}/result?wait=5`, { token });
  await res.arrayBuffer();
  return eventually(async () => (await d1Row(taskId)).finishedAt != null);
}

describe("a shard's record of a finished task", () => {
  it("is D1's row, every column, for tasks issued by the API and by a public endpoint", async () => {
    const agent = await FakeAgent.connect("history-node");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const ep = await newEndpoint(token, fn);
    const viaApi = (await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: { hello: "world" } })).id;
    expect((await agent.next("task.assign")).taskId).toBe(viaApi);
    agent.done(viaApi, "hi there", 201, { log: ["one", "two"], durationMs: 7 });
    const viaGc = (await callJson<{ id: string }>(`/gc/${ep}?city=Paris`, 201, { token: null, json: { via: "gc" } })).id;
    expect((await agent.next("task.assign")).taskId).toBe(viaGc);
    agent.done(viaGc, "from the door", 200);
    for (const id of [viaApi, viaGc]) {
      await finished(token, id);
      const row = await d1Row(id);
      expect(await keptRecord(id)).toEqual({ row, far: [] });
    }
  });

  it("is D1's row, every column, for a task retried after running past its timeout, and for one that timed out for good", async () => {
    const agent = await FakeAgent.connect("history-retried");
    const { token } = await newAccount();
    const retried = await deployedFunction(token);
    await callJson(`/v1/function/${retried}/retry`, 204, { token, method: "PUT", json: { maxAttempts: 2, backoffSeconds: 1, deadLetterFunctionId: null } });
    const once = await deployedFunction(token, { name: "once" });
    const overdue = async (id: string) => {
      expect((await agent.next("task.assign")).taskId).toBe(id);
      await runInDurableObject(shardStub(env, 0), (_o, state) => state.storage.sql.exec("update work set deadline = 1 where id = ?", id));
      await shardStub(env, 0).resync();
      await runDurableObjectAlarm(shardStub(env, 0));
      expect((await agent.next("task.cancel")).taskId).toBe(id);
    };
    const a = (await callJson<{ id: string }>(`/v1/task/${retried}`, 201, { token, json: { n: 1 } })).id;
    await overdue(a);
    expect((await agent.next("task.assign", 4_000)).taskId).toBe(a);
    agent.done(a, "in time now", 200, { log: ["second"], durationMs: 4 });
    const b = (await callJson<{ id: string }>(`/v1/task/${once}`, 201, { token, json: { n: 2 } })).id;
    await overdue(b);
    for (const id of [a, b]) {
      await finished(token, id);
      const row = await d1Row(id);
      expect(await keptRecord(id)).toEqual({ row, far: [] });
    }
    expect((await d1Row(a)).attempts).toBe(2);
    expect((await d1Row(b)).status).toBe(504);
  });

  it("keeps payloads over the inline size until the shard's archive has them (shard-archive.test.ts: then it names them)", async () => {
    const agent = await FakeAgent.connect("history-big");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const big = "x".repeat(INLINE_PAYLOAD_CHARS + 1);
    const id = (await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: { big } })).id;
    await agent.next("task.assign");
    agent.done(id, big, 200, { log: [big] });
    await finished(token, id);
    const row = await d1Row(id);
    expect(row.resultBody!.length).toBeGreaterThan(INLINE_PAYLOAD_CHARS);
    expect(await keptRecord(id)).toEqual({ row, far: [] });
  });

  it("is not kept for a task its function's deletion cancelled, which D1 may have ended first at its own time", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = (await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: {} })).id;
    const res = await call(`/v1/function/${fn}`, { method: "DELETE", token });
    expect(res.status).toBeLessThan(300);
    const row = await eventually(async () => {
      const r = await d1Row(id);
      return r.finishedAt != null && r;
    });
    expect(await keptRecord(id)).toBeUndefined();
    expect(await callJson(`/v1/task/${id}`, 200, { token })).toMatchObject({ status: row.status, finished: String(Math.floor(row.finishedAt! / 1000)) });
  });

  it("is not kept while the task is unfinished", async () => {
    const before = await keptCount();
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = (await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: {} })).id;
    expect((await d1Row(id)).finishedAt).toBeNull();
    expect(await keptRecord(id)).toBeUndefined();
    expect(await keptCount()).toBe(before);
  });
});

/** Edits D1's copy of a finished task behind the shard's back: an answer that shows the edit came from D1. */
const editInD1 = (taskId: string) =>
  env.DB.prepare("update tasks set node = 'edited-in-d1', result_body = 'edited in D1', log = '[\"edited in D1\"]' where id = ?").bind(taskId).run();

async function finishedTask(o: { body?: string } = {}) {
  const agent = await FakeAgent.connect("history-reads");
  const account = await newAccount();
  const fn = await deployedFunction(account.token);
  // Through a public endpoint, so that its public result can be read too.
  const ep = await newEndpoint(account.token, fn);
  const id = (await callJson<{ id: string }>(`/gc/${ep}`, 201, { token: null, json: {} })).id;
  await agent.next("task.assign");
  agent.done(id, o.body ?? "from the agent", 200, { log: ["from the agent"] });
  await finished(account.token, id);
  await editInD1(id);
  return { ...account, id };
}

const answers = async (token: string, id: string) => ({
  node: (await callJson<{ node: string }>(`/v1/task/${id}`, 200, { token })).node,
  result: await (await call(`/v1/task/${id}/result`, { token })).text(),
  waited: await (await call(`/v1/task/${id}/result?wait=2`, { token })).text(),
  log: (await callJson<{ log: string[] }>(`/v1/task/${id}/log`, 200, { token })).log,
  publicResult: await (await call(`/gc/${id}/result`)).text(),
});

describe("GET /v1/task/<id>, its result and its log, for a task its shard keeps", () => {
  it("answer from the shard's record, without D1", async () => {
    const { token, id } = await finishedTask();
    expect(await answers(token, id)).toEqual({
      node: "history-reads", result: "from the agent", waited: "from the agent", log: ["from the agent"], publicResult: "from the agent",
    });
  });

  it("answer another account 404, as D1 would", async () => {
    const { id } = await finishedTask();
    const other = await newAccount("other");
    for (const path of [`/v1/task/${id}`, `/v1/task/${id}/result`, `/v1/task/${id}/log`]) expect((await call(path, { token: other.token })).status).toBe(404);
  });

  it("answer from the shard for a record with a large payload until it is archived, then from D1 once it left the payload out", async () => {
    const body = "y".repeat(INLINE_PAYLOAD_CHARS + 1);
    const { token, id } = await finishedTask({ body });
    expect(await answers(token, id)).toMatchObject({ node: "history-reads", result: body });
    await runInDurableObject(shardStub(env, 0), (o) => (o as unknown as Dispatcher).archive.roll(Date.now() + ROLL_MS + 1));
    expect(await answers(token, id)).toMatchObject({ node: "edited-in-d1", result: "edited in D1", log: ["edited in D1"] });
  });

  it("answer from D1 once the record finished before the window, pruned or not", async () => {
    const { token, id } = await finishedTask();
    await runInDurableObject(shardStub(env, 0), (_o, state) => {
      state.storage.sql.exec("update shard_record set finished_at = finished_at - ?", 2 * HOUR_MS);
    });
    expect(await answers(token, id)).toMatchObject({ node: "edited-in-d1", result: "edited in D1", log: ["edited in D1"] });
  });
});

describe("the task lists, for tasks their shard keeps", () => {
  it("list them from the shard's records alone, every page, by function and on the console's runs page, once D1 has no row of them", async () => {
    const agent = await FakeAgent.connect("history-lists");
    const { token, accountId } = await newAccount();
    const fns = [await deployedFunction(token), await deployedFunction(token)];
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const id = (await callJson<{ id: string }>(`/v1/task/${fns[i % 2]}`, 201, { token, json: { i } })).id;
      await agent.next("task.assign");
      agent.done(id, `answer ${i}`, 200);
      await finished(token, id);
      ids.push(id);
    }
    const lists = async () => ({
      list: await callJson("/v1/task/list", 200, { token }),
      functionList: await callJson(`/v1/task/list?functionId=${fns[0]}`, 200, { token }),
      pages: await allPages(token, 2),
      functionPages: await allPages(token, 1, fns[1]),
      consoleRuns: await consolePage("/console/tasks", token),
    });
    const before = await lists();
    expect((before.list as unknown[]).length).toBe(5);
    // Not archived yet (no roll): the shard's kept records are the only copy left.
    await env.DB.prepare(`delete from tasks where id in (${ids.map(() => "?").join(", ")})`).bind(...ids).run();
    expect(await lists()).toEqual(before);
    // The shard's own page: another account asking for this account's function has none of it.
    await runInDurableObject(shardStub(env, 0), (o) => {
      const records = (o as unknown as Dispatcher).history;
      expect(records.page({ accountId, functionId: fns[0], limit: 10 }).map((r) => r.id)).toEqual([ids[4], ids[2], ids[0]]);
      expect(records.page({ accountId: newId(), functionId: fns[0], limit: 10 })).toEqual([]);
      expect(records.page({ accountId: newId(), limit: 10 })).toEqual([]);
    });
  });
});

describe("the window of a shard's records", () => {
  it("drops records that finished before it, and keeps those issued before it that finished inside", async () => {
    await runInDurableObject(shardStub(env, 0), (_o, state) => {
      const records = new FinishedRecords(state.storage.sql, HOUR_MS);
      const now = Date.now() + 10 * HOUR_MS;
      const row = (issuedAt: number, finishedAt: number): TaskRow => ({ ...SAMPLE, id: newId(issuedAt), issuedAt, finishedAt });
      const old = row(now - 3 * HOUR_MS, now - 3 * HOUR_MS + 1_000);
      const late = row(now - 3 * HOUR_MS, now - HOUR_MS / 2);
      const recent = row(now - HOUR_MS / 4, now - HOUR_MS / 4 + 1_000);
      const oddId = { ...row(now - 3 * HOUR_MS, now - 2 * HOUR_MS), id: "legacy-7" };
      records.keep([old, late, recent, oddId], now - 5 * HOUR_MS);
      // Not before the shard's archive has them and D1 was asked to let them go (shard-archive.test.ts).
      expect(records.prune(now)).toBe(0);
      records.archived([old, late, recent, oddId].map((r) => r.id), 1);
      expect(records.prune(now)).toBe(0);
      records.released([old, late, recent, oddId].map((r) => r.id));
      expect(records.prune(now)).toBe(2);
      expect(records.get(old.id, now)).toBeUndefined();
      expect(records.get(oddId.id, now)).toBeUndefined();
      expect(records.get(late.id, now)?.row).toEqual(late);
      expect(records.get(recent.id, now)?.row).toEqual(recent);
      state.storage.sql.exec("delete from shard_record");
    });
  });
});

describe("packed ids", () => {
  it("round-trip, and sort as their text does", () => {
    const ids = Array.from({ length: 500 }, (_, i) => newId(Date.now() - i * 7_919_113));
    for (const id of ids) expect(idText(idBytes(id)!)).toBe(id);
    const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, "0")).join("");
    expect([...ids].sort().map((id) => hex(idBytes(id)!))).toEqual(ids.map((id) => hex(idBytes(id)!)).sort());
    expect(hex(idFloorAt(1_700_000_000_000)) <= hex(idBytes(newId(1_700_000_000_000))!)).toBe(true);
    expect(hex(idFloorAt(1_700_000_000_001)) > hex(idBytes(newId(1_700_000_000_000))!)).toBe(true);
  });

  it("leave text of any other shape as text", () => {
    for (const text of ["legacy-7", "0".repeat(29), "0".repeat(31), "ILOU".padEnd(30, "0"), "Z".repeat(30)]) expect(idBytes(text)).toBeUndefined();
  });
});

const SAMPLE: TaskRow = {
  id: "", accountId: newId(), functionId: newId(), lang: "py", buildId: newId(), endpointId: null, triggerId: null, parentTaskId: null,
  chainId: null, hop: 0, issuedAt: 0, assignedAt: 5, finishedAt: 0, progress: 100, status: 200, node: "node-1", timeout: 30,
  cpuCount: 0.5, memSize: 128, privileged: false, egress: "none", networkLatency: 3, runtime: "runsc", input: '{"n":1}', inputKey: null,
  resultStatus: 200, resultHeaders: { "content-type": "text/plain" }, resultBody: "hi", resultKey: null, log: ["a"], logKey: null,
  durationMs: 4, attempts: 1, purgedAt: null, scheduledId: null,
};
