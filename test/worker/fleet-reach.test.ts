import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, grantPrivileged, newAccount, newEndpoint, newTrigger, runCron, sql, flushedDb } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";
import { SWEEP_CRON } from "../../worker/crons.js";
import { SEEN_WITHIN_MS } from "../../worker/dispatch/fleet-reach.js";

// A task that no node of the fleet could ever take used to wait for ever (40 privileged tasks
// were pending until their function was deleted). Now it fails at once with 503, unless a node
// that could take it was seen in the last 24 hours.

const NO_PRIVILEGED = "[dispatcher] the task did not run: no node seen in the last 24 hours allows privileged work";
const noLang = (lang: string) => `[dispatcher] the task did not run: no node seen in the last 24 hours serves the language ${lang}`;

/** Each test starts from a fleet that never had a node, and an empty queue. */
beforeEach(async () => {
  await FakeAgent.closeAll();
  await sql("delete from nodes");
  await clearQueue(); // the shard reads the nodes table again at its next verdict
});
afterEach(() => FakeAgent.closeAll());

async function privilegedFunction(lang = "PY") {
  const { token, accountId } = await newAccount();
  await grantPrivileged(accountId);
  const fn = await deployedFunction(token, { lang });
  await callJson(`/v1/function/${fn}/capabilities`, 204, { token, json: { privileged: true } });
  return { token, fn };
}

/** The task as its owner reads it once it has finished. */
const finished = (token: string, id: string) =>
  eventually(async () => {
    const t = await callJson(`/v1/task/${id}`, 200, { token });
    return t.progress === 100 && t;
  }, 10_000); // a loaded CI box can take seconds to commit

async function expectUnreachable(token: string, id: string, line: string) {
  expect(await finished(token, id)).toMatchObject({ status: 503, progress: 100, node: null });
  expect((await callJson(`/v1/task/${id}/log`, 200, { token })).log).toEqual([line]);
  const res = await call(`/v1/task/${id}/result`, { token });
  expect([res.status, await res.json()]).toEqual([503, { error: { code: "no_suitable_node", message: line.replace("[dispatcher] ", "") } }]);
}

const pending = async (token: string, id: string) => (await callJson(`/v1/task/${id}`, 200, { token })).progress === 0;

describe("POST /v1/task/<function_id> when no node could take the task", () => {
  it("fails a privileged task at once with 503 and a log line when no privileged node was ever seen", async () => {
    await FakeAgent.connect("plain", { privileged: false });
    const { token, fn } = await privilegedFunction();
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, json: {} });
    await expectUnreachable(token, id, NO_PRIVILEGED);
    // It never ran: it costs no invocation of the plan.
    expect(await callJson("/v1/usage", 200, { token })).toMatchObject({ invocations: 0, pending: 0 });
  });

  it("answers a synchronous caller (Prefer: wait) with the 503 outcome", async () => {
    await FakeAgent.connect("plain", { privileged: false });
    const { token, fn } = await privilegedFunction();
    const res = await call(`/v1/task/${fn}`, { token, json: {}, headers: { prefer: "wait=10" } });
    expect([res.status, await res.json()]).toEqual([503, { error: { code: "no_suitable_node", message: NO_PRIVILEGED.replace("[dispatcher] ", "") } }]);
  });

  it("keeps a privileged task waiting while the privileged node seen recently is offline, and runs it when it returns", async () => {
    await (await FakeAgent.connect("priv", { privileged: true })).close();
    await FakeAgent.connect("plain", { privileged: false });
    const { token, fn } = await privilegedFunction();
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, json: {} });
    expect(await pending(token, id)).toBe(true);
    const priv = await FakeAgent.connect("priv", { privileged: true });
    expect((await priv.next("task.assign", 10_000)).taskId).toBe(id);
  });

  it("fails a task for a language no node serves, and runs one for a language a node serves", async () => {
    const agent = await FakeAgent.connect("py-only", { langs: ["py"] });
    const { token } = await newAccount();
    const [js, py] = [await deployedFunction(token, { lang: "JS" }), await deployedFunction(token, { lang: "PY" })];
    const jsTask = (await callJson(`/v1/task/${js}`, 201, { token, json: {} })).id;
    await expectUnreachable(token, jsTask, noLang("js"));
    const pyTask = (await callJson(`/v1/task/${py}`, 201, { token, json: {} })).id;
    expect((await agent.next("task.assign", 10_000)).taskId).toBe(pyTask);
  });

  it("does not count a disabled node, nor one last seen more than 24 hours ago", async () => {
    await (await FakeAgent.connect("old-js", { langs: ["js"] })).close();
    await (await FakeAgent.connect("off-js", { langs: ["js"] })).close();
    await FakeAgent.connect("py-only", { langs: ["py"] });
    await sql("update nodes set last_seen = ? where id = 'old-js'", Date.now() - SEEN_WITHIN_MS - 60_000);
    await sql("update nodes set disabled = 1 where id = 'off-js'");
    await clearQueue();
    const { token } = await newAccount();
    const fn = await deployedFunction(token, { lang: "JS" });
    await expectUnreachable(token, (await callJson(`/v1/task/${fn}`, 201, { token, json: {} })).id, noLang("js"));
  });

  it("keeps tasks waiting in a fleet that never had a node (its first agent takes them)", async () => {
    const { token, fn } = await privilegedFunction();
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, json: {} });
    expect(await pending(token, id)).toBe(true);
    const first = await FakeAgent.connect("first", { privileged: true });
    expect((await first.next("task.assign", 10_000)).taskId).toBe(id);
  });
});

