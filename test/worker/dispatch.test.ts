import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, expectError, grantPrivileged, holdRecords, invocationsInD1, newAccount, newFunction, recordsFlushed, tinyZip, uploadBuild } from "./helpers.js";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { rowsInserted } from "../../worker/task-life/record-rows.js";
import { eventually, FakeAgent } from "./fake-agent.js";
import { newTaskId, shardOf, shardOfTask, shardStub } from "../../worker/dispatch/client.js";
import { FRAME_BUDGET_BYTES, MAX_LOG_LINE_CHARS } from "../../shared/protocol/messages.js";

const task = (token: string, fnId: string, json: unknown = { n: 1 }) =>
  callJson<{ id: string }>(`/v1/task/${fnId}?x=1`, 201, { token, json }).then((r) => r.id);
beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const taskRecord = (token: string, id: string) => callJson(`/v1/task/${id}`, 200, { token });

describe("agent connection", () => {
  it("refuses a connection without an agent token", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/agent/connect", { token, headers: { upgrade: "websocket" } }), 401, "unauthorized");
  });

  it("ignores frames that are not protocol messages and keeps the connection", async () => {
    const agent = await FakeAgent.connect("junk-node");
    agent.ws.send("not json");
    agent.send({ type: "task.done", taskId: "../etc" });
    agent.send({ type: "heartbeat", free: 4, warm: [], draining: false });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await task(token, fn);
    expect((await agent.next("task.assign")).taskId).toBe(id);
    await agent.close();
  });

  it(`drops a frame over the ${FRAME_BUDGET_BYTES / 1024} KiB budget unread, even a well-formed report`, async () => {
    const agent = await FakeAgent.connect("big-frame-node");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await task(token, fn);
    expect((await agent.next("task.assign")).taskId).toBe(id);
    const log = Array.from({ length: 40 }, () => "x".repeat(MAX_LOG_LINE_CHARS)); // 320 KiB, each line within its own limit
    agent.done(id, "too big", 200, { log });
    expect((await call(`/v1/task/${id}/result?wait=1`, { token })).status).toBe(202);
    agent.done(id, "within the budget");
    const res = await call(`/v1/task/${id}/result?wait=5`, { token });
    expect([res.status, await res.text()]).toEqual([200, "within the budget"]);
    await agent.close();
  });
});

describe("builds through the dispatcher", () => {
  it("moves PENDING → BUILDING → SUCCESS with the log, and the artifact route serves the upload to the node running its task", async () => {
    const agent = await FakeAgent.connect("builder-1");
    const { token } = await newAccount();
    const fn = await newFunction(token);
    const { id } = await uploadBuild(token, fn, tinyZip());
    const assign = await agent.next("build.assign");
    expect(assign).toMatchObject({ buildId: id, functionId: fn, lang: "py" });
    const agentToken = agent.token;
    const src = await call(assign.sourcePath, { token: agentToken });
    expect(new Uint8Array(await src.arrayBuffer())).toEqual(tinyZip());
    agent.send({ type: "build.started", buildId: id });
    await eventually(async () => (await callJson(`/v1/build/${id}`, 200, { token })).status === "BUILDING");
    agent.send({ type: "build.log", buildId: id, first: 2, lines: ["step 3"] });
    agent.send({ type: "build.log", buildId: id, first: 0, lines: ["step 1", "step 2"] });
    agent.send({ type: "build.log", buildId: id, first: 0, lines: ["step 1", "step 2"] }); // re-sent after a reconnect
    await eventually(async () => (await callJson(`/v1/build/${id}`, 200, { token })).log.length === 3);
    const put = await call(assign.artifactPath, { token: agentToken, method: "PUT", body: "ARTIFACT", headers: { "content-length": "8" } });
    expect(put.status).toBe(204);
    agent.send({ type: "build.done", buildId: id, ok: true, artifactSize: 8 });
    const build = await eventually(async () => {
      const b = await callJson(`/v1/build/${id}`, 200, { token });
      return b.status === "SUCCESS" && b;
    });
    expect(build.timeline.map((t: { status: string }) => t.status)).toEqual(["PENDING", "BUILDING", "SUCCESS"]);
    expect(build.log).toEqual(["step 1", "step 2", "step 3"]);
    const taskId = await task(token, fn);
    const run = await agent.next("task.assign");
    expect(run).toMatchObject({ taskId, buildId: id, artifactPath: assign.artifactPath });
    expect(await (await call(run.artifactPath, { token: agentToken })).text()).toBe("ARTIFACT");
    await agent.close();
  });

  it("records a failed build with its reason in the log", async () => {
    const agent = await FakeAgent.connect("builder-2");
    const { token } = await newAccount();
    const fn = await newFunction(token);
    const { id } = await uploadBuild(token, fn);
    await agent.next("build.assign");
    agent.send({ type: "build.started", buildId: id });
    agent.send({ type: "build.log", buildId: id, first: 0, lines: ["compiling"] });
    // Frames sent back to back can reach the handler out of order in the test pool (see below).
    await eventually(async () => (await callJson(`/v1/build/${id}`, 200, { token })).log.includes("compiling"));
    agent.send({ type: "build.done", buildId: id, ok: false, reason: "SyntaxError: invalid syntax (handler.py, line 1)" });
    const build = await eventually(async () => {
      const b = await callJson(`/v1/build/${id}`, 200, { token });
      return b.status === "FAILED" && b;
    });
    expect(build.log).toEqual(["compiling", "build failed: SyntaxError: invalid syntax (handler.py, line 1)"]);
    await agent.close();
  });
});

