import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DEFAULT_MAX_PENDING_TASKS } from "../../worker/tasks/admission.js";
import { shardStub } from "../../worker/dispatch/client.js";
import { ADMIN, call, callJson, clearQueue, deployedFunction, expectError, newAccount, newEndpoint, newTrigger, sql, flushedDb } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const post = (token: string, fn: string) => call(`/v1/task/${fn}`, { token, method: "POST" });

/**
 * Gives the account `n` unfinished tasks on another shard, as that shard's slot lease in D1 says
 * (worker/shard-admission/): issuing a thousand through the API would test the clock, not the cap.
 * They are on no dispatcher this test reaches.
 */
const backlog = (accountId: string, n: number) =>
  sql("insert into slot_leases (account_id, shard, held) values (?, 'another-shard', ?) on conflict do update set held = excluded.held", accountId, n);

/** One task of the backlog ends: the other shard gives its slot back. */
const oneEnds = (accountId: string) => sql("update slot_leases set held = held - 1 where account_id = ? and shard = 'another-shard'", accountId);

const unfinished = async (accountId: string) =>
  (await (await flushedDb()).prepare("select count(*) as n from tasks where account_id = ? and finished_at is null").bind(accountId).first<{ n: number }>())!.n;

/** The account's unfinished tasks that this shard created, as the account's usage shows them. */
const pendingOf = async (token: string) => (await callJson("/v1/usage", 200, { token })).pending as number;

describe("quota reserved when a task is issued", () => {
  it("refuses a third task on a plan of two invocations while the first two are still pending", async () => {
    const acct = await newAccount();
    await callJson(`/v1/admin/accounts/${acct.accountId}`, 204, { token: ADMIN, method: "PATCH", json: { plan: "TINY" } });
    const fn = await deployedFunction(acct.token);
    const ep = await newEndpoint(acct.token, fn);
    const agent = await FakeAgent.connect("reserve", { slots: 1 });
    const first = (await callJson(`/v1/task/${fn}`, 201, { token: acct.token, method: "POST" })).id;
    expect((await agent.next("task.assign")).taskId).toBe(first);
    await callJson(`/v1/task/${fn}`, 201, { token: acct.token, method: "POST" }); // queued behind the first
    const err = await expectError(post(acct.token, fn), 402, "quota_exhausted");
    expect(err.message).toContain("0 finished + 2 pending of 2");
    await expectError(call(`/gc/${ep}`, { method: "POST" }), 402, "quota_exhausted");
    expect(await callJson("/v1/usage", 200, { token: acct.token })).toMatchObject({ invocations: 0, pending: 2, remaining: 0 });
    // The first ends: one used, one still reserved.
    agent.done(first, "ok");
    await call(`/v1/task/${first}/result?wait=5`, { token: acct.token });
    await expectError(post(acct.token, fn), 402, "quota_exhausted");
    expect(await unfinished(acct.accountId)).toBe(1);
    await agent.close();
  });

  it("lets a trigger fan-out take no more than the plan's invocations", async () => {
    const acct = await newAccount();
    await callJson(`/v1/admin/accounts/${acct.accountId}`, 204, { token: ADMIN, method: "PATCH", json: { plan: "TINY" } });
    const fn = await deployedFunction(acct.token);
    const next = await deployedFunction(acct.token);
    for (let i = 0; i < 3; i++) await newTrigger(acct.token, { functionId: fn, nextId: next, status: 200 });
    const agent = await FakeAgent.connect("fan-out");
    const first = (await callJson(`/v1/task/${fn}`, 201, { token: acct.token, method: "POST" })).id;
    await agent.next("task.assign");
    agent.done(first, "ok");
    // One finished, so one invocation is left: of the three triggers, one issues its task.
    const child = await agent.next("task.assign");
    expect(await agent.none("task.assign")).toBe(true);
    const children = await (await flushedDb()).prepare("select id from tasks where parent_task_id = ?").bind(first).all<{ id: string }>();
    expect(children.results.map((r) => r.id)).toEqual([child.taskId]);
    await agent.close();
  });

  it("gives a cancelled task's reservation back", async () => {
    const acct = await newAccount();
    await callJson(`/v1/admin/accounts/${acct.accountId}`, 204, { token: ADMIN, method: "PATCH", json: { plan: "TINY" } });
    const doomed = await deployedFunction(acct.token);
    for (let i = 0; i < 2; i++) await callJson(`/v1/task/${doomed}`, 201, { token: acct.token, method: "POST" });
    const other = await deployedFunction(acct.token);
    await expectError(post(acct.token, other), 402, "quota_exhausted");
    await callJson(`/v1/function/${doomed}`, 204, { token: acct.token, method: "DELETE" }); // cancels both, unmetered
    expect((await post(acct.token, other)).status).toBe(201);
  });
});

