import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, expectError, newAccount, newFunction, tinyZip, uploadBuild, flushedDb, invocationsInD1, onRowlessTasks } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";
import { MAX_ATTEMPTS } from "../../worker/dispatch/attempts.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const task = (token: string, fnId: string) => callJson<{ id: string }>(`/v1/task/${fnId}`, 201, { token, json: { n: 1 } }).then((r) => r.id);
/** The invocations metered for an account, once the shard has written what it holds. */
const metered = async (accountId: string) => (await flushedDb(), invocationsInD1(accountId));

describe("acknowledging reports", () => {
  it("acknowledges a task's report once it is accepted, and a duplicate as well", async () => {
    const agent = await FakeAgent.connect("acked");
    const { token } = await newAccount();
    const id = await task(token, await deployedFunction(token));
    await agent.next("task.assign");
    agent.done(id, "one");
    expect(await agent.next("ack")).toEqual({ type: "ack", of: "task.done", id });
    agent.done(id, "two");
    expect(await agent.next("ack")).toEqual({ type: "ack", of: "task.done", id });
    expect(await (await call(`/v1/task/${id}/result?wait=5`, { token })).text()).toBe("one");
  });

  it("acknowledges each build report, a log batch by its first line", async () => {
    const agent = await FakeAgent.connect("acked-builder");
    const { token } = await newAccount();
    const { id } = await uploadBuild(token, await newFunction(token), tinyZip());
    await agent.next("build.assign");
    agent.send({ type: "build.started", buildId: id });
    expect(await agent.next("ack")).toEqual({ type: "ack", of: "build.started", id });
    agent.send({ type: "build.log", buildId: id, first: 0, lines: ["step 1"] });
    expect(await agent.next("ack")).toEqual({ type: "ack", of: "build.log", id, first: 0 });
    agent.send({ type: "build.done", buildId: id, ok: false, reason: "broken" });
    expect(await agent.next("ack")).toEqual({ type: "ack", of: "build.done", id });
  });

  it("takes a report sent again after a reconnect once (its ack was lost with the socket)", async () => {
    const first = await FakeAgent.connect("flaky");
    const { token, accountId } = await newAccount();
    const id = await task(token, await deployedFunction(token));
    await first.next("task.assign");
    first.done(id, "the outcome");
    await first.next("ack");
    await first.close();
    const again = await FakeAgent.connect("flaky");
    again.done(id, "the outcome, sent again");
    expect(await again.next("ack")).toEqual({ type: "ack", of: "task.done", id });
    expect(await (await call(`/v1/task/${id}/result?wait=5`, { token })).text()).toBe("the outcome");
    expect(await metered(accountId)).toBe(1);
    expect(await again.none("task.assign")).toBe(true);
  });

  // Reports count only from the node the work is assigned to (agents see only their own work): a
  // report that arrives after its task went to another node is acknowledged, so the agent forgets
  // it, and dropped; the run the task is assigned to now is the one recorded.
  it("acknowledges and drops a report that reaches the dispatcher only after the task went to another node", async () => {
    const lost = await FakeAgent.connect("lost-report");
    const { token, accountId } = await newAccount();
    const id = await task(token, await deployedFunction(token));
    await lost.next("task.assign");
    await lost.close();
    const other = await FakeAgent.connect("second-runner");
    expect((await other.next("task.assign")).taskId).toBe(id);
    const back = await FakeAgent.connect("lost-report", { slots: 0 });
    back.done(id, "from the first run");
    expect(await back.next("ack")).toEqual({ type: "ack", of: "task.done", id });
    other.done(id, "from the second run");
    await other.next("ack");
    expect(await (await call(`/v1/task/${id}/result?wait=5`, { token })).text()).toBe("from the second run");
    expect(await metered(accountId)).toBe(1);
  });
});

describe("attempts", () => {
  it(`fails a task with 500 once its agent went away ${MAX_ATTEMPTS} times, saying why in the result and the log`, async () => {
    const { token } = await newAccount();
    const id = await task(token, await deployedFunction(token));
    for (let i = 0; i < MAX_ATTEMPTS; i++) {
      const agent = await FakeAgent.connect(`crashes-${i}`);
      expect((await agent.next("task.assign")).taskId).toBe(id);
      await agent.close();
    }
    const res = await call(`/v1/task/${id}/result?wait=5`, { token });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: { code: "agent_lost", message: expect.stringContaining(`given up after ${MAX_ATTEMPTS} attempts`) } });
    const { log } = await callJson(`/v1/task/${id}/log`, 200, { token });
    expect(log).toEqual([expect.stringMatching(/^\[dispatcher\] the task was given up after 3 attempts/)]);
    const fresh = await FakeAgent.connect("healthy");
    expect(await fresh.none("task.assign")).toBe(true);
  });

  it(`fails a build once its agent went away ${MAX_ATTEMPTS} times`, async () => {
    const { token } = await newAccount();
    const { id } = await uploadBuild(token, await newFunction(token), tinyZip());
    for (let i = 0; i < MAX_ATTEMPTS; i++) {
      const agent = await FakeAgent.connect(`build-crashes-${i}`);
      expect((await agent.next("build.assign")).buildId).toBe(id);
      await agent.close();
    }
    const build = await eventually(async () => {
      const b = await callJson(`/v1/build/${id}`, 200, { token });
      return b.status === "FAILED" && b;
    });
    expect(build.log).toEqual([expect.stringContaining(`build failed: given up after ${MAX_ATTEMPTS} attempts`)]);
  });
});

describe("PUT /v1/agent/tasks/<id>/log (a log too large for the report frame)", () => {
  it("keeps the uploaded log in R2 and serves it from GET /v1/task/<id>/log", async () => {
    const agent = await FakeAgent.connect("big-log");
    const { token } = await newAccount();
    const id = await task(token, await deployedFunction(token));
    const { logPath } = await agent.next("task.assign");
    // 3,000 lines of 1,000 characters: 3 MB, three times the socket's message limit.
    const lines = Array.from({ length: 3000 }, (_, i) => `${i}:`.padEnd(1000, "x"));
    const put = await call(logPath!, { token: agent.token, method: "PUT", body: JSON.stringify(lines), headers: { "content-type": "application/json" } });
    expect(put.status).toBe(204);
    agent.done(id, "ok", 200, { log: [], logUploaded: true });
    await agent.next("ack");
    await call(`/v1/task/${id}/result?wait=5`, { token });
    expect(await callJson(`/v1/task/${id}/log`, 200, { token })).toEqual({ id, finished: true, log: lines });
  });

  it("refuses what is not a list of log lines, and uploads once the task has finished", async () => {
    const agent = await FakeAgent.connect("bad-log");
    const { token } = await newAccount();
    const id = await task(token, await deployedFunction(token));
    const { logPath } = await agent.next("task.assign");
    const agentToken = agent.token;
    await expectError(call(logPath!, { token: agentToken, method: "PUT", body: JSON.stringify({ lines: "no" }) }), 400, "validation_failed");
    await expectError(call(logPath!, { token: agentToken, method: "PUT", body: JSON.stringify(["x".repeat(9000)]) }), 400, "validation_failed");
    agent.done(id, "ok");
    await call(`/v1/task/${id}/result?wait=5`, { token });
    // The task is no longer open work of this node: the route answers as for any other's task.
    await expectError(call(logPath!, { token: agentToken, method: "PUT", body: JSON.stringify(["late"]) }), 404, "not_found");
    expect((await callJson(`/v1/task/${id}/log`, 200, { token })).log).toEqual([`ran ${id}`]);
  });
});