describe("tasks through the dispatcher", () => {
  it("assigns a task, fills assigned/node/progress, and records the result", async () => {
    const agent = await FakeAgent.connect("node-a");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await task(token, fn, { hello: "world" });
    const assign = await agent.next("task.assign");
    expect(assign.input).toMatchObject({ method: "POST", query: { x: "1" }, body: JSON.stringify({ hello: "world" }) });
    expect(assign.capabilities).toEqual({ timeout: 30, cpuCount: 1, memSize: 256, privileged: false, egress: false });
    const running = await eventually(async () => {
      const t = await taskRecord(token, id);
      return t.assigned && t;
    });
    expect(running).toMatchObject({ node: "node-a", status: 0 });
    expect(running.progress).toBeGreaterThan(0);
    expect(running.progress).toBeLessThan(100);
    agent.done(id, "hi there", 201);
    const res = await call(`/v1/task/${id}/result?wait=5`, { token });
    expect(res.status).toBe(201);
    expect(res.headers.get("content-type")).toBe("text/plain");
    expect(await res.text()).toBe("hi there");
    expect(await taskRecord(token, id)).toMatchObject({ status: 201, progress: 100, node: "node-a", finished: expect.stringMatching(/^\d+$/) });
    expect((await callJson(`/v1/task/${id}/log`, 200, { token })).log).toEqual([`ran ${id}`]);
    await agent.close();
  });

  it("runs a privileged function only on an agent that allows privileged work", async () => {
    // A privileged node the fleet has seen, offline for now: the task waits for it (privileged.test.ts).
    await (await FakeAgent.connect("priv", { privileged: true })).close();
    const plain = await FakeAgent.connect("plain", { privileged: false });
    const { token, accountId } = await newAccount();
    await grantPrivileged(accountId);
    const fn = await deployedFunction(token);
    await callJson(`/v1/function/${fn}/capabilities`, 204, { token, json: { privileged: true } });
    const id = await task(token, fn);
    expect(await plain.none("task.assign")).toBe(true);
    const priv = await FakeAgent.connect("priv", { privileged: true });
    expect((await priv.next("task.assign")).taskId).toBe(id);
    await plain.close();
    await priv.close();
  });

  it("gives a disconnected agent's task to another agent and records the result once", async () => {
    const a = await FakeAgent.connect("dies");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await task(token, fn);
    await a.next("task.assign");
    const b = await FakeAgent.connect("survives", { slots: 1 });
    expect(await b.none("task.assign", 200)).toBe(true);
    await a.close();
    expect((await b.next("task.assign")).taskId).toBe(id);
    b.done(id, "from b");
    expect(await (await call(`/v1/task/${id}/result?wait=5`, { token })).text()).toBe("from b");
    // A report after the first is ignored. (Sent only once the first is in: the test pool's
    // Durable Object wrapper awaits a module import per event, so frames sent back to back can
    // reach the handler out of order here; workerd itself delivers them in order.)
    b.done(id, "again from b");
    expect(await b.none("task.cancel", 300)).toBe(true);
    expect(await (await call(`/v1/task/${id}/result?wait=5`, { token })).text()).toBe("from b");
    expect((await taskRecord(token, id)).node).toBe("survives");
    await b.close();
  });

  it("holds a paused function's tasks until it is resumed", async () => {
    const agent = await FakeAgent.connect("pauser");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await callJson(`/v1/function/${fn}/togglePause`, 204, { token, method: "POST" });
    const id = await task(token, fn);
    expect(await agent.none("task.assign")).toBe(true);
    await callJson(`/v1/function/${fn}/togglePause`, 204, { token, method: "POST" });
    expect((await agent.next("task.assign")).taskId).toBe(id);
    await agent.close();
  });

  it("keeps waiting tasks across a restart of the dispatcher", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await task(token, fn);
    const stub = shardStub(env, 0);
    // A fresh instance over the same storage sees the queue: nothing was held only in memory.
    const waiting = await runInDurableObject(stub, (_o, state) =>
      state.storage.sql.exec<{ id: string }>("select id from work where node is null").toArray().map((r) => r.id),
    );
    expect(waiting).toContain(id);
    const agent = await FakeAgent.connect("after-restart");
    expect((await agent.next("task.assign")).taskId).toBe(id);
    await agent.close();
  });

  it("closes a silent agent at the liveness check and requeues its work", async () => {
    const silent = await FakeAgent.connect("silent");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await task(token, fn);
    await silent.next("task.assign");
    const stub = shardStub(env, 0);
    await runInDurableObject(stub, (_o, state) => {
      for (const ws of state.getWebSockets()) {
        const att = ws.deserializeAttachment();
        if (att?.nodeId === "silent") ws.serializeAttachment({ ...att, lastSeen: 0 });
      }
    });
    await runDurableObjectAlarm(stub);
    const other = await FakeAgent.connect("other");
    expect((await other.next("task.assign")).taskId).toBe(id);
    await other.close();
  });

  it("answers 504 itself when a task runs past its timeout and the agent never reports", async () => {
    const agent = await FakeAgent.connect("slow");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await task(token, fn);
    await agent.next("task.assign");
    const stub = shardStub(env, 0);
    await runInDurableObject(stub, (_o, state) => state.storage.sql.exec("update work set deadline = 1 where id = ?", id));
    await stub.resync(); // the dispatcher mirrors its storage in memory
    await runDurableObjectAlarm(stub);
    expect((await agent.next("task.cancel")).taskId).toBe(id);
    expect(await taskRecord(token, id)).toMatchObject({ status: 504, progress: 100 });
    expect((await call(`/v1/task/${id}/result`, { token })).status).toBe(504);
    await agent.close();
  });

  it("cancels a deleted function's queued tasks", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await task(token, fn);
    await callJson(`/v1/function/${fn}`, 204, { token, method: "DELETE" });
    expect((await taskRecord(token, id)).status).toBe(410);
    const agent = await FakeAgent.connect("late");
    expect(await agent.none("task.assign")).toBe(true);
    await agent.close();
  });

  it("records, and meters once, a deleted function's task whose outcome its shard accepted before the deletion, as it ran", async () => {
    const agent = await FakeAgent.connect("ran-before-delete");
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await task(token, fn);
    expect((await agent.next("task.assign")).taskId).toBe(id);
    await recordsFlushed(); // D1 has the row, unfinished
    await holdRecords(true);
    try {
      agent.done(id, "ran", 200);
      await agent.next("ack");
      await callJson(`/v1/function/${fn}`, 204, { token, method: "DELETE" });
      expect(await env.DB.prepare("select status from tasks where id = ?").bind(id).first()).toEqual({ status: 0 });
      await holdRecords(false);
      expect(await env.DB.prepare("select status, result_body as body from tasks where id = ?").bind(id).first()).toEqual({ status: 200, body: "ran" });
      expect((await taskRecord(token, id)).status).toBe(200);
      expect(await invocationsInD1(accountId)).toBe(1);
    } finally {
      await holdRecords(false);
      await agent.close();
    }
  });

  // The deletion cancels D1's unfinished rows, then the shard's; a batch in flight may land the
  // task's row unfinished between the two. The shard's cancelled copy must still finish it in D1.
  it("finishes a deleted function's task in D1 whose row landed unfinished after the deletion's own cancellation", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await holdRecords(true);
    try {
      const id = await task(token, fn);
      const created = await shardStub(env, 0).heldTask(id);
      await callJson(`/v1/function/${fn}`, 204, { token, method: "DELETE" });
      // The late batch: the row as created, unfinished.
      for (const statement of rowsInserted([created!])) {
        const q = new SQLiteAsyncDialect().sqlToQuery(statement);
        await env.DB.prepare(q.sql).bind(...q.params).run();
      }
      expect((await env.DB.prepare("select status from tasks where id = ?").bind(id).first<{ status: number }>())!.status).toBe(0);
      expect((await taskRecord(token, id)).status).toBe(410);
      await holdRecords(false);
      expect(await env.DB.prepare("select status, progress from tasks where id = ?").bind(id).first()).toEqual({ status: 410, progress: 100 });
      expect((await taskRecord(token, id)).status).toBe(410);
    } finally {
      await holdRecords(false);
    }
  });
});

