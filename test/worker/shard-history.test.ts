import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { shardStub } from "../../worker/dispatch/client.js";
import type { Dispatcher } from "../../worker/dispatch/durable-object.js";
import { rowOf } from "../../worker/db/client.js";
import type { TaskRow } from "../../worker/db/rows.js";
import { tasks } from "../../worker/db/schema/tasks.js";
import { INLINE_PAYLOAD_CHARS } from "../../worker/shard-history/compact-record.js";
import { FinishedRecords } from "../../worker/shard-history/finished-records.js";
import { idBytes, idFloorAt, idText } from "../../worker/shard-history/id-bytes.js";
import { newId } from "../../worker/lib/ids.js";
import { HOUR_MS } from "../../worker/lib/time.js";
import { call, callJson, clearQueue, deployedFunction, newAccount, newEndpoint, recordsFlushed } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";

/**
 * Step 1 of the shard-resident history (docs/dispatch.md): a shard keeps the compact record of each
 * task it finishes, in its own SQLite, for the window. Nothing answers from it yet; what it must be
 * is D1's row, field for field, but for payloads too large to keep inline, which it names.
 */

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const kept = (taskId: string) => runInDurableObject(shardStub(env, 0), (o) => (o as unknown as Dispatcher).history.get(taskId));
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
      expect(await kept(id)).toEqual({ row, far: [] });
    }
  });

  it("leaves payloads over the inline size out and names them, keeping the rest", async () => {
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
    expect(await kept(id)).toEqual({ row: { ...row, input: null, resultBody: null, log: null }, far: ["input", "resultBody", "log"] });
  });

  it("is kept for a task ended in the shard before any node took it", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = (await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: {} })).id;
    const res = await call(`/v1/function/${fn}`, { method: "DELETE", token });
    expect(res.status).toBeLessThan(300);
    const row = await eventually(async () => {
      const r = await d1Row(id);
      return r.finishedAt != null && r;
    });
    expect(await kept(id)).toEqual({ row, far: [] });
  });

  it("is not kept while the task is unfinished", async () => {
    const before = await keptCount();
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = (await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: {} })).id;
    expect((await d1Row(id)).finishedAt).toBeNull();
    expect(await kept(id)).toBeUndefined();
    expect(await keptCount()).toBe(before);
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
      expect(records.prune(now)).toBe(2);
      expect(records.get(old.id)).toBeUndefined();
      expect(records.get(oddId.id)).toBeUndefined();
      expect(records.get(late.id)?.row).toEqual(late);
      expect(records.get(recent.id)?.row).toEqual(recent);
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
