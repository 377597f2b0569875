import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, clearQueue, deployedFunction, newAccount, newEndpoint, onRowlessTasks } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

describe("task assignment while the function's configuration is read", () => {
  // Creations that arrive together run overlapping pumps: one awaits D1 for the function's
  // configuration while the next assigns. Each assignment must leave, whichever pump sends it.
  it("sends every one of 32 tasks created at once to the agent, once", async () => {
    const acct = await newAccount();
    const fn = await deployedFunction(acct.token);
    const ep = await newEndpoint(acct.token, fn);
    const agent = await FakeAgent.connect("overlap", { slots: 40 });
    const answers = await Promise.all(Array.from({ length: 32 }, (_, i) => call(`/gc/${ep}`, { method: "POST", body: `call ${i}` })));
    const created = await Promise.all(answers.map(async (r) => (expect(r.status).toBe(201), ((await r.json()) as { id: string }).id)));
    const assigned: string[] = [];
    for (let i = 0; i < 32; i++) assigned.push((await agent.next("task.assign", 5_000)).taskId);
    expect(assigned.sort()).toEqual(created.sort());
    expect(await agent.none("task.assign", 500)).toBe(true);
    await agent.close();
  });
});