describe("recording outcomes", () => {
  it("records outcomes reported together, each task once, with its assignment and its metering", async () => {
    const agent = await FakeAgent.connect("burst", { slots: 12 });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const ids = await Promise.all(Array.from({ length: 12 }, (_, i) => task(token, fn, { i })));
    const assigned = new Set<string>();
    while (assigned.size < ids.length) assigned.add((await agent.next("task.assign")).taskId);
    // Reported in one burst, then each again once the dispatcher holds none of them in its queue
    // (see the note on ordering above): the repeats arrive while the first are being written.
    for (const id of ids) agent.done(id, `result of ${id}`);
    await eventually(async () => (await callJson("/v1/agent/status", 200, { token: await FakeAgent.token() })).shards[0].running === 0);
    for (const id of ids) agent.done(id, "a duplicate", 500);
    for (const id of ids) {
      const res = await call(`/v1/task/${id}/result?wait=5`, { token });
      expect(res.status).toBe(200);
      expect(await res.text()).toBe(`result of ${id}`);
      expect(await taskRecord(token, id)).toMatchObject({ status: 200, progress: 100, node: "burst", assigned: expect.stringMatching(/^\d+$/) });
    }
    expect((await callJson("/v1/usage", 200, { token })).invocations).toBe(ids.length);
    await agent.close();
  });

  it("writes an outcome left in its storage (evicted before D1 answered) at the next alarm, and wakes the reader", async () => {
    const agent = await FakeAgent.connect("evicted");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await task(token, fn);
    await agent.next("task.assign");
    const stub = shardStub(env, 0);
    // What an accepted report leaves behind when the object goes away before its D1 write.
    await runInDurableObject(stub, (_o, state) => {
      const w = state.storage.sql.exec<{ account_id: string; function_id: string; node: string; assigned_at: number }>("delete from work where id = ? returning *", id).one();
      const outcome = {
        taskId: id, accountId: w.account_id, functionId: w.function_id, at: Date.now(), node: w.node, assignedAt: w.assigned_at, rttMs: 7,
        report: { type: "task.done", taskId: id, status: 202, headers: { "content-type": "text/plain" }, body: btoa("kept"), bodyUploaded: false, log: ["kept line"], durationMs: 4 },
      };
      const body = JSON.stringify(outcome);
      state.storage.sql.exec("insert into outcome (task_id, at, size, body) values (?, ?, ?, ?)", id, outcome.at, body.length, body);
    });
    expect((await taskRecord(token, id)).finished).toBeNull();
    const reader = call(`/v1/task/${id}/result?wait=10`, { token });
    await stub.resync(); // what a fresh instance reads when it starts
    await runDurableObjectAlarm(stub);
    const res = await reader;
    expect(res.status).toBe(202);
    expect(await res.text()).toBe("kept");
    expect(await taskRecord(token, id)).toMatchObject({ status: 202, progress: 100, node: "evicted", capabilities: { networkLatency: 7 } });
    expect((await callJson(`/v1/task/${id}/log`, 200, { token })).log).toEqual(["kept line"]);
    expect(await runInDurableObject(stub, (_o, state) => state.storage.sql.exec("select count(*) as n from outcome").one().n)).toBe(0);
    await agent.close();
  });
});

