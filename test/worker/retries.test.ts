import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, expectError, expectNoContent, flushedDb, newAccount, newFunction, newTrigger, sql } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";
import { backoffMs } from "../../worker/retries/backoff.js";
import { newTaskId, shardStub } from "../../worker/dispatch/client.js";
import { openDb } from "../../worker/db/client.js";
import type { Bindings } from "../../worker/env.js";
import { HOUR_MS } from "../../worker/lib/time.js";
import { archiveTasks } from "../../worker/task-history/archiver.js";
import { archiveAfterMs } from "../../worker/task-history/window.js";

/** Retry state lives in the dispatcher's storage as long as the test file: no test may inherit another's waiting retries. */
async function clearRetries() {
  await runInDurableObject(shardStub(env, 0), (_o, state) => {
    state.storage.sql.exec("delete from retry_run");
    state.storage.sql.exec("delete from dead_letter");
  });
  await clearQueue();
}

beforeEach(clearRetries);
afterEach(() => FakeAgent.closeAll());

const setRetry = (token: string, fn: string, json: Record<string, unknown>) => expectNoContent(call(`/v1/function/${fn}/retry`, { token, method: "PUT", json }));
const record = (token: string, id: string) => callJson(`/v1/task/${id}`, 200, { token });
const logOf = async (token: string, id: string) => (await callJson<{ log: string[] }>(`/v1/task/${id}/log`, 200, { token })).log;
/** A retry waits at least 0.8 × backoff (1 s here, doubling): well within these. */
const RETRY_WITHIN_MS = 4_000;

describe("GET /v1/function/<id>/retry", () => {
  it("answers the defaults: one attempt, backoff 10, no dead letter", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    expect(await callJson(`/v1/function/${fn}/retry`, 200, { token })).toEqual({ maxAttempts: 1, backoffSeconds: 10, deadLetterFunctionId: null });
  });

  it("answers 404 for another account's function", async () => {
    const { token } = await newAccount();
    const other = await newAccount("other");
    const fn = await newFunction(other.token);
    await expectError(call(`/v1/function/${fn}/retry`, { token }), 404, "not_found");
  });
});

describe("PUT /v1/function/<id>/retry", () => {
  it("replaces the policy", async () => {
    const { token } = await newAccount();
    const [fn, dl] = [await newFunction(token), await newFunction(token)];
    await setRetry(token, fn, { maxAttempts: 5, backoffSeconds: 3600, deadLetterFunctionId: dl });
    expect(await callJson(`/v1/function/${fn}/retry`, 200, { token })).toEqual({ maxAttempts: 5, backoffSeconds: 3600, deadLetterFunctionId: dl });
    await setRetry(token, fn, { maxAttempts: 1, backoffSeconds: 1, deadLetterFunctionId: null });
    expect(await callJson(`/v1/function/${fn}/retry`, 200, { token })).toEqual({ maxAttempts: 1, backoffSeconds: 1, deadLetterFunctionId: null });
  });

  it.each([
    [{ maxAttempts: 6, backoffSeconds: 10, deadLetterFunctionId: null }, "maxAttempts"],
    [{ maxAttempts: 0, backoffSeconds: 10, deadLetterFunctionId: null }, "maxAttempts"],
    [{ maxAttempts: 2, backoffSeconds: 0, deadLetterFunctionId: null }, "backoffSeconds"],
    [{ maxAttempts: 2, backoffSeconds: 3601, deadLetterFunctionId: null }, "backoffSeconds"],
    [{ maxAttempts: 2.5, backoffSeconds: 10, deadLetterFunctionId: null }, "maxAttempts"],
    [{ maxAttempts: 2, backoffSeconds: 10 }, "deadLetterFunctionId"],
    [{ maxAttempts: 2, backoffSeconds: 10, deadLetterFunctionId: null, retries: 3 }, "retries"],
  ])("refuses %j naming %s, and keeps the policy", async (json, field) => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    const body = await expectError(call(`/v1/function/${fn}/retry`, { token, method: "PUT", json }), 400, "validation_failed");
    expect(JSON.stringify(body)).toContain(field);
    expect((await callJson(`/v1/function/${fn}/retry`, 200, { token })).maxAttempts).toBe(1);
  });

  it("answers 404 for a dead-letter function of another account", async () => {
    const { token } = await newAccount();
    const other = await newAccount("other");
    const [fn, theirs] = [await newFunction(token), await newFunction(other.token)];
    await expectError(call(`/v1/function/${fn}/retry`, { token, method: "PUT", json: { maxAttempts: 2, backoffSeconds: 1, deadLetterFunctionId: theirs } }), 404, "not_found");
  });
});

