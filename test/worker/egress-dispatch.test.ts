import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, call, callJson, clearQueue, deployedFunction, expectNoContent, grantEgress, grantPrivileged, newAccount, newEndpoint, newTrigger, runCron, sql, flushedDb } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";
import { shardOf, shardStub } from "../../worker/dispatch/client.js";
import { SWEEP_CRON } from "../../worker/crons.js";
import { SEEN_WITHIN_MS } from "../../worker/dispatch/fleet-reach.js";

// Egress is off unless the operator granted the account, the function asks for it, and the node's
// agent allows it (started with --egress, hello `egress: true`). An agent without it refuses such
// a task, so the dispatcher must never hand it one; a task no node could take fails at once.

const NO_EGRESS = "[dispatcher] the task did not run: no node seen in the last 24 hours allows network egress";
const REVOKED_LINE = "[dispatcher] the task did not run (or was stopped): the operator revoked this account's permission to let functions reach the network";

/** Each test starts from a fleet that never had a node, and an empty queue. */
beforeEach(async () => {
  await FakeAgent.closeAll();
  await sql("delete from nodes");
  await clearQueue(); // the shard reads the nodes table again at its next verdict
});
afterEach(() => FakeAgent.closeAll());

/** A deployed function of a granted account with egress "internet". */
async function egressFunction(account?: { token: string; accountId: string }) {
  const { token, accountId } = account ?? (await newAccount());
  await grantEgress(accountId);
  const fn = await deployedFunction(token);
  await expectNoContent(call(`/v1/function/${fn}/network`, { token, method: "PUT", json: { egress: "internet" } }));
  return { token, accountId, fn };
}

const issue = async (token: string, fn: string) => (await callJson(`/v1/task/${fn}`, 201, { token, json: {} })).id as string;
const pending = async (token: string, id: string) => (await callJson(`/v1/task/${id}`, 200, { token })).progress === 0;

/** The task as its owner reads it once the dispatcher's outcome is in D1. */
const finished = (token: string, id: string) =>
  eventually(async () => {
    const t = await callJson(`/v1/task/${id}`, 200, { token });
    return t.progress === 100 && t;
  }, 10_000); // a loaded CI box can take seconds to commit

async function expectEnded(token: string, id: string, status: number, code: string, line: string) {
  expect(await finished(token, id)).toMatchObject({ status, progress: 100 });
  expect((await callJson(`/v1/task/${id}/log`, 200, { token })).log).toEqual([line]);
  const res = await call(`/v1/task/${id}/result`, { token });
  expect([res.status, await res.json()]).toEqual([status, { error: { code, message: line.replace("[dispatcher] ", "") } }]);
}

describe("placing a task of a function with egress", () => {
  it("assigns it only to an agent whose hello allows egress, with capabilities.egress true; other tasks go anywhere with false", async () => {
    // The plain agents have more free slots: placement would prefer them, were egress not asked.
    const plain = await FakeAgent.connect("plain", { slots: 8 });
    const refusing = await FakeAgent.connect("says-no", { slots: 8, egress: false });
    const outbound = await FakeAgent.connect("outbound", { slots: 1, egress: true });
    const { token, fn } = await egressFunction();
    const [first, second] = [await issue(token, fn), await issue(token, fn)];
    expect(await outbound.next("task.assign", 10_000)).toMatchObject({ taskId: first, capabilities: { egress: true, privileged: false } });
    // The egress node is full: the second waits for it rather than go elsewhere.
    expect(await plain.none("task.assign")).toBe(true);
    expect(await refusing.none("task.assign", 50)).toBe(true);
    expect(await pending(token, second)).toBe(true);
    outbound.done(first, "fetched");
    expect(await outbound.next("task.assign", 10_000)).toMatchObject({ taskId: second, capabilities: { egress: true } });

    const offline = await deployedFunction(token);
    const plainTask = await issue(token, offline);
    const assign = await Promise.any([plain.next("task.assign", 10_000), refusing.next("task.assign", 10_000)]);
    expect(assign).toMatchObject({ taskId: plainTask, capabilities: { egress: false } });
  });

  it("takes egress from the function when the task is issued: switching to none makes the next task an ordinary one", async () => {
    const plain = await FakeAgent.connect("plain", { slots: 4 });
    await (await FakeAgent.connect("outbound", { egress: true })).close(); // seen: egress tasks wait for it
    const { token, fn } = await egressFunction();
    const waiting = await issue(token, fn);
    expect(await plain.none("task.assign")).toBe(true);
    await expectNoContent(call(`/v1/function/${fn}/network`, { token, method: "PUT", json: { egress: "none" } }));
    const next = await issue(token, fn);
    expect(await plain.next("task.assign", 10_000)).toMatchObject({ taskId: next, capabilities: { egress: false } });
    expect(await pending(token, waiting)).toBe(true);
  });
});

