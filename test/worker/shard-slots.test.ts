import { createExecutionContext, env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createApp } from "../../worker/app.js";
import { shardOf, shardStub } from "../../worker/dispatch/client.js";
import { slotShare } from "../../shared/protocol/slot-shares.js";
import { FakeAgent, type Via } from "./fake-agent.js";
import { deployedFunction, newAccount, onRowlessTasks } from "./helpers.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

type Assign = { taskId: string };

// The test pool runs one shard; this Worker runs two over the same Durable Object namespace.
const sharded = { ...env, DISPATCH_SHARDS: "2" };
const app = createApp();
const viaShard = (shard: number): Via => ({ shard, fetch: async (r) => app.fetch(r, sharded, createExecutionContext()) });

/** Functions whose work lands on shard 0 and on shard 1. */
async function oneFunctionPerShard(token: string): Promise<[string, string]> {
  const on: (string | undefined)[] = [undefined, undefined];
  while (!on[0] || !on[1]) {
    const fn = await deployedFunction(token);
    on[shardOf(sharded, fn)] ??= fn;
  }
  return [on[0], on[1]];
}

async function tasks(token: string, fn: string, n: number) {
  for (let i = 0; i < n; i++) {
    const res = await viaShard(0).fetch(new Request(`https://api.test/v1/task/${fn}`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: "{}" }));
    expect(res.status).toBe(201);
  }
}

/** The next `n` assignments, however long a loaded machine takes to deliver them. */
async function take(agent: FakeAgent, n: number): Promise<Assign[]> {
  const got: Assign[] = [];
  while (got.length < n) got.push(await agent.next("task.assign", 10_000));
  return got;
}

/** True when no further assignment arrives within a second. */
async function nothingMore(agent: FakeAgent): Promise<boolean> {
  try {
    await agent.next("task.assign", 1000);
    return false;
  } catch {
    return true;
  }
}

/** Both shards start empty: work an earlier test left queued would take this test's slots. */
beforeEach(async () => {
  for (const s of [0, 1]) {
    await runInDurableObject(shardStub(sharded, s), (_o, state) => void state.storage.sql.exec("delete from work"));
    await shardStub(sharded, s).resync();
  }
});
afterEach(() => FakeAgent.closeAll());

describe("an agent connected to several shards", () => {
  it("is never assigned more than its slots in total, however much work waits on each shard", async () => {
    const { token } = await newAccount();
    const [fn0, fn1] = await oneFunctionPerShard(token);
    const agentToken = await FakeAgent.token("fleet-node");
    const slots = 5;
    const conns = await Promise.all([0, 1].map((s) => FakeAgent.connect("fleet-node", { token: agentToken, via: viaShard(s), slots: slotShare(slots, 2, s) })));
    await tasks(token, fn0, 8);
    await tasks(token, fn1, 8);

    const held = await Promise.all([take(conns[0]!, 3), take(conns[1]!, 2)]);
    expect(await Promise.all(conns.map(nothingMore))).toEqual([true, true]);

    // A finished task frees a slot of the shard that assigned it, and only that shard fills it.
    conns[1]!.done(held[1]![0]!.taskId, "done");
    await take(conns[1]!, 1);
    expect(await Promise.all(conns.map(nothingMore))).toEqual([true, true]);
  });

  it("offers each shard one slot when it has fewer slots than shards, so no shard's work is stranded", async () => {
    const { token } = await newAccount();
    const [fn0, fn1] = await oneFunctionPerShard(token);
    const agentToken = await FakeAgent.token("small-node");
    const conns = await Promise.all([0, 1].map((s) => FakeAgent.connect("small-node", { token: agentToken, via: viaShard(s), slots: slotShare(1, 2, s) })));
    await tasks(token, fn0, 2);
    await tasks(token, fn1, 2);
    await Promise.all(conns.map((c) => take(c, 1)));
    expect(await Promise.all(conns.map(nothingMore))).toEqual([true, true]);
  });

  it("takes its share itself of an agent from before slot shares, which offers every shard all its slots", async () => {
    const { token } = await newAccount();
    const [fn0, fn1] = await oneFunctionPerShard(token);
    const agentToken = await FakeAgent.token("old-node");
    const slots = 5;
    const conns = await Promise.all([0, 1].map((s) => FakeAgent.connect("old-node", { token: agentToken, via: viaShard(s), slots, beforeShares: true })));
    await tasks(token, fn0, 8);
    await tasks(token, fn1, 8);

    // The same split as a current agent's offer: 3 on shard 0 and 2 on shard 1, 5 in all.
    await Promise.all([take(conns[0]!, slotShare(slots, 2, 0)), take(conns[1]!, slotShare(slots, 2, 1))]);
    expect(await Promise.all(conns.map(nothingMore))).toEqual([true, true]);
  });
});
