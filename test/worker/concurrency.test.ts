import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, expectError, expectNoContent, newAccount, newFunction, onRowlessTasks } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const setCap = (token: string, fn: string, max: number | null) => expectNoContent(call(`/v1/function/${fn}/concurrency`, { token, method: "PUT", json: { max } }));
const issue = async (token: string, fn: string) => (await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, method: "POST" })).id;

/** Every assignment that arrives (the first within a few seconds) until none does for a moment. */
async function assignments(agent: FakeAgent): Promise<{ taskId: string; functionId: string }[]> {
  const out = [await agent.next("task.assign", 5000)];
  for (;;) {
    try {
      out.push(await agent.next("task.assign", 400));
    } catch {
      return out;
    }
  }
}

describe("GET /v1/function/<id>/concurrency", () => {
  it("answers no cap by default", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    expect(await callJson(`/v1/function/${fn}/concurrency`, 200, { token })).toEqual({ max: null });
  });

  it("answers 404 for another account's function", async () => {
    const { token } = await newAccount();
    const fn = await newFunction((await newAccount("other")).token);
    await expectError(call(`/v1/function/${fn}/concurrency`, { token }), 404, "not_found");
    await expectError(call(`/v1/function/${fn}/concurrency`, { token, method: "PUT", json: { max: 2 } }), 404, "not_found");
  });
});

describe("PUT /v1/function/<id>/concurrency", () => {
  it("sets and removes the cap", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    await setCap(token, fn, 1000);
    expect(await callJson(`/v1/function/${fn}/concurrency`, 200, { token })).toEqual({ max: 1000 });
    await setCap(token, fn, null);
    expect(await callJson(`/v1/function/${fn}/concurrency`, 200, { token })).toEqual({ max: null });
  });

  it.each([[{ max: 0 }], [{ max: 1001 }], [{ max: "3" }], [{ max: 1.5 }], [{}], [{ max: 3, min: 1 }]])("refuses %j and keeps the cap", async (json) => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    await setCap(token, fn, 4);
    await expectError(call(`/v1/function/${fn}/concurrency`, { token, method: "PUT", json }), 400, "validation_failed");
    expect(await callJson(`/v1/function/${fn}/concurrency`, 200, { token })).toEqual({ max: 4 });
  });
});

describe("tasks of a capped function", () => {
  it("never runs more than the cap at once: 50 calls with cap 3, every one run in order", async () => {
    const agent = await FakeAgent.connect("capped", { slots: 64 });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await setCap(token, fn, 3);
    const issued: string[] = [];
    for (let i = 0; i < 50; i++) issued.push(await issue(token, fn));
    const ran: string[] = [];
    let most = 0;
    while (ran.length < 50) {
      const running = await assignments(agent);
      most = Math.max(most, running.length);
      expect(running.length).toBeLessThanOrEqual(3);
      for (const a of running) {
        ran.push(a.taskId);
        agent.done(a.taskId, "ok");
      }
    }
    expect(most).toBe(3);
    // The rest waited pending, not refused, and went in the order they were issued.
    expect(ran).toEqual(issued);
    await agent.close();
  });

  it("lets another function's tasks on the same shard pass its waiting ones", async () => {
    const agent = await FakeAgent.connect("capped-neighbour", { slots: 8 });
    const { token } = await newAccount();
    const [capped, free] = [await deployedFunction(token), await deployedFunction(token)];
    await setCap(token, capped, 1);
    for (let i = 0; i < 5; i++) await issue(token, capped);
    const later = [await issue(token, free), await issue(token, free)];
    const first = await assignments(agent);
    expect(first.filter((a) => a.functionId === capped)).toHaveLength(1);
    expect(first.filter((a) => a.functionId === free).map((a) => a.taskId)).toEqual(later);
    await agent.close();
  });

  it("lifts the cap at once when it is removed", async () => {
    const agent = await FakeAgent.connect("uncapped", { slots: 8 });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await setCap(token, fn, 1);
    for (let i = 0; i < 4; i++) await issue(token, fn);
    expect(await assignments(agent)).toHaveLength(1);
    await setCap(token, fn, null);
    expect(await assignments(agent)).toHaveLength(3);
    await agent.close();
  });
});