describe("result reads through the dispatcher", () => {
  it("draws task ids that hash to their function's shard, so a read finds the dispatcher from the id", () => {
    const sharded = { ...env, DISPATCH_SHARDS: "7" };
    for (const fn of ["01aaaaaaaaaaaaaaaaaaaaaaaa", "01bbbbbbbbbbbbbbbbbbbbbbbb", "01cccccccccccccccccccccccc"]) {
      const ids = Array.from({ length: 20 }, () => newTaskId(sharded, fn));
      for (const id of ids) expect(shardOfTask(sharded, id)).toBe(shardOf(sharded, fn));
      expect([...ids].sort()).toEqual(ids); // still in creation order
      expect(new Set(ids).size).toBe(ids.length);
    }
  });

  it("answers 404 at once for another account's running task, and waits for the owner", async () => {
    const agent = await FakeAgent.connect("reads");
    const { token } = await newAccount();
    const other = await newAccount("other");
    const fn = await deployedFunction(token);
    const id = await task(token, fn);
    await agent.next("task.assign");
    const started = Date.now();
    await expectError(call(`/v1/task/${id}/result?wait=5`, { token: other.token }), 404, "not_found");
    expect(Date.now() - started).toBeLessThan(2000);
    const waiting = call(`/v1/task/${id}/result?wait=1`, { token });
    expect([(await waiting).status, await (await waiting).json()]).toEqual([202, { status: 0, progress: 1 }]);
    agent.done(id, "mine");
    expect(await (await call(`/v1/task/${id}/result?wait=5`, { token })).text()).toBe("mine");
    await agent.close();
  });

  it("answers a read that comes after the outcome was recorded from the row it wrote, to the owner only", async () => {
    const agent = await FakeAgent.connect("late-reader");
    const { token, accountId } = await newAccount();
    const other = await newAccount("other");
    const fn = await deployedFunction(token);
    const id = await task(token, fn);
    await agent.next("task.assign");
    agent.done(id, "recorded");
    await eventually(async () => (await taskRecord(token, id)).finished !== null);
    const stub = shardStub(env, shardOfTask(env, id));
    expect(await stub.awaitOwnTask(id, accountId, 0)).toEqual({ row: expect.objectContaining({ id, status: 200, resultBody: "recorded", finishedAt: expect.any(Number) }) });
    expect(await stub.awaitOwnTask(id, other.accountId, 0)).toBeNull();
    expect(await (await call(`/v1/task/${id}/result?wait=5`, { token })).text()).toBe("recorded");
    await expectError(call(`/v1/task/${id}/result?wait=5`, { token: other.token }), 404, "not_found");
    await agent.close();
  });
});
