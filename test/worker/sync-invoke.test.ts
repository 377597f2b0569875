import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, newAccount, newEndpoint, onRowlessTasks } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";
import { preferredWait } from "../../worker/http/prefer.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

async function setup() {
  const acct = await newAccount();
  const fn = await deployedFunction(acct.token);
  return { ...acct, fn };
}

/** The agent answers the next task with a PNG-typed binary body and a 201. */
async function answerNext(agent: FakeAgent) {
  const assign = await agent.next("task.assign", 10_000);
  agent.send({
    type: "task.done", taskId: assign.taskId, status: 201, headers: { "content-type": "image/png", "x-fn": "yes" },
    body: btoa("\x89PNG\x00\xff"), bodyUploaded: false, log: ["ran"], durationMs: 2,
  });
  return assign.taskId;
}

describe("POST /v1/task/<function_id> with Prefer: wait", () => {
  it("answers with the function's own response when the task finishes in time", async () => {
    const { token, fn } = await setup();
    const agent = await FakeAgent.connect("sync-1");
    const pending = call(`/v1/task/${fn}`, { token, json: { a: 1 }, headers: { prefer: "wait=10" } });
    const taskId = await answerNext(agent);
    const res = await pending;
    expect(res.status).toBe(201);
    expect(res.headers.get("content-type")).toBe("image/png");
    expect(res.headers.get("preference-applied")).toBe("wait");
    expect(res.headers.get("x-task-id")).toBe(taskId);
    expect(res.headers.get("location")).toBe(`/v1/task/${taskId}/result`);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff]));
    // The result stays readable as usual.
    expect((await call(`/v1/task/${taskId}/result`, { token })).status).toBe(201);
  });

  it("replays only the function's Content-Type; the task record has all the headers it answered with", async () => {
    const { token, fn } = await setup();
    const agent = await FakeAgent.connect("sync-4");
    const pending = call(`/v1/task/${fn}`, { token, json: {}, headers: { prefer: "wait=10" } });
    const taskId = await answerNext(agent);
    const res = await pending;
    await res.body?.cancel();
    expect(res.headers.get("x-fn")).toBeNull();
    expect((await callJson(`/v1/task/${taskId}`, 200, { token })).responseHeaders).toEqual({ "content-type": "image/png", "x-fn": "yes" });
  });

  it("answers the usual 201 {id} when the task does not finish within the wait", async () => {
    const { token, fn } = await setup();
    const res = await call(`/v1/task/${fn}`, { token, json: {}, headers: { prefer: "respond-async, wait=1" } });
    expect(res.status).toBe(201);
    expect(res.headers.get("preference-applied")).toBeNull();
    expect(await res.json()).toEqual({ id: expect.stringMatching(/^[0-9a-z]+$/) });
  });

  it("changes nothing without the header, even when an agent could answer at once", async () => {
    const { token, fn } = await setup();
    const agent = await FakeAgent.connect("sync-2");
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, json: {} });
    expect(await answerNext(agent)).toBe(id);
  });
});

describe("/gc/<endpoint_id> with Prefer: wait", () => {
  it("answers with the function's response, the public result path and CORS headers for an allowed origin", async () => {
    const { token, fn } = await setup();
    const ep = await newEndpoint(token, fn, { origin: ["https://app.example.com"] });
    const agent = await FakeAgent.connect("sync-3");
    const pending = call(`/gc/${ep}`, { method: "POST", body: "raw", headers: { prefer: "wait=10", origin: "https://app.example.com", "content-type": "text/plain" } });
    const taskId = await answerNext(agent);
    const res = await pending;
    expect(res.status).toBe(201);
    expect(res.headers.get("location")).toBe(`/gc/${taskId}/result`);
    expect(res.headers.get("access-control-allow-origin")).toBe("https://app.example.com");
    expect(res.headers.get("access-control-expose-headers")).toContain("X-Task-Id");
  });
});

describe("the Prefer header", () => {
  it("reads wait=<seconds> among other preferences, capped at 30; anything else is no wait", () => {
    expect(preferredWait("wait=5")).toBe(5);
    expect(preferredWait("respond-async, wait=12")).toBe(12);
    expect(preferredWait("handling=lenient; wait=3")).toBe(3);
    expect(preferredWait('WAIT="7"')).toBe(7);
    expect(preferredWait("wait=3600")).toBe(30);
    for (const h of [undefined, "", "wait", "wait=-1", "wait=abc", "respond-async", "wait=1.5"]) expect(preferredWait(h), String(h)).toBe(0);
  });
});
