import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, call, clearQueue, deployedFunction, expectNoContent, newAccount, newEndpoint, onRowlessTasks } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";
import { syncWaitsFor } from "../../worker/counters/client.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

async function setup() {
  const acct = await newAccount();
  const fn = await deployedFunction(acct.token);
  const ep = await newEndpoint(acct.token, fn);
  return { ...acct, fn, ep };
}

const gcWait = (ep: string, n: number) => call(`/gc/${ep}`, { method: "POST", body: `call ${n}`, headers: { prefer: "wait=30", "content-type": "text/plain" } });

/** Calls in flight, with whether each has been answered yet. */
function inFlight(calls: Promise<Response>[]) {
  const settled = calls.map(() => false);
  calls.forEach((p, i) => void p.finally(() => (settled[i] = true)));
  return { anySettled: () => settled.some(Boolean) };
}

/** Takes `n` task assignments and leaves them running. */
async function running(agent: FakeAgent, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await agent.next("task.assign", 10_000)).taskId);
  return ids;
}

const held = (accountId: string) => syncWaitsFor(env, accountId).held();

/** An asynchronous answer: 201 {id}, without the applied preference. */
async function expectAsync(res: Response) {
  expect(res.status).toBe(201);
  expect(res.headers.get("preference-applied")).toBeNull();
  const body = (await res.json()) as { id: string };
  expect(body).toEqual({ id: expect.stringMatching(/^[0-9a-z]+$/) });
  return body.id;
}

describe("/gc/<endpoint_id> with Prefer: wait, past the syncWaits limit", () => {
  it("holds 32 waits of an account at once; the 33rd is answered at once as without Prefer, and every lease is given back", async () => {
    const { accountId, ep } = await setup();
    const agent = await FakeAgent.connect("waits-1", { slots: 40 });
    const waiting = Array.from({ length: 32 }, (_, i) => gcWait(ep, i));
    const flight = inFlight(waiting);
    const tasks = await running(agent, 32);
    expect(await held(accountId)).toBe(32);

    const extra = await expectAsync(await gcWait(ep, 33));
    expect(flight.anySettled()).toBe(false);
    expect(await held(accountId)).toBe(32);
    expect((await agent.next("task.assign", 10_000)).taskId).toBe(extra);

    for (const id of tasks) agent.done(id, `done ${id}`);
    const answers = await Promise.all(waiting);
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.headers.get("preference-applied")).toBe("wait");
      expect(await res.text()).toBe(`done ${res.headers.get("x-task-id")}`);
    }
    expect(await held(accountId)).toBe(0);
    // The extra call's task ran like any other; its result is where the 201 said.
    agent.done(extra, "late");
    await eventually(async () => (await call(`/gc/${extra}/result`)).status === 200);
  });

  it("counts per account: another account's waits are not held back", async () => {
    const a = await setup();
    const b = await setup();
    await expectNoContent(call(`/v1/admin/accounts/${a.accountId}`, { token: ADMIN, method: "PATCH", json: { limits: { syncWaits: 1 } } }));
    const agent = await FakeAgent.connect("waits-2", { slots: 8 });
    const first = gcWait(a.ep, 1);
    const [taskA] = await running(agent, 1);
    await expectAsync(await gcWait(a.ep, 2));
    const other = gcWait(b.ep, 3);
    await eventually(async () => (await held(b.accountId)) === 1);
    const assigned = await running(agent, 2);
    for (const id of assigned) agent.done(id, "ok");
    agent.done(taskA!, "ok");
    expect((await other).headers.get("preference-applied")).toBe("wait");
    expect((await first).headers.get("preference-applied")).toBe("wait");
  });

  it("follows the operator's value: 0 answers every call at once, a raised value holds more", async () => {
    const { accountId, ep } = await setup();
    const patch = (syncWaits: number) => expectNoContent(call(`/v1/admin/accounts/${accountId}`, { token: ADMIN, method: "PATCH", json: { limits: { syncWaits } } }));
    await patch(0);
    await expectAsync(await gcWait(ep, 1));
    expect(await held(accountId)).toBe(0);

    await patch(40);
    const agent = await FakeAgent.connect("waits-3", { slots: 40 });
    const waiting = Array.from({ length: 33 }, (_, i) => gcWait(ep, i));
    const tasks = await running(agent, 34); // with the call answered at once above
    expect(await held(accountId)).toBe(33);
    for (const id of tasks) agent.done(id, "ok");
    for (const res of await Promise.all(waiting)) expect(res.headers.get("preference-applied")).toBe("wait");
    expect(await held(accountId)).toBe(0);
  });

  it("gives the lease back when the wait ends after its caller went away", async () => {
    const { accountId, ep } = await setup();
    const agent = await FakeAgent.connect("waits-4", { slots: 2 });
    const abort = new AbortController();
    const gone = call(`/gc/${ep}`, { method: "POST", body: "x", headers: { prefer: "wait=30", "content-type": "text/plain" }, signal: abort.signal }).catch((e: unknown) => e);
    const [taskId] = await running(agent, 1);
    expect(await held(accountId)).toBe(1);
    abort.abort();
    expect(await gone).toBeInstanceOf(Error);
    agent.done(taskId!, "nobody reads this");
    await eventually(async () => (await held(accountId)) === 0, 10_000);
  });

  it("gives the lease back when the wait ends without an answer", async () => {
    const { accountId, ep } = await setup();
    const res = await call(`/gc/${ep}`, { method: "POST", headers: { prefer: "wait=1" } });
    await expectAsync(res);
    expect(await held(accountId)).toBe(0);
  });
});

describe("synchronous-wait leases", () => {
  it("free themselves once expired, when their release never came (the isolate went away mid-wait)", async () => {
    const stub = syncWaitsFor(env, "lease-expiry-account");
    expect(await stub.acquire(1, 60_000)).toEqual(expect.any(String));
    expect(await stub.acquire(1, 60_000)).toBeNull();
    await runInDurableObject(stub, (_o, state) => state.storage.sql.exec("update leases set expires_at = ?", Date.now() - 1));
    expect(await stub.held()).toBe(0);
    const again = await stub.acquire(1, 60_000);
    expect(again).toEqual(expect.any(String));
    await stub.release(again!);
    expect(await stub.held()).toBe(0);
  });
});