describe("retries of asynchronous tasks", () => {
  it("retries a task that fails twice, then records its success, every attempt's log and three invocations", async () => {
    const agent = await FakeAgent.connect("retry-twice");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await setRetry(token, fn, { maxAttempts: 3, backoffSeconds: 1, deadLetterFunctionId: null });
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, method: "POST" });
    expect((await agent.next("task.assign")).taskId).toBe(id);
    agent.done(id, "boom", 500, { log: ["first try"] });
    expect((await agent.next("task.assign", RETRY_WITHIN_MS)).taskId).toBe(id);
    expect(await record(token, id)).toMatchObject({ status: 0, attempts: 1 });
    agent.done(id, "timeout upstream", 503, { log: ["second try"] });
    expect((await agent.next("task.assign", RETRY_WITHIN_MS)).taskId).toBe(id);
    agent.done(id, "fine", 200, { log: ["third try"] });
    const done = await eventually(async () => {
      const r = await record(token, id);
      return r.progress === 100 && r;
    });
    expect(done).toMatchObject({ status: 200, attempts: 3 });
    expect(await logOf(token, id)).toEqual(["--- attempt 1 ---", "first try", "--- attempt 2 ---", "second try", "--- attempt 3 ---", "third try"]);
    expect(await (await call(`/v1/task/${id}/result`, { token })).text()).toBe("fine");
    expect((await callJson("/v1/usage", 200, { token })).invocations).toBe(3);
    await agent.close();
  });

  it("holds the backoff in the dispatcher's storage and alarm, so a fresh instance still retries", async () => {
    const agent = await FakeAgent.connect("retry-alarm");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await setRetry(token, fn, { maxAttempts: 2, backoffSeconds: 2, deadLetterFunctionId: null });
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, method: "POST" });
    await agent.next("task.assign");
    const failedAt = Date.now();
    agent.done(id, "boom", 500);
    const stored = await eventually(() =>
      runInDurableObject(shardStub(env, 0), async (_o, state) => {
        const [row] = state.storage.sql.exec<{ run: string }>("select run from retry_run where task_id = ?", id).toArray();
        const run = row && (JSON.parse(row.run) as { due: number | null; attempt: number });
        return run?.due ? { run, alarm: await state.storage.getAlarm(), queued: state.storage.sql.exec("select id from work where id = ?", id).toArray().length } : undefined;
      }),
    );
    // 2 s ± 20 %, waiting outside the queue, with the alarm set no later than it is due.
    expect(stored.run.attempt).toBe(2);
    expect(stored.run.due).toBeGreaterThanOrEqual(failedAt + 1600);
    expect(stored.queued).toBe(0);
    expect(stored.alarm).not.toBeNull();
    expect(stored.alarm!).toBeLessThanOrEqual(stored.run.due!);
    // A fresh instance reads the waiting retry from storage and still runs it.
    await shardStub(env, 0).resync();
    // Nothing comes before it is due (a sleeping request would not survive the fresh instance either).
    expect(await agent.none("task.assign", Math.max(0, stored.run.due! - Date.now() - 200))).toBe(true);
    expect((await agent.next("task.assign", RETRY_WITHIN_MS)).taskId).toBe(id);
    agent.done(id, "fine");
    await eventually(async () => (await record(token, id)).attempts === 2);
    await agent.close();
  });

  it("retries a task that ran past its timeout without a report (the dispatcher's own 504)", async () => {
    const agent = await FakeAgent.connect("retry-timeout");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await setRetry(token, fn, { maxAttempts: 2, backoffSeconds: 1, deadLetterFunctionId: null });
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, method: "POST" });
    await agent.next("task.assign");
    // Its deadline (timeout + grace) passes: the row says so, and the alarm runs.
    await runInDurableObject(shardStub(env, 0), (_o, state) => state.storage.sql.exec("update work set deadline = 1 where id = ?", id));
    await shardStub(env, 0).resync();
    await runDurableObjectAlarm(shardStub(env, 0));
    expect((await agent.next("task.cancel")).taskId).toBe(id);
    expect((await agent.next("task.assign", RETRY_WITHIN_MS)).taskId).toBe(id);
    agent.done(id, "in time now", 200, { log: ["quick this time"] });
    await eventually(async () => (await record(token, id)).progress === 100);
    expect(await record(token, id)).toMatchObject({ status: 200, attempts: 2 });
    expect(await logOf(token, id)).toEqual(["--- attempt 1 ---", "[dispatcher] the task ran past its timeout", "--- attempt 2 ---", "quick this time"]);
    await agent.close();
  });

  it("keeps a task waiting for its retry pending, and held by its shard for the orphan sweep", async () => {
    const agent = await FakeAgent.connect("retry-waiting");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await setRetry(token, fn, { maxAttempts: 2, backoffSeconds: 60, deadLetterFunctionId: null });
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, method: "POST" });
    await agent.next("task.assign");
    agent.done(id, "boom", 500);
    await eventually(async () => (await record(token, id)).attempts === 1);
    expect(await record(token, id)).toMatchObject({ status: 0, progress: 0 });
    expect(await callJson(`/v1/task/${id}/result`, 202, { token })).toEqual({ status: 0, progress: 0 });
    expect(await shardStub(env, 0).held([id])).toEqual([id]);
    await agent.close();
  });

  it("forgets a waiting retry when its function is deleted: the task ends cancelled", async () => {
    const agent = await FakeAgent.connect("retry-deleted");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await setRetry(token, fn, { maxAttempts: 3, backoffSeconds: 1, deadLetterFunctionId: null });
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, method: "POST" });
    await agent.next("task.assign");
    agent.done(id, "boom", 500);
    await eventually(async () => (await record(token, id)).attempts === 1);
    await expectNoContent(call(`/v1/function/${fn}`, { token, method: "DELETE" }));
    expect(await record(token, id)).toMatchObject({ status: 410, progress: 100 });
    expect(await shardStub(env, 0).held([id])).toEqual([]);
    expect(await agent.none("task.assign", 2500)).toBe(true);
    await agent.close();
  });

  it("keeps counting attempts when the agent running one crashes and another reconnects", async () => {
    const first = await FakeAgent.connect("crashing-node");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await setRetry(token, fn, { maxAttempts: 3, backoffSeconds: 1, deadLetterFunctionId: null });
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, method: "POST" });
    await first.next("task.assign");
    first.done(id, "boom", 500, { log: ["attempt one"] });
    // Attempt 2 starts, then its agent goes away without a report: it runs again as attempt 2.
    expect((await first.next("task.assign", RETRY_WITHIN_MS)).taskId).toBe(id);
    await first.close();
    const second = await FakeAgent.connect("crashing-node");
    expect((await second.next("task.assign")).taskId).toBe(id);
    second.done(id, "fine", 200, { log: ["attempt two, again"] });
    const done = await eventually(async () => {
      const r = await record(token, id);
      return r.progress === 100 && r;
    });
    expect(done).toMatchObject({ status: 200, attempts: 2 });
    expect(await logOf(token, id)).toEqual(["--- attempt 1 ---", "attempt one", "--- attempt 2 ---", "attempt two, again"]);
    await second.close();
  });

  it("does not retry a synchronous call (Prefer: wait)", async () => {
    const agent = await FakeAgent.connect("retry-sync");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await setRetry(token, fn, { maxAttempts: 3, backoffSeconds: 1, deadLetterFunctionId: null });
    const answer = call(`/v1/task/${fn}`, { token, method: "POST", headers: { prefer: "wait=10" } });
    const assign = await agent.next("task.assign");
    agent.done(assign.taskId, "boom", 500);
    const res = await answer;
    expect(res.status).toBe(500);
    expect(await res.text()).toBe("boom");
    expect(await agent.none("task.assign", 2500)).toBe(true);
    expect(await record(token, assign.taskId)).toMatchObject({ status: 500, attempts: 1 });
    await agent.close();
  });

  it("fires the function's triggers once, on the final outcome", async () => {
    const agent = await FakeAgent.connect("retry-trigger");
    const { token } = await newAccount();
    const [fn, next] = [await deployedFunction(token), await deployedFunction(token)];
    await setRetry(token, fn, { maxAttempts: 2, backoffSeconds: 1, deadLetterFunctionId: null });
    await newTrigger(token, { functionId: fn, nextId: next, status: 500 });
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, method: "POST" });
    await agent.next("task.assign");
    agent.done(id, "boom", 500);
    // The retry, not the trigger's task, comes next.
    expect(await agent.next("task.assign", RETRY_WITHIN_MS)).toMatchObject({ taskId: id, functionId: fn });
    agent.done(id, "boom again", 500);
    const chained = await agent.next("task.assign");
    expect(chained.functionId).toBe(next);
    agent.done(chained.taskId, "ok");
    expect(await agent.none("task.assign", 1500)).toBe(true);
    await agent.close();
  });
});

