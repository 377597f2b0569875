import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { callJson, clearQueue, deployedFunction, newAccount, onRowlessTasks } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";
import { shardStub } from "../../worker/dispatch/client.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const task = (token: string, fn: string) => callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, method: "POST" }).then((r) => r.id);

/** An account with a deployed function and `n` tasks of it queued, issued one after the other (so in order). */
async function queued(name: string, n: number) {
  const { token } = await newAccount(name);
  const fn = await deployedFunction(token);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await task(token, fn));
  return { token, fn, ids };
}

const BACKLOG = 40;

describe("fair scheduling between accounts", () => {
  it("gives the next free slot to another account's single task, not to the next of a backlog", async () => {
    const agent = await FakeAgent.connect("one-slot", { slots: 1 });
    const a = await queued("backlog", BACKLOG);
    expect((await agent.next("task.assign")).taskId).toBe(a.ids[0]);
    const b = await queued("single", 1);
    agent.done(a.ids[0]!, "a0");
    expect((await agent.next("task.assign")).taskId).toBe(b.ids[0]);
    agent.done(b.ids[0]!, "b0");
    // Within an account, oldest first.
    expect((await agent.next("task.assign")).taskId).toBe(a.ids[1]);
    const { waiting } = await shardStub(env, 0).status();
    expect(waiting).toBe(BACKLOG - 2);
  });

  it("offers every account's oldest task in the first round when slots open", async () => {
    const a = await queued("backlog", BACKLOG);
    const b = await queued("b", 1);
    const c = await queued("c", 2);
    const agent = await FakeAgent.connect("three-slots", { slots: 3 });
    const assigned = new Set<string>();
    for (let i = 0; i < 3; i++) assigned.add((await agent.next("task.assign")).taskId);
    expect(assigned).toEqual(new Set([a.ids[0], b.ids[0], c.ids[0]]));
  });

  it("does not let a paused function's backlog hold back the same account's other functions", async () => {
    const a = await queued("pauser", BACKLOG);
    await callJson(`/v1/function/${a.fn}/togglePause`, 204, { token: a.token, method: "POST" });
    const other = await deployedFunction(a.token);
    const id = await task(a.token, other);
    const agent = await FakeAgent.connect("paused-lanes", { slots: 2 });
    expect((await agent.next("task.assign")).taskId).toBe(id);
    expect(await agent.none("task.assign")).toBe(true);
  });

  it("rebuilds the same lanes from storage when the dispatcher starts again", async () => {
    const a = await queued("backlog", BACKLOG);
    const b = await queued("single", 1);
    const stub = shardStub(env, 0);
    await stub.resync(); // what a fresh instance reads from storage (through the waiting-row index)
    const stored = await runInDurableObject(stub, (_o, state) => state.storage.sql.exec<{ n: number }>("select count(*) as n from work where node is null").one().n);
    expect((await stub.status()).waiting).toBe(stored);
    const agent = await FakeAgent.connect("after-restart", { slots: 2 });
    const assigned = new Set([(await agent.next("task.assign")).taskId, (await agent.next("task.assign")).taskId]);
    expect(assigned).toEqual(new Set([a.ids[0], b.ids[0]]));
  });

  it("puts an agent's work back in its place when the agent goes away", async () => {
    const first = await FakeAgent.connect("leaves", { slots: 2 });
    const a = await queued("backlog", 5);
    const taken = new Set([(await first.next("task.assign")).taskId, (await first.next("task.assign")).taskId]);
    expect(taken).toEqual(new Set(a.ids.slice(0, 2)));
    await first.close();
    const second = await FakeAgent.connect("stays", { slots: 1 });
    expect((await second.next("task.assign")).taskId).toBe(a.ids[0]);
  });
});