describe("other ways a task is issued follow the same rule", () => {
  it("a /gc call, a schedule's try and a trigger's task for a language no node serves fail with 503", async () => {
    const agent = await FakeAgent.connect("py-only", { langs: ["py"] });
    const { token } = await newAccount();
    const [py, js] = [await deployedFunction(token, { lang: "PY" }), await deployedFunction(token, { lang: "JS" })];
    const endpoint = await newEndpoint(token, js);
    const viaGc = (await callJson(`/gc/${endpoint}`, 201, { json: {} })).id;
    const schedule = (await callJson("/v1/scheduled", 201, { token, json: { functionId: js, cron: "0 0 1 1 *", timezone: "UTC" } })).id;
    const viaSchedule = (await callJson(`/v1/scheduled/${schedule}/try`, 201, { token, method: "POST" })).id;
    for (const id of [viaGc, viaSchedule]) await expectUnreachable(token, id, noLang("js"));
    // A synchronous /gc call gets the outcome itself.
    const sync = await call(`/gc/${endpoint}`, { json: {}, headers: { prefer: "wait=10" } });
    expect(sync.status).toBe(503);

    await newTrigger(token, { functionId: py, nextId: js });
    const parent = (await callJson(`/v1/task/${py}`, 201, { token, json: {} })).id;
    expect((await agent.next("task.assign", 10_000)).taskId).toBe(parent);
    agent.done(parent, "ok");
    const child = await eventually(async () => (await (await flushedDb()).prepare("select id from tasks where parent_task_id = ?").bind(parent).first<{ id: string }>()) ?? undefined);
    await expectUnreachable(token, child.id, noLang("js"));
  });
});

describe("hourly sweep (Cron Trigger) of waiting tasks", () => {
  it("fails waiting tasks once the last node that could take them passes 24 hours unseen; others keep waiting", async () => {
    await (await FakeAgent.connect("priv", { privileged: true })).close();
    await (await FakeAgent.connect("plain", { privileged: false })).close();
    const { token, fn } = await privilegedFunction();
    const plainFn = await deployedFunction(token);
    const [privTask, plainTask] = [(await callJson(`/v1/task/${fn}`, 201, { token, json: {} })).id, (await callJson(`/v1/task/${plainFn}`, 201, { token, json: {} })).id];
    expect(await pending(token, privTask)).toBe(true);

    await runCron(SWEEP_CRON, Date.now());
    expect(await pending(token, privTask)).toBe(true); // the privileged node was seen a moment ago

    await sql("update nodes set last_seen = ? where id = 'priv'", Date.now() - SEEN_WITHIN_MS - 60_000);
    await runCron(SWEEP_CRON, Date.now());
    await expectUnreachable(token, privTask, NO_PRIVILEGED);
    expect(await pending(token, plainTask)).toBe(true);
  });
});
