import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { allShards, dispatcherFor, shardStub } from "../../worker/dispatch/client.js";
import type { Dispatcher } from "../../worker/dispatch/durable-object.js";
import type { Bindings } from "../../worker/env.js";
import { ROLL_MS } from "../../worker/shard-history/archive.js";
import { releaseFromD1 } from "../../worker/shard-history/release.js";
import { call, callJson, clearQueue, deployedFunction, newAccount, newEndpoint, recordsFlushed, shardsCountIssuesFrom } from "./helpers.js";
import { dailyTasks } from "../../worker/console/queries.js";
import { chainTasks } from "../../worker/task-history/counts.js";
import { openDb } from "../../worker/db/client.js";
import { HOUR_MS } from "../../worker/lib/time.js";
import { eventually, FakeAgent } from "./fake-agent.js";
import { allPages, reads } from "./task-reads.js";

/**
 * Reads of records that only a shard's archive holds (step 5, docs/dispatch.md): D1 has neither
 * the row nor an archived chunk of them, and the shard no longer keeps them. Every read route must
 * answer as it did while D1 had them. The records leave here as the shard's release at the end of
 * the window will take them: archived by the shard first, then gone from D1 and from the shard's
 * kept records.
 */

const bindings = env as unknown as Bindings;

beforeEach(clearQueue);
// The shard's storage outlives a test: each starts with no kept records and no archive.
beforeEach(() =>
  runInDurableObject(shardStub(env, 0), (_o, state) => {
    for (const table of ["shard_record", "shard_chunk", "shard_chunk_member"]) state.storage.sql.exec(`delete from ${table}`);
  }),
);
afterEach(() => FakeAgent.closeAll());

/** The shards count issues since before these tests' tasks: the release takes rows of tasks issued since. */
beforeEach(() => shardsCountIssuesFrom(Date.now() - HOUR_MS));

const inD1 = async (ids: string[]) =>
  Number(await env.DB.prepare("select count(*) as n from tasks where id in (select value from json_each(?))").bind(JSON.stringify(ids)).first("n"));

/** Every shard's turn once its records have waited: archived, released from D1; then the shards' kept records go too. */
async function onlyInShardArchives(ids: string[]) {
  await recordsFlushed();
  for (let shard = 0; shard < allShards(bindings).length; shard++)
    await runInDurableObject(shardStub(env, shard), async (o, state) => {
      const d = o as unknown as Dispatcher;
      while ((await d.archive.run(Date.now() + ROLL_MS + 1)).archived);
      state.storage.sql.exec("delete from shard_record");
    });
  expect(await inD1(ids)).toBe(0);
}

/** Finished tasks of two functions, through the API and a public endpoint (with an Idempotency-Key), answers and logs of each kind. */
async function finishedTasks() {
  const agent = await FakeAgent.connect("archive-reads");
  const { token, accountId } = await newAccount();
  const fn = await deployedFunction(token);
  const other = await deployedFunction(token);
  const ep = await newEndpoint(token, fn);
  const ids: string[] = [];
  for (const [i, f] of [fn, other, fn, fn, other].entries()) ids.push((await callJson<{ id: string }>(`/v1/task/${f}`, 201, { token, json: { n: i } })).id);
  const keyed = { method: "POST", token: null, headers: { "Idempotency-Key": `key-${accountId}` }, json: { via: "gc" } };
  const viaGc = await call(`/gc/${ep}`, keyed);
  expect(viaGc.status).toBe(201);
  ids.push(((await viaGc.json()) as { id: string }).id);
  for (let i = 0; i < ids.length; i++) {
    const id = (await agent.next("task.assign")).taskId;
    const n = ids.indexOf(id);
    agent.done(id, n === 3 ? "broke" : `{"n":${n}}`, n === 3 ? 500 : 200, { headers: { "content-type": n === 3 ? "text/plain" : "application/json" }, log: [`line ${n}`] });
  }
  await eventually(async () => {
    await recordsFlushed();
    const { n } = (await env.DB.prepare("select count(*) as n from tasks where account_id = ? and finished_at is not null").bind(accountId).first<{ n: number }>())!;
    return n === ids.length;
  });
  return { token, accountId, fn, other, ep, ids, keyed, gcId: ids.at(-1)! };
}

const replayed = async (ep: string, keyed: Record<string, unknown>) => {
  const res = await call(`/gc/${ep}`, keyed);
  return { status: res.status, body: await res.text() };
};