describe("dead letters", () => {
  it("sends a task whose attempts ran out to the dead-letter function, with its input, status, attempts and log tail", async () => {
    const agent = await FakeAgent.connect("dead-letter");
    const { token } = await newAccount();
    const [fn, dl] = [await deployedFunction(token), await deployedFunction(token)];
    await setRetry(token, fn, { maxAttempts: 2, backoffSeconds: 1, deadLetterFunctionId: dl });
    const { id } = await callJson(`/v1/task/${fn}?order=7`, 201, { token, method: "POST", json: { item: "book" } });
    await agent.next("task.assign");
    agent.done(id, "boom", 500, { log: ["no stock"] });
    await agent.next("task.assign", RETRY_WITHIN_MS);
    agent.done(id, "still boom", 502, { log: ["still no stock"] });
    const letter = await agent.next("task.assign", RETRY_WITHIN_MS);
    expect(letter.functionId).toBe(dl);
    expect(letter.input).toMatchObject({ method: "POST", headers: { "content-type": "application/json" } });
    const body = JSON.parse(letter.input!.body!);
    expect(body).toEqual({
      taskId: id,
      functionId: fn,
      status: 502,
      attempts: 2,
      input: { method: "POST", query: { order: "7" }, headers: expect.objectContaining({ "content-type": "application/json" }), contentType: "application/json", body: btoa('{"item":"book"}') },
      logTail: "--- attempt 1 ---\nno stock\n--- attempt 2 ---\nstill no stock",
    });
    expect(await record(token, letter.taskId)).toMatchObject({ functionId: dl, parentTaskId: id });
    agent.done(letter.taskId, "noted");
    expect(await agent.none("task.assign", 1500)).toBe(true);
    await agent.close();
  });

  it("sends the letter of a failed task whose record moved to the archive before the letter went", async () => {
    const agent = await FakeAgent.connect("dead-letter-archived");
    const { token, accountId } = await newAccount();
    const [fn, dl] = [await deployedFunction(token), await deployedFunction(token)];
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, method: "POST", json: { item: "book" } });
    await agent.next("task.assign");
    agent.done(id, "boom", 500, { log: ["no stock"] });
    await eventually(async () => (await record(token, id)).progress === 100);
    await flushedDb();
    // An hour after its finish the record leaves D1 (task-history/window.ts).
    const bindings = env as unknown as Bindings;
    await archiveTasks(openDb(bindings), env.BUCKET, archiveAfterMs(bindings), Date.now() + 2 * HOUR_MS, { chunkSize: 1 });
    expect(await env.DB.prepare("select id from tasks where id = ?").bind(id).first()).toBeNull();
    // Its letter, as the shard plans it, still waiting (its sends failed until now, say): the alarm sends it.
    await runInDurableObject(shardStub(env, 0), (_o, state) => {
      state.storage.sql.exec("insert into dead_letter (task_id, letter) values (?, ?)", id, JSON.stringify({ taskId: id, accountId, functionId: dl, letterId: newTaskId(bindings, dl) }));
    });
    await shardStub(env, 0).resync();
    await runDurableObjectAlarm(shardStub(env, 0));
    const letter = await agent.next("task.assign", RETRY_WITHIN_MS);
    expect(letter.functionId).toBe(dl);
    expect(JSON.parse(letter.input!.body!)).toMatchObject({ taskId: id, functionId: fn, status: 500, logTail: expect.stringContaining("no stock") });
    await agent.close();
  });

  it("sends none for a task at its chain's hop limit", async () => {
    const agent = await FakeAgent.connect("dead-letter-hops");
    const { token } = await newAccount();
    const [fn, dl] = [await deployedFunction(token), await deployedFunction(token)];
    await setRetry(token, fn, { maxAttempts: 1, backoffSeconds: 1, deadLetterFunctionId: dl });
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, method: "POST" });
    // As the tenth hop of a chain would be.
    await sql("update tasks set hop = 10 where id = ?", id);
    await agent.next("task.assign");
    agent.done(id, "boom", 500);
    expect(await agent.none("task.assign", 2000)).toBe(true);
    expect(await record(token, id)).toMatchObject({ status: 500, attempts: 1 });
    await agent.close();
  });

  it("does not retry a failing dead letter, nor send it to another dead letter", async () => {
    const agent = await FakeAgent.connect("dead-letter-fails");
    const { token } = await newAccount();
    const [fn, dl] = [await deployedFunction(token), await deployedFunction(token)];
    await setRetry(token, fn, { maxAttempts: 1, backoffSeconds: 1, deadLetterFunctionId: dl });
    // The dead-letter function's own policy would retry and dead-letter its asynchronous tasks.
    await setRetry(token, dl, { maxAttempts: 3, backoffSeconds: 1, deadLetterFunctionId: dl });
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, method: "POST" });
    await agent.next("task.assign");
    agent.done(id, "boom", 500);
    const letter = await agent.next("task.assign");
    expect(letter.functionId).toBe(dl);
    agent.done(letter.taskId, "the dead letter failed too", 500);
    expect(await agent.none("task.assign", 2500)).toBe(true);
    await eventually(async () => {
      const r = await record(token, letter.taskId);
      return r.progress === 100 && r.status === 500 && r.attempts === 1;
    });
    await agent.close();
  });
});

describe("backoff before attempt n", () => {
  it("is backoffSeconds × 2^(n−2), ±20 % jitter, at most one hour", () => {
    const low = () => 0;
    const high = () => 0.999999;
    expect([2, 3, 4, 5].map((n) => backoffMs(10, n, low))).toEqual([8_000, 16_000, 32_000, 64_000]);
    expect([2, 3, 4, 5].map((n) => Math.round(backoffMs(10, n, high) / 1000))).toEqual([12, 24, 48, 96]);
    expect(backoffMs(10, 3, () => 0.5)).toBe(20_000);
    expect(backoffMs(3600, 5, high)).toBe(3_600_000);
    expect(backoffMs(1000, 4, low)).toBe(3_200_000);
  });
});
