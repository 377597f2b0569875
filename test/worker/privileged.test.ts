import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, call, callJson, clearQueue, deployedFunction, expectError, expectNoContent, grantPrivileged, newAccount, newFunction, flushedDb } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";
import { shardOf, shardStub } from "../../worker/dispatch/client.js";

// A privileged function runs as root under runc, outside gVisor, on a node started with
// --privileged. Before the grant existed, any account could make its functions privileged.

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const REFUSED = {
  error: { code: "privileged_not_allowed", message: "privileged functions are not allowed for this account; the operator must grant them first" },
};
const REVOKED_LINE = "[dispatcher] the task did not run (or was stopped): the operator revoked this account's permission to run privileged functions";

const capabilities = (token: string, fn: string, json: unknown) => call(`/v1/function/${fn}/capabilities`, { token, json });
const privilegedOf = async (token: string, fn: string) => (await callJson(`/v1/function/${fn}/capabilities`, 200, { token })).privileged as boolean;
const editAccount = (accountId: string, json: unknown, token: string | null = ADMIN) => call(`/v1/admin/accounts/${accountId}`, { token, method: "PATCH", json });

/** The task as its owner reads it once the dispatcher's outcome is in D1. */
const finished = (token: string, id: string) =>
  eventually(async () => {
    const t = await callJson(`/v1/task/${id}`, 200, { token });
    return t.progress === 100 && t;
  }, 10_000); // a loaded CI box can take seconds to commit

describe("POST /v1/function/<function_id>/capabilities with privileged", () => {
  it("answers 403 privileged_not_allowed to an account the operator did not grant, for privileged and privilaged, and changes nothing", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    for (const json of [{ privileged: true }, { privilaged: true }, { privileged: true, privilaged: true, timeout: 60 }]) {
      const res = await capabilities(token, fn, json);
      expect([res.status, await res.json()], JSON.stringify(json)).toEqual([403, REFUSED]);
    }
    expect(await callJson(`/v1/function/${fn}/capabilities`, 200, { token })).toMatchObject({ timeout: 30, privileged: false });
    // Everything else, and privileged: false, stays allowed.
    await expectNoContent(capabilities(token, fn, { privileged: false, timeout: 60 }));
  });

  it("answers 204 once the operator granted the account, and 403 again after the grant is revoked", async () => {
    const { token, accountId } = await newAccount();
    const fn = await newFunction(token);
    await grantPrivileged(accountId);
    await expectNoContent(capabilities(token, fn, { privileged: true }));
    expect(await privilegedOf(token, fn)).toBe(true);
    await grantPrivileged(accountId, false);
    const res = await capabilities(token, fn, { privilaged: true });
    expect([res.status, await res.json()]).toEqual([403, REFUSED]);
  });

  it("answers 404, not 403, for another account's function", async () => {
    const owner = await newAccount();
    const fn = await newFunction(owner.token);
    const { token } = await newAccount();
    await expectError(capabilities(token, fn, { privileged: true }), 404, "not_found");
  });

  it("is the only way in: function create and edit refuse privileged as an unknown field", async () => {
    const { token } = await newAccount();
    for (const field of ["privileged", "privilaged"]) {
      await expectError(call("/v1/function", { token, json: { name: "x", lang: "PY", type: "DOCKER", [field]: true } }), 400, "validation_failed");
      const fn = await newFunction(token);
      await expectError(call(`/v1/function/${fn}`, { token, method: "PATCH", json: { [field]: true } }), 400, "validation_failed");
    }
  });
});