describe("POST /v1/task/<function_id> when no node allows egress", () => {
  it("fails the task at once with 503 and a log line saying why, without costing an invocation", async () => {
    await FakeAgent.connect("plain");
    await FakeAgent.connect("says-no", { egress: false });
    const { token, fn } = await egressFunction();
    await expectEnded(token, await issue(token, fn), 503, "no_suitable_node", NO_EGRESS);
    expect(await callJson("/v1/usage", 200, { token })).toMatchObject({ invocations: 0, pending: 0 });
  });

  it("keeps it waiting while the egress node seen recently is offline, and runs it when that node returns", async () => {
    await (await FakeAgent.connect("outbound", { egress: true })).close();
    const plain = await FakeAgent.connect("plain");
    const { token, fn } = await egressFunction();
    const id = await issue(token, fn);
    expect(await plain.none("task.assign")).toBe(true);
    expect(await pending(token, id)).toBe(true);
    const back = await FakeAgent.connect("outbound", { egress: true });
    expect((await back.next("task.assign", 10_000)).taskId).toBe(id);
  });

  it("counts an egress node only while seen in the last 24 hours (the hourly sweep fails what waited for it)", async () => {
    await (await FakeAgent.connect("outbound", { egress: true })).close();
    await FakeAgent.connect("plain");
    const { token, fn } = await egressFunction();
    const id = await issue(token, fn);
    await runCron(SWEEP_CRON, Date.now());
    expect(await pending(token, id)).toBe(true);
    await sql("update nodes set last_seen = ? where id = 'outbound'", Date.now() - SEEN_WITHIN_MS - 60_000);
    await runCron(SWEEP_CRON, Date.now());
    await expectEnded(token, id, 503, "no_suitable_node", NO_EGRESS);
  });

  it("names the combination when egress nodes and privileged nodes exist but none is both", async () => {
    await FakeAgent.connect("outbound", { egress: true });
    await FakeAgent.connect("root", { privileged: true });
    const { token, accountId, fn } = await egressFunction();
    await grantPrivileged(accountId);
    await callJson(`/v1/function/${fn}/capabilities`, 204, { token, json: { privileged: true } });
    await expectEnded(token, await issue(token, fn), 503, "no_suitable_node", "[dispatcher] the task did not run: no node seen in the last 24 hours allows privileged work and network egress on one node");
  });

  it("does the same for every way a task is issued: Prefer: wait, a /gc call, a schedule's try and a trigger", async () => {
    const plain = await FakeAgent.connect("plain");
    const { token, fn } = await egressFunction();
    const res = await call(`/v1/task/${fn}`, { token, json: {}, headers: { prefer: "wait=10" } });
    expect([res.status, await res.json()]).toEqual([503, { error: { code: "no_suitable_node", message: NO_EGRESS.replace("[dispatcher] ", "") } }]);

    const endpoint = await newEndpoint(token, fn);
    expect((await call(`/gc/${endpoint}`, { json: {}, headers: { prefer: "wait=10" } })).status).toBe(503);
    const viaGc = (await callJson(`/gc/${endpoint}`, 201, { json: {} })).id;
    const schedule = (await callJson("/v1/scheduled", 201, { token, json: { functionId: fn, cron: "0 0 1 1 *", timezone: "UTC" } })).id;
    const viaSchedule = (await callJson(`/v1/scheduled/${schedule}/try`, 201, { token, method: "POST" })).id;
    for (const id of [viaGc, viaSchedule]) await expectEnded(token, id, 503, "no_suitable_node", NO_EGRESS);

    const first = await deployedFunction(token);
    await newTrigger(token, { functionId: first, nextId: fn });
    const parent = await issue(token, first);
    expect((await plain.next("task.assign", 10_000)).taskId).toBe(parent);
    plain.done(parent, "ok");
    const child = await eventually(async () => (await (await flushedDb()).prepare("select id from tasks where parent_task_id = ?").bind(parent).first<{ id: string }>()) ?? undefined);
    await expectEnded(token, child.id, 503, "no_suitable_node", NO_EGRESS);
  });
});