describe("pending tasks capped per account", () => {
  it("refuses task creation with 429 too_many_pending_tasks and Retry-After at the cap, and accepts again below it", async () => {
    const acct = await newAccount();
    const fn = await deployedFunction(acct.token);
    await backlog(acct.accountId, DEFAULT_MAX_PENDING_TASKS);
    const res = await post(acct.token, fn);
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
    const err = await expectError(res, 429, "too_many_pending_tasks");
    expect(err.message).toContain(`${DEFAULT_MAX_PENDING_TASKS} unfinished tasks`);
    expect(await pendingOf(acct.token)).toBe(0);
    // Another account is not held back by this one's backlog.
    const other = await newAccount("other");
    expect((await post(other.token, await deployedFunction(other.token))).status).toBe(201);
    await oneEnds(acct.accountId);
    expect((await post(acct.token, fn)).status).toBe(201);
    expect(await pendingOf(acct.token)).toBe(1);
  });

  it("lets a flood of anonymous calls to an unlimited endpoint fill the cap exactly, and no further", async () => {
    const acct = await newAccount();
    const fn = await deployedFunction(acct.token);
    const ep = await newEndpoint(acct.token, fn); // dailyLimit -1: unlimited
    await backlog(acct.accountId, DEFAULT_MAX_PENDING_TASKS - 5);
    const answers = await Promise.all(Array.from({ length: 20 }, () => call(`/gc/${ep}`, { method: "POST" })));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(15);
    await expectError(answers.find((r) => r.status === 429)!, 429, "too_many_pending_tasks");
    expect(await pendingOf(acct.token)).toBe(5);
  });

  it("gives a limited endpoint's daily count back when the cap refuses the call", async () => {
    const acct = await newAccount();
    const fn = await deployedFunction(acct.token);
    const ep = await newEndpoint(acct.token, fn, { dailyLimit: 1 });
    await backlog(acct.accountId, DEFAULT_MAX_PENDING_TASKS);
    await expectError(call(`/gc/${ep}`, { method: "POST" }), 429, "too_many_pending_tasks");
    await oneEnds(acct.accountId);
    expect((await call(`/gc/${ep}`, { method: "POST" })).status).toBe(201); // the one call of the day is still there
  });

  it("counts an account's unfinished tasks through an index of them alone, not a scan of its history", async () => {
    const plan = await (await flushedDb()).prepare("explain query plan select count(*) from tasks p where p.account_id = ? and p.finished_at is null").bind("a").all<{ detail: string }>();
    expect(plan.results.map((r) => r.detail)).toEqual(["SEARCH p USING INDEX tasks_account_unfinished (account_id=?)"]);
  });

  it("skips a trigger whose account is at the cap, once: logged, not retried", async () => {
    const agent = await FakeAgent.connect("capped-chain");
    const acct = await newAccount();
    const fn = await deployedFunction(acct.token);
    const next = await deployedFunction(acct.token);
    for (let i = 0; i < 2; i++) await newTrigger(acct.token, { functionId: fn, nextId: next, status: 200 });
    // The first task takes the account's last slot; when it ends, one of its two triggers takes it.
    await backlog(acct.accountId, DEFAULT_MAX_PENDING_TASKS - 1);
    const first = (await callJson(`/v1/task/${fn}`, 201, { token: acct.token, method: "POST" })).id;
    await agent.next("task.assign");
    agent.done(first, "ok");
    expect((await call(`/v1/task/${first}/result?wait=5`, { token: acct.token })).status).toBe(200);
    const child = await agent.next("task.assign");
    const stub = shardStub(env, 0);
    await eventually(async () => (await runInDurableObject(stub, (_o, state) => state.storage.sql.exec("select count(*) as n from chain_due").one().n)) === 0);
    expect(await agent.none("task.assign")).toBe(true);
    const children = await (await flushedDb()).prepare("select id from tasks where parent_task_id = ?").bind(first).all<{ id: string }>();
    expect(children.results.map((r) => r.id)).toEqual([child.taskId]);
    await agent.close();
  });
});