describe("PATCH /v1/admin/accounts/<account_id> with privileged", () => {
  it("grants (204), is off by default, and refuses a non-boolean, an unknown account and a missing admin token", async () => {
    const { token, accountId } = await newAccount();
    const fn = await newFunction(token);
    expect((await capabilities(token, fn, { privileged: true })).status).toBe(403);
    expect(await callJson(`/v1/admin/accounts/${accountId}`, 200, { token: ADMIN })).toMatchObject({ privileged: false });
    await expectNoContent(editAccount(accountId, { privileged: true }));
    expect(await callJson(`/v1/admin/accounts/${accountId}`, 200, { token: ADMIN })).toMatchObject({ privileged: true });
    await expectNoContent(capabilities(token, fn, { privileged: true }));
    expect((await expectError(editAccount(accountId, { privileged: "yes" }), 400, "validation_failed")).details?.map((d) => d.field)).toEqual(["privileged"]);
    await expectError(editAccount("nosuchaccount", { privileged: true }), 404, "not_found");
    await expectError(editAccount(accountId, { privileged: true }, token), 401, "unauthorized");
    // With the plan in the same body, both apply.
    await expectNoContent(editAccount(accountId, { plan: "TINY", privileged: true }));
    expect(await (await flushedDb()).prepare("select plan, privileged from accounts where id = ?").bind(accountId).first()).toEqual({ plan: "TINY", privileged: 1 });
  });

  it("revoking clears the flag on the account's functions, fails their waiting privileged tasks with 403 and stops the running ones", async () => {
    await (await FakeAgent.connect("priv-seen", { privileged: true })).close(); // a privileged node the fleet knows: tasks wait for it
    const { token, accountId } = await newAccount();
    await grantPrivileged(accountId);
    const [running, waiting] = [await deployedFunction(token), await deployedFunction(token)];
    for (const fn of [running, waiting]) await expectNoContent(capabilities(token, fn, { privileged: true }));
    const other = await newAccount(); // another granted account is not touched
    await grantPrivileged(other.accountId);
    const theirs = await deployedFunction(other.token);
    await expectNoContent(capabilities(other.token, theirs, { privileged: true }));

    const agent = await FakeAgent.connect("priv-node", { privileged: true, slots: 1 });
    const runningTask = (await callJson(`/v1/task/${running}`, 201, { token, json: {} })).id;
    expect((await agent.next("task.assign", 10_000)).taskId).toBe(runningTask);
    const waitingTask = (await callJson(`/v1/task/${waiting}`, 201, { token, json: {} })).id;
    const theirTask = (await callJson(`/v1/task/${theirs}`, 201, { token: other.token, json: {} })).id;

    await grantPrivileged(accountId, false);

    expect((await agent.next("task.cancel", 10_000)).taskId).toBe(runningTask);
    for (const id of [runningTask, waitingTask]) {
      expect(await finished(token, id)).toMatchObject({ status: 403, progress: 100 });
      expect((await callJson(`/v1/task/${id}/log`, 200, { token })).log).toEqual([REVOKED_LINE]);
      const res = await call(`/v1/task/${id}/result`, { token });
      expect([res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([403, "privileged_not_allowed"]);
    }
    for (const fn of [running, waiting]) expect(await privilegedOf(token, fn)).toBe(false);
    expect(await privilegedOf(other.token, theirs)).toBe(true);
    expect((await callJson(`/v1/task/${theirTask}`, 200, { token: other.token })).progress).toBeLessThan(100);

    // The function's next task is an ordinary one: it runs unprivileged.
    agent.done(runningTask, "late"); // the cancelled task's report changes nothing
    const next = (await callJson(`/v1/task/${running}`, 201, { token, json: {} })).id;
    let assign = await agent.next("task.assign", 10_000);
    if (assign.taskId === theirTask) {
      agent.done(theirTask, "ok");
      assign = await agent.next("task.assign", 10_000);
    }
    expect(assign).toMatchObject({ taskId: next, capabilities: { privileged: false } });
    expect((await callJson(`/v1/task/${runningTask}`, 200, { token })).status).toBe(403);
  });

  it("refuses, at the dispatcher, a privileged task that reaches it after the revocation (created just before it)", async () => {
    await (await FakeAgent.connect("priv-seen", { privileged: true })).close();
    const { token, accountId } = await newAccount();
    await grantPrivileged(accountId);
    const fn = await deployedFunction(token);
    await expectNoContent(capabilities(token, fn, { privileged: true }));
    const id = (await callJson(`/v1/task/${fn}`, 201, { token, json: {} })).id;
    await clearQueue(); // as if the task's enqueue had not arrived yet
    await grantPrivileged(accountId, false);
    const agent = await FakeAgent.connect("priv-node", { privileged: true });
    await shardStub(env, shardOf(env, fn)).enqueue([
      { id, kind: "task", accountId, functionId: fn, lang: "py", privileged: true, cpu: 1, mem: 256, timeoutS: 30, payload: { type: "task.assign", taskId: id } },
    ]);
    expect(await finished(token, id)).toMatchObject({ status: 403 });
    expect((await callJson(`/v1/task/${id}/log`, 200, { token })).log).toEqual([REVOKED_LINE]);
    expect(await agent.none("task.assign")).toBe(true);
    // A new grant lifts the refusal.
    await grantPrivileged(accountId);
    const again = (await callJson(`/v1/task/${fn}`, 201, { token, json: {} })).id;
    expect((await agent.next("task.assign", 10_000)).taskId).toBe(again);
  });
});
