import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, callJson, clearQueue, deployedFunction, newAccount, newFunction, uploadBuild, onRowlessTasks } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

/** Uploads one build of a new function of the account; its id. */
async function build(token: string): Promise<string> {
  return (await uploadBuild(token, await newFunction(token))).id;
}

/** Every build assignment the agents receive until each has been quiet for a moment, sorted. */
async function assignedBuilds(agents: FakeAgent[]): Promise<string[]> {
  const ids: string[] = [];
  for (const agent of agents) {
    for (;;) {
      const next = await agent.next("build.assign", 500).catch(() => null);
      if (!next) break;
      ids.push(next.buildId);
    }
  }
  return ids.sort();
}

const finish = (agent: FakeAgent, buildId: string) => agent.send({ type: "build.done", buildId, ok: false, reason: "finished by the test" });

describe("builds per account", () => {
  it("holds an account's third concurrent build until one of its builds ends, while another account's build runs", async () => {
    const agent = await FakeAgent.connect("wide-builder", { slots: 8 });
    const flood = await newAccount();
    const ids = [await build(flood.token), await build(flood.token), await build(flood.token)];
    const running = [(await agent.next("build.assign")).buildId, (await agent.next("build.assign")).buildId];
    expect(running).toEqual(ids.slice(0, 2));
    expect(await agent.none("build.assign")).toBe(true);

    const other = await newAccount();
    const theirs = await build(other.token);
    expect((await agent.next("build.assign")).buildId).toBe(theirs);
    expect(await agent.none("build.assign")).toBe(true);

    finish(agent, ids[0]!);
    expect((await agent.next("build.assign")).buildId).toBe(ids[2]);
    expect((await callJson(`/v1/build/${ids[2]}`, 200, { token: flood.token })).status).toBe("PENDING");
  });

  it("counts an account's builds across every agent of the shard", async () => {
    const one = await FakeAgent.connect("builder-east", { slots: 4 });
    const two = await FakeAgent.connect("builder-west", { slots: 4 });
    const { token } = await newAccount();
    const ids = [await build(token), await build(token), await build(token)];
    expect(await assignedBuilds([one, two])).toEqual(ids.slice(0, 2).sort());
  });
});

describe("builds per node", () => {
  it("sends a node no more builds at once than its hello allows, while its free slots still take tasks", async () => {
    const agent = await FakeAgent.connect("single-builder", { slots: 4, builds: 1 });
    const a = await newAccount();
    const b = await newAccount();
    const first = await build(a.token);
    expect((await agent.next("build.assign")).buildId).toBe(first);
    const second = await build(b.token);
    expect(await agent.none("build.assign")).toBe(true);

    const fn = await deployedFunction(a.token);
    const task = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token: a.token, json: {} });
    expect((await agent.next("task.assign")).taskId).toBe(task.id);

    finish(agent, first);
    expect((await agent.next("build.assign")).buildId).toBe(second);
  });
});

describe("a flood of one account's builds", () => {
  it("hides no other account's work from the dispatcher: held builds take no room in its window on the queue", async () => {
    const agent = await FakeAgent.connect("flooded-builder", { slots: 8 });
    const flood = await newAccount();
    const fn = await newFunction(flood.token);
    // More held builds than the 200 waiting rows one pump looks at: an account whose queuedBuilds
    // limit the operator raised that far (10 by default).
    await callJson(`/v1/admin/accounts/${flood.accountId}`, 204, { token: ADMIN, method: "PATCH", json: { limits: { queuedBuilds: 203 } } });
    for (let i = 0; i < 203; i++) await uploadBuild(flood.token, fn);
    expect(await assignedBuilds([agent])).toHaveLength(2);
    const other = await newAccount();
    const theirs = await build(other.token);
    expect((await agent.next("build.assign")).buildId).toBe(theirs);
  });
});
