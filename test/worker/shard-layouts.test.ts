import { createExecutionContext, env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createApp } from "../../worker/app.js";
import { newTaskId, shardCount, shardOf, shardOfTask, shardStub } from "../../worker/dispatch/client.js";
import { shardLayouts } from "../../worker/dispatch/shard-layouts.js";
import { idTime } from "../../worker/lib/ids.js";
import { deployedFunction, holdRecords, newAccount, shardsCountIssuesFrom, onRowlessTasks } from "./helpers.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

const app = createApp();
const withShards = (value: string) => ({ ...env, DISPATCH_SHARDS: value });
type Env = ReturnType<typeof withShards>;
const iso = (ms: number) => new Date(ms).toISOString();

const api = (e: Env, token: string, path: string, init: RequestInit = {}) =>
  app.fetch(new Request(`https://api.test${path}`, { ...init, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" } }), e, createExecutionContext());

async function newTaskVia(e: Env, token: string, fn: string): Promise<string> {
  const res = await api(e, token, `/v1/task/${fn}`, { method: "POST", body: "{}" });
  expect(res.status).toBe(201);
  return ((await res.json()) as { id: string }).id;
}

const waitingIn = (shard: number, fn: string) =>
  runInDurableObject(shardStub(env, shard), (_o, state) => state.storage.sql.exec("select count(*) as n from work where function_id = ?", fn).one().n as number);

describe("DISPATCH_SHARDS", () => {
  it("is one count, or a history of counts each with the instant it took over", () => {
    expect(shardLayouts("4")).toEqual([{ from: -Infinity, shards: 4 }]);
    expect(shardLayouts(undefined)).toEqual([{ from: -Infinity, shards: 1 }]);
    const later = Date.parse("2026-12-01T00:00:00Z");
    const latest = Date.parse("2027-01-01T12:30:00.500Z");
    // In any order: the layouts come back oldest first.
    expect(shardLayouts(" 8 from 2026-12-01T00:00:00Z , 4, 16 from 2027-01-01T12:30:00.500Z")).toEqual([
      { from: -Infinity, shards: 4 },
      { from: later, shards: 8 },
      { from: latest, shards: 16 },
    ]);
    expect(shardLayouts("2 from 2026-12-01T01:00:00+01:00, 3")[1]).toEqual({ from: later, shards: 2 });
  });

  it("is refused with the reason when it does not say which shard a task is in", () => {
    const refused = (value: string, reason: RegExp) => expect(() => shardLayouts(value)).toThrow(reason);
    refused("0", /a count is a whole number from 1 to 256/);
    refused("257", /a count is a whole number from 1 to 256/);
    refused("two", /a count is a whole number from 1 to 256/);
    refused("1.5", /a count is a whole number from 1 to 256/);
    refused("", /a count is a whole number/);
    refused("8 from 2026-12-01, 4", /"<count> from <ISO 8601 instant>"/);
    refused("8 since 2026-12-01T00:00:00Z, 4", /"<count> from <ISO 8601 instant>"/);
    refused("8 from 2026-12-01T00:00:00Z extra, 4", /"<count> from <ISO 8601 instant>"/);
    refused("8 from 2026-12-01T00:00:00Z", /exactly one count has no instant/);
    refused("8, 4", /exactly one count has no instant/);
    refused("8 from 2026-12-01T00:00:00Z, 2 from 2026-12-01T00:00:00Z, 4", /two counts take over at the same instant/);
    expect(() => shardLayouts("0")).toThrow(/^DISPATCH_SHARDS is invalid: /);
  });

  it("names every shard any layout uses: agents serve each, and questions about all work ask each", () => {
    expect(shardCount(withShards("2 from 2026-12-01T00:00:00Z, 6"))).toBe(6);
    expect(shardCount(withShards("9 from 2026-12-01T00:00:00Z, 6"))).toBe(9);
  });
});

describe("task ids under a history of layouts", () => {
  const fn = "01functionfunctionfunction";
  const change = Date.parse("2026-12-01T00:00:00Z");
  const e = withShards(`7 from ${iso(change)}, 3`);

  it("hash to the function's shard under the layout of the id's own time, before and after a change", () => {
    for (const at of [change - 60_000, change - 1, change, change + 1, change + 86_400_000]) {
      const ids = Array.from({ length: 20 }, () => newTaskId(e, fn, at));
      for (const id of ids) {
        expect(shardOfTask(e, id)).toBe(shardOf(e, fn, idTime(id)));
        expect(shardOfTask(e, id)).toBe(shardOfTask(withShards(idTime(id)! < change ? "3" : "7"), id));
      }
    }
    expect(shardOf(e, fn, change - 1)).toBe(shardOf(withShards("3"), fn));
    expect(shardOf(e, fn, change)).toBe(shardOf(withShards("7"), fn));
  });
});

describe("a change of the count", () => {
  beforeEach(() => shardsCountIssuesFrom(Date.now() - 3_600_000));
  afterEach(async () => {
    for (const s of [0, 1, 2, 3, 4]) await holdRecords(false, s);
    await shardsCountIssuesFrom(Date.now());
  });

  it("leaves every task made before it where its id says, and the function's operations reach them", async () => {
    const before = withShards("2");
    const { token } = await newAccount();
    // A function that the change moves: its shard under 2 is not its shard under 5.
    let fn = await deployedFunction(token);
    while (shardOf(before, fn) === shardOf(withShards("5"), fn)) fn = await deployedFunction(token);
    for (const s of [0, 1, 2, 3, 4]) await holdRecords(true, s); // D1 lags: only the shards know the tasks
    // A task of the old layout whose id hashes elsewhere under the new count alone.
    let old = await newTaskVia(before, token, fn);
    while (shardOfTask(before, old) === shardOfTask(withShards("5"), old)) old = await newTaskVia(before, token, fn);
    const after = withShards(`5 from ${iso(idTime(old)! + 1)}, 2`);
    const fresh = await newTaskVia(after, token, fn);
    expect(shardOfTask(after, old)).toBe(shardOf(before, fn));
    expect(shardOfTask(after, fresh)).toBe(shardOf(withShards("5"), fn));

    // Without the history the old task is lost to reads; with it, both are found.
    expect((await api(withShards("5"), token, `/v1/task/${old}`)).status).toBe(404);
    for (const id of [old, fresh]) {
      const res = await api(after, token, `/v1/task/${id}`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ id, finished: null });
    }
    // The function's counts add up its tasks in both shards.
    const shards = [shardOf(before, fn), shardOf(withShards("5"), fn)];
    expect(shards[0]).not.toBe(shards[1]);
    const waiting = async () => (await Promise.all(shards.map((s) => waitingIn(s, fn)))).reduce((a, b) => a + b, 0);
    const made = await waiting();
    expect(made).toBeGreaterThanOrEqual(2);
    expect(await waitingIn(shards[1]!, fn)).toBe(1);
    const got = (await (await api(after, token, `/v1/function/${fn}`)).json()) as { metrics: unknown };
    expect(got.metrics).toEqual({ todaysTasks: made, pendingTasks: made, weekTasks: made, completedTasks: 0 });

    // Deleting the function cancels its waiting tasks in every shard that holds some.
    expect((await api(after, token, `/v1/function/${fn}`, { method: "DELETE" })).status).toBe(204);
    expect(await waiting()).toBe(0);
  });
});
