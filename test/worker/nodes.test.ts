import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, call, callJson, clearQueue, deployedFunction, expectError, ISO_UTC, newAccount, newTask, onRowlessTasks } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const fleet = () => callJson<Record<string, any>[]>("/v1/admin/nodes", 200, { token: ADMIN });
const nodeOf = async (id: string) => (await fleet()).find((n) => n.id === id);
const act = (id: string, action: string) => call(`/v1/admin/nodes/${id}/${action}`, { token: ADMIN, method: "POST" });

describe("GET /v1/admin/nodes", () => {
  it("lists a connected node with live figures, and keeps it after it leaves", async () => {
    const agent = await FakeAgent.connect("fleet-a", { slots: 3, agentVersion: "1.4.0", runtime: "runsc" });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await newTask(token, fn);
    await agent.next("task.assign");
    const live = await nodeOf("fleet-a");
    expect(live).toEqual({
      id: "fleet-a", agentVersion: "1.4.0", runtime: "runsc", connected: true, slots: 3, busySlots: 1,
      langs: ["go", "py", "js", "cs", "rb", "rs"], privileged: false, egress: false, rttMs: expect.any(Number),
      connectedSince: expect.stringMatching(ISO_UTC), lastSeen: expect.stringMatching(ISO_UTC), draining: false, disabled: false,
    });
    await agent.close();
    const gone = await eventually(async () => {
      const n = await nodeOf("fleet-a");
      return n && !n.connected && n;
    });
    expect(gone).toMatchObject({ agentVersion: "1.4.0", runtime: "runsc", slots: 3, busySlots: 0, rttMs: null, connectedSince: null, lastSeen: expect.stringMatching(ISO_UTC) });
  });

  it("lists an older agent's hello without version or runtime", async () => {
    await FakeAgent.connect("fleet-old");
    expect(await nodeOf("fleet-old")).toMatchObject({ connected: true, agentVersion: null, runtime: null });
  });

  it("refuses without the operator secret", async () => {
    await expectError(call("/v1/admin/nodes", { token: await FakeAgent.token("fleet-x") }), 401, "unauthorized");
  });
});

describe("POST /v1/admin/nodes/<id>/drain and /resume", () => {
  it("lets a drained node finish its work and take no more until resumed", async () => {
    const agent = await FakeAgent.connect("fleet-drain");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const first = await newTask(token, fn);
    await agent.next("task.assign");
    expect((await act("fleet-drain", "drain")).status).toBe(204);
    expect(await nodeOf("fleet-drain")).toMatchObject({ draining: true, connected: true });
    const second = await newTask(token, fn);
    expect(await agent.none("task.assign")).toBe(true);
    agent.done(first, "finished while draining");
    expect(await (await call(`/v1/task/${first}/result?wait=5`, { token })).text()).toBe("finished while draining");
    expect((await act("fleet-drain", "resume")).status).toBe(204);
    expect((await agent.next("task.assign")).taskId).toBe(second);
    expect(await nodeOf("fleet-drain")).toMatchObject({ draining: false });
  });
});

describe("POST /v1/admin/nodes/<id>/disable", () => {
  it("closes the node's socket at once, requeues its work and refuses it until resumed", async () => {
    const agent = await FakeAgent.connect("fleet-off");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await newTask(token, fn);
    await agent.next("task.assign");
    expect((await act("fleet-off", "disable")).status).toBe(204);
    expect(await agent.whenClosed()).toEqual({ code: 4005, reason: "the node is disabled" });
    const other = await FakeAgent.connect("fleet-other");
    expect((await other.next("task.assign")).taskId).toBe(id);
    await expectError(call(`/v1/agent/tasks/${id}/input`, { token: agent.token }), 404, "not_found");

    const again = await FakeAgent.socket("fleet-off", agent.token);
    again.hello();
    expect((await again.whenClosed()).code).toBe(4005);
    expect(await nodeOf("fleet-off")).toMatchObject({ disabled: true, connected: false });

    expect((await act("fleet-off", "resume")).status).toBe(204);
    await FakeAgent.connect("fleet-off", { token: agent.token });
    expect(await nodeOf("fleet-off")).toMatchObject({ disabled: false, connected: true });
  });

  it("answers 404 for a node that never connected", async () => {
    for (const action of ["drain", "resume", "disable"]) await expectError(act("fleet-never", action), 404, "not_found");
  });
});