describe("PATCH /v1/admin/accounts/<account_id> {egress: false} with tasks in flight", () => {
  it("fails the account's waiting egress tasks with 403, stops the running ones, and leaves other accounts' alone", async () => {
    await (await FakeAgent.connect("seen", { egress: true })).close(); // an egress node the fleet knows: tasks wait for it
    const mine = await egressFunction();
    const theirs = await egressFunction();
    const outbound = await FakeAgent.connect("outbound", { egress: true, slots: 1 });
    const running = await issue(mine.token, mine.fn);
    expect((await outbound.next("task.assign", 10_000)).taskId).toBe(running);
    const waiting = await issue(mine.token, mine.fn);
    const theirTask = await issue(theirs.token, theirs.fn);

    await callJson(`/v1/admin/accounts/${mine.accountId}`, 204, { token: ADMIN, method: "PATCH", json: { egress: false } });

    expect((await outbound.next("task.cancel", 10_000)).taskId).toBe(running);
    for (const id of [running, waiting]) await expectEnded(mine.token, id, 403, "egress_not_allowed", REVOKED_LINE);
    expect(await callJson(`/v1/function/${mine.fn}/network`, 200, { token: mine.token })).toEqual({ egress: "none" });
    // The freed slot takes the other account's egress task, which still runs with egress.
    expect(await outbound.next("task.assign", 10_000)).toMatchObject({ taskId: theirTask, capabilities: { egress: true } });
    outbound.done(running, "late"); // the stopped task's report changes nothing
    expect((await callJson(`/v1/task/${running}`, 200, { token: mine.token })).status).toBe(403);
  });

  it("refuses, at the dispatcher, an egress task that reaches it after the revocation; a new grant lifts that", async () => {
    await (await FakeAgent.connect("seen", { egress: true })).close();
    const { token, accountId, fn } = await egressFunction();
    const id = await issue(token, fn);
    await clearQueue(); // as if the task's enqueue had not arrived yet
    await grantEgress(accountId, false);
    const outbound = await FakeAgent.connect("outbound", { egress: true });
    const work = { id, kind: "task" as const, accountId, functionId: fn, lang: "py", privileged: false, egress: true, cpu: 1, mem: 256, timeoutS: 30, payload: { type: "task.assign", taskId: id } };
    await shardStub(env, shardOf(env, fn)).enqueue([work]);
    await expectEnded(token, id, 403, "egress_not_allowed", REVOKED_LINE);
    expect(await outbound.none("task.assign")).toBe(true);
    await grantEgress(accountId);
    const again = await issue(token, fn);
    expect((await outbound.next("task.assign", 10_000)).taskId).toBe(again);
  });
});

describe("GET /v1/admin/nodes", () => {
  it("shows whether each node allows egress, connected or not", async () => {
    await FakeAgent.connect("outbound", { egress: true });
    await (await FakeAgent.connect("plain")).close();
    const fleet = await callJson<{ id: string; egress: boolean; connected: boolean }[]>("/v1/admin/nodes", 200, { token: ADMIN });
    expect(fleet.map(({ id, egress, connected }) => ({ id, egress, connected }))).toEqual([
      { id: "outbound", egress: true, connected: true },
      { id: "plain", egress: false, connected: false },
    ]);
  });
});