describe("reads of records only a shard's archive holds", () => {
  it("answer every task route, the lists, the counts, usage and the console's pages as they did from D1", async () => {
    const { token, accountId, fn, ids } = await finishedTasks();
    const before = await reads(token, ids, fn);
    const daysBefore = await dailyTasks(bindings, openDb(bindings), accountId, 30);
    await onlyInShardArchives(ids);
    expect(await reads(token, ids, fn)).toEqual(before);
    expect(await dailyTasks(bindings, openDb(bindings), accountId, 30)).toEqual(daysBefore);
  });

  it("answer another account 404, as D1 would", async () => {
    const { ids } = await finishedTasks();
    await onlyInShardArchives(ids);
    const stranger = await newAccount("stranger");
    for (const path of [`/v1/task/${ids[0]}`, `/v1/task/${ids[0]}/result`, `/v1/task/${ids[0]}/log`]) expect((await call(path, { token: stranger.token })).status).toBe(404);
    expect(await callJson("/v1/task/list", 200, { token: stranger.token })).toEqual([]);
  });

  it("answer a public result, without a token within its 5 minutes and with its owner's after, and an Idempotency-Key's replay, as before", async () => {
    const { token, ep, keyed, gcId } = await finishedTasks();
    const publicResult = async (t: string | null) => {
      const res = await call(`/gc/${gcId}/result`, { token: t });
      return { status: res.status, body: await res.text() };
    };
    const before = { anonymous: await publicResult(null), owner: await publicResult(token), replay: await replayed(ep, keyed) };
    expect(before.anonymous.status).toBe(200);
    await onlyInShardArchives([gcId]);
    expect({ anonymous: await publicResult(null), owner: await publicResult(token), replay: await replayed(ep, keyed) }).toEqual(before);
  });

  it("list a deleted function's tasks by its filter", async () => {
    const { token, other, ids } = await finishedTasks();
    const before = await allPages(token, 1, other);
    expect(before.flat()).toHaveLength(2);
    expect((await call(`/v1/function/${other}`, { method: "DELETE", token })).status).toBeLessThan(300);
    await onlyInShardArchives(ids);
    expect(await allPages(token, 1, other)).toEqual(before);
    expect((await call(`/v1/task/list?functionId=${other}`, { token: (await newAccount("else")).token })).status).toBe(404);
  });

  it("answer a creation sent again with the archived task, creating and queueing nothing", async () => {
    const { token, accountId, fn, ids } = await finishedTasks();
    const id = ids[0]!;
    const task = await callJson(`/v1/task/${id}`, 200, { token });
    await onlyInShardArchives(ids);
    const agent = await FakeAgent.connect("resent-shard-archived");
    const answer = await dispatcherFor(bindings, fn).createTask({
      id, accountId, functionId: fn, input: { method: "POST", query: {}, headers: {}, body: null }, staged: { id, input: "{}", inputKey: null }, now: Date.now(), mayExist: true,
    });
    expect(answer).toMatchObject({ task: { id, status: 200, finishedAt: expect.any(Number) }, finished: { id } });
    expect(await agent.none("task.assign", 300)).toBe(true);
    await recordsFlushed();
    expect(await env.DB.prepare("select 1 from tasks where id = ?").bind(id).first()).toBeNull();
    expect(await callJson(`/v1/task/${id}`, 200, { token })).toEqual(task);
  });
});

describe("the release of D1's rows of records a shard archived", () => {
  const released = (ids: string[]) =>
    runInDurableObject(shardStub(env, 0), async (o) => {
      const d = o as unknown as Dispatcher;
      await d.archive.roll(Date.now() + ROLL_MS + 1);
      return d.archive.releaseArchived();
    });

  it("counts each record once when its batch is sent again (its answer lost), and takes no row twice", async () => {
    const { token, fn, ids } = await finishedTasks();
    const before = await reads(token, ids, fn);
    const { accountId } = (await env.DB.prepare("select account_id as accountId from tasks where id = ?").bind(ids[0]).first<{ accountId: string }>())!;
    // Two of them in a chain (as triggered tasks are): its size is counted for its cap.
    const chainId = ids[0]!;
    await env.DB.prepare("update tasks set chain_id = ? where id in (?, ?)").bind(chainId, ids[1], ids[2]).run();
    const chainSize = () => chainTasks(openDb(bindings), chainId);
    expect(await chainSize()).toBe(2);
    await released(ids);
    await releaseFromD1(openDb(bindings), ids.map((id) => ({ id, accountId, purged: false })), Date.now());
    expect(await inD1(ids)).toBe(0);
    expect(await reads(token, ids, fn)).toEqual(before);
    expect(await chainSize()).toBe(2);
  });

  it("leaves a row D1 purged since the shard archived it, and one of a task issued before the shards counted issues, for D1's own move", async () => {
    const { ids, accountId } = await finishedTasks();
    await env.DB.prepare("update tasks set purged_at = ? where id = ?").bind(Date.now(), ids[0]).run();
    await shardsCountIssuesFrom(Date.now() + 60_000);
    expect(await released(ids)).toBe(ids.length);
    expect(await inD1(ids)).toBe(ids.length);
    await shardsCountIssuesFrom(Date.now() - HOUR_MS);
    await releaseFromD1(openDb(bindings), ids.map((id) => ({ id, accountId, purged: false })), Date.now());
    expect(await inD1(ids)).toBe(1);
  });

  it("is due at once after a roll, and the records wait for it before they leave the shard", async () => {
    const { ids } = await finishedTasks();
    await runInDurableObject(shardStub(env, 0), async (o) => {
      const d = o as unknown as Dispatcher;
      await d.archive.roll(Date.now() + ROLL_MS + 1);
      expect(d.history.unreleased(100).map((r) => r.id).sort()).toEqual([...ids].sort());
      expect(d.archive.nextAt()).toBeLessThanOrEqual(Date.now());
      expect(d.history.prune(Date.now() + 2 * HOUR_MS)).toBe(0);
      expect(await d.archive.releaseArchived()).toBe(ids.length);
      expect(d.history.unreleased(100)).toEqual([]);
      expect(d.history.prune(Date.now() + 2 * HOUR_MS)).toBe(ids.length);
    });
    expect(await inD1(ids)).toBe(0);
  });
});
