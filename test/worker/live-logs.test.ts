import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, clearQueue, deployedFunction, expectError, finishTask, newAccount, newTask, onRowlessTasks } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";
import { CUT_NOTE, MAX_ACCOUNT_FOLLOWERS, MAX_FUNCTION_TAILS, MAX_TASK_FOLLOWERS } from "../../worker/dispatch/log-follows.js";
import { FOLLOWER_BUFFER_CHARS } from "../../worker/live-logs/follower-stream.js";
import { LIVE_LOG_FRAME_BYTES, MAX_LIVE_LOG_LINES } from "../../shared/protocol/messages.js";
import { SseReader } from "../../shared/sse-reader.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const SSE = { accept: "text/event-stream" };

async function follow(path: string, token: string): Promise<SseReader> {
  const res = await call(path, { token, headers: SSE });
  expect(res.status, await (res.status === 200 ? "" : res.clone().text())).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
  return new SseReader(res.body!);
}

const line = (data: string) => ({ event: "line", data });

/** A task of a new account, assigned to an agent (one from before live logs with `liveLogs: false`). */
async function runningTask(nodeId: string, liveLogs = true) {
  const agent = await FakeAgent.connect(nodeId, { liveLogs });
  const { token } = await newAccount();
  const fn = await deployedFunction(token);
  const id = await newTask(token, fn);
  await agent.next("task.assign");
  return { agent, token, id };
}

/** A running task with one follower, whose agent was told to stream it. */
async function followedTask(nodeId: string) {
  const { agent, token, id } = await runningTask(nodeId);
  const reader = await follow(`/v1/task/${id}/log?follow=1`, token);
  expect(await agent.next("task.follow")).toEqual({ type: "task.follow", taskId: id, on: true });
  return { agent, token, id, reader };
}

describe("GET /v1/task/<id>/log?follow=1", () => {
  it("streams the lines so far, then new ones, then the end with the status", async () => {
    const { agent, token, id } = await runningTask("live-1");
    agent.send({ type: "task.log", taskId: id, first: 0, lines: ["before anyone followed"] }); // nobody follows: not relayed
    const reader = await follow(`/v1/task/${id}/log?follow=1`, token);
    expect(await agent.next("task.follow")).toEqual({ type: "task.follow", taskId: id, on: true });
    agent.send({ type: "task.log", taskId: id, first: 0, lines: ["one", "two"] });
    expect(await reader.take(2)).toEqual([line("one"), line("two")]);
    // A batch re-sent from the first line (for another follower) brings this one only what is new.
    agent.send({ type: "task.log", taskId: id, first: 0, lines: ["one", "two", "three"] });
    expect(await reader.take(1)).toEqual([line("three")]);
    agent.done(id, "ok", 200, { log: ["one", "two", "three", "four"] });
    expect(await reader.rest()).toEqual([line("four"), { event: "end", data: '{"status":200}' }]);
  });

  it("marks a retry's lines as the recorded log does, and ends once, with the last attempt", async () => {
    const agent = await FakeAgent.connect("live-retry", { liveLogs: true });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await call(`/v1/function/${fn}/retry`, { token, method: "PUT", json: { maxAttempts: 2, backoffSeconds: 1, deadLetterFunctionId: null } });
    const id = await newTask(token, fn);
    await agent.next("task.assign");
    const reader = await follow(`/v1/task/${id}/log?follow=1`, token);
    await agent.next("task.follow");
    agent.send({ type: "task.log", taskId: id, first: 0, lines: ["first try"] });
    expect(await reader.take(1)).toEqual([line("first try")]);
    agent.done(id, "boom", 500, { log: ["first try"] });
    expect((await agent.next("task.assign", 4_000)).taskId).toBe(id);
    expect(await reader.take(1)).toEqual([line("--- attempt 2 ---")]);
    agent.send({ type: "task.log", taskId: id, first: 0, lines: ["second try"] });
    agent.done(id, "fine", 200, { log: ["second try"] });
    expect(await reader.rest()).toEqual([line("second try"), { event: "end", data: '{"status":200}' }]);
  });

  it("says once that the call's log reached its bound, when the agent stops streaming there", async () => {
    const { agent, id, reader } = await followedTask("live-cut");
    agent.send({ type: "task.log", taskId: id, first: 0, lines: ["kept"], cut: true });
    // Sent again from the first line (another follower came): not said twice.
    agent.send({ type: "task.log", taskId: id, first: 0, lines: ["kept"], cut: true });
    agent.done(id, "ok", 200, { log: ["kept"] });
    expect(await reader.rest()).toEqual([line("kept"), line(CUT_NOTE), { event: "end", data: '{"status":200}' }]);
  });

  it("gives a finished task's whole log and its end at once", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await newTask(token, fn);
    await finishTask(id, { status: 500, log: ["a", "b\rc"] });
    const reader = await follow(`/v1/task/${id}/log?follow=1`, token);
    expect(await reader.rest()).toEqual([line("a"), line("b\nc"), { event: "end", data: '{"status":500}' }]);
  });

  it("tells the agent to stop streaming when the last follower goes", async () => {
    const { agent, id, reader } = await followedTask("live-2");
    await reader.cancel();
    // The dispatcher learns the reader went when it next writes to it (a line, or the keepalive).
    agent.send({ type: "task.log", taskId: id, first: 0, lines: ["unread"] });
    expect(await agent.next("task.follow")).toEqual({ type: "task.follow", taskId: id, on: false });
  });

  it("asks an agent to stream only while someone follows, and never an agent from before live logs", async () => {
    const { agent: old, token, id } = await runningTask("live-old", false);
    expect(await old.none("task.follow")).toBe(true);
    const reader = await follow(`/v1/task/${id}/log?follow=1`, token);
    expect(await old.none("task.follow")).toBe(true);
    old.done(id, "ok", 200, { log: ["only at the end"] });
    expect(await reader.rest()).toEqual([line("only at the end"), { event: "end", data: '{"status":200}' }]);
  });

  it("loses nothing of the largest frame an agent sends, for a follower that reads along", async () => {
    const { agent, id, reader } = await followedTask("live-full");
    const lines = Array.from({ length: MAX_LIVE_LOG_LINES }, (_, i) => `${String(i).padStart(4, "0")} ${"y".repeat(56)}`);
    expect(new TextEncoder().encode(JSON.stringify(lines)).length).toBeLessThanOrEqual(LIVE_LOG_FRAME_BYTES + 2);
    agent.send({ type: "task.log", taskId: id, first: 0, lines });
    expect(await reader.take(lines.length)).toEqual(lines.map(line));
    agent.done(id, "ok", 200, { log: lines });
    expect(await reader.rest()).toEqual([{ event: "end", data: '{"status":200}' }]);
  });

  it("drops what a follower's buffer cannot hold and says how many lines it lost", async () => {
    const { agent, id, reader } = await followedTask("live-3");
    // One batch, relayed at once: far more than the buffer holds before the reader can take any.
    // (Larger than an agent's frames, which one buffer always holds whole; the schema allows it.)
    const total = MAX_LIVE_LOG_LINES;
    const text = (i: number) => `line ${String(i).padStart(4, "0")} ${"x".repeat(200)}`;
    expect(total * text(0).length).toBeGreaterThan(FOLLOWER_BUFFER_CHARS);
    agent.send({ type: "task.log", taskId: id, first: 0, lines: Array.from({ length: total }, (_, i) => text(i)) });
    const events = await reader.until((e) => e.event === "dropped");
    const dropped = JSON.parse(events.at(-1)!.data).lines as number;
    const lines = events.filter((e) => e.event === "line").map((e) => e.data);
    expect(lines).toEqual(Array.from({ length: lines.length }, (_, i) => text(i)));
    expect(lines.join("").length).toBeLessThanOrEqual(FOLLOWER_BUFFER_CHARS);
    expect(lines.length + dropped).toBe(total);
    agent.done(id, "ok", 200, { log: ["end"] });
    expect(await reader.rest()).toEqual([{ event: "end", data: '{"status":200}' }]);
  });

  it(`refuses a follower past ${MAX_TASK_FOLLOWERS} of one task with 429 limit_reached`, async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await newTask(token, fn);
    const readers = await Promise.all(Array.from({ length: MAX_TASK_FOLLOWERS }, () => follow(`/v1/task/${id}/log?follow=1`, token)));
    await expectError(call(`/v1/task/${id}/log?follow=1`, { token, headers: SSE }), 429, "limit_reached");
    await readers[0]!.cancel();
    // The dispatcher learns of the reader's going as its stream is cancelled, a moment later.
    const again = await eventually(async () => {
      const res = await call(`/v1/task/${id}/log?follow=1`, { token, headers: SSE });
      return res.status === 200 ? new SseReader(res.body!) : (await res.body?.cancel(), undefined);
    });
    await Promise.all([again, ...readers.slice(1)].map((r) => r.cancel()));
  });

  it(`refuses an account's follower past ${MAX_ACCOUNT_FOLLOWERS} in one shard with 429 limit_reached, other accounts unaffected`, async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const readers: SseReader[] = [];
    for (let t = 0; t < MAX_ACCOUNT_FOLLOWERS / MAX_TASK_FOLLOWERS; t++) {
      const id = await newTask(token, fn);
      readers.push(...(await Promise.all(Array.from({ length: MAX_TASK_FOLLOWERS }, () => follow(`/v1/task/${id}/log?follow=1`, token)))));
    }
    const one = await newTask(token, fn);
    const err = await expectError(call(`/v1/task/${one}/log?follow=1`, { token, headers: SSE }), 429, "limit_reached");
    expect(err.message).toContain(`at most ${MAX_ACCOUNT_FOLLOWERS}`);
    await expectError(call(`/v1/function/${fn}/logs?follow=1`, { token, headers: SSE }), 429, "limit_reached");
    const other = await newAccount("other");
    const theirs = await newTask(other.token, await deployedFunction(other.token));
    await (await follow(`/v1/task/${theirs}/log?follow=1`, other.token)).cancel();
    await Promise.all(readers.map((r) => r.cancel()));
  });

  it("answers 404 for another account's task, and 400 for a bad follow value", async () => {
    const { token } = await newAccount();
    const other = await newAccount("other");
    const fn = await deployedFunction(token);
    const id = await newTask(token, fn);
    await expectError(call(`/v1/task/${id}/log?follow=1`, { token: other.token, headers: SSE }), 404, "not_found");
    await expectError(call(`/v1/task/${id}/log?follow=yes`, { token, headers: SSE }), 400, "validation_failed");
  });

  it("answers as before without follow", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await newTask(token, fn);
    await finishTask(id, { log: ["a"] });
    const res = await call(`/v1/task/${id}/log`, { token });
    expect(await res.json()).toEqual({ id, finished: true, log: ["a"] });
  });
});

describe("GET /v1/function/<id>/logs?follow=1", () => {
  it("tails every task of the function that runs, with each task's start and end", async () => {
    const agent = await FakeAgent.connect("tail-1", { liveLogs: true });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const reader = await follow(`/v1/function/${fn}/logs?follow=1`, token);
    const ids: string[] = [];
    for (let n = 0; n < 2; n++) {
      const id = await newTask(token, fn);
      ids.push(id);
      expect((await agent.next("task.assign")).taskId).toBe(id);
      expect(await agent.next("task.follow")).toEqual({ type: "task.follow", taskId: id, on: true });
      agent.send({ type: "task.log", taskId: id, first: 0, lines: [`hello from ${n}`] });
      agent.done(id, "ok", 200, { log: [`hello from ${n}`] });
      expect(await reader.take(3)).toEqual([
        { event: "task", data: JSON.stringify({ taskId: id, state: "started" }) },
        { event: "line", data: JSON.stringify({ taskId: id, line: `hello from ${n}` }) },
        { event: "task", data: JSON.stringify({ taskId: id, state: "ended", status: 200 }) },
      ]);
    }
    await reader.cancel();
  });

  it("answers 404 for another account's function, 400 without follow, 429 past the cap", async () => {
    const { token } = await newAccount();
    const other = await newAccount("other");
    const fn = await deployedFunction(token);
    await expectError(call(`/v1/function/${fn}/logs?follow=1`, { token: other.token, headers: SSE }), 404, "not_found");
    await expectError(call(`/v1/function/${fn}/logs`, { token, headers: SSE }), 400, "validation_failed");
    const readers = await Promise.all(Array.from({ length: MAX_FUNCTION_TAILS }, () => follow(`/v1/function/${fn}/logs?follow=1`, token)));
    await expectError(call(`/v1/function/${fn}/logs?follow=1`, { token, headers: SSE }), 429, "limit_reached");
    await Promise.all(readers.map((r) => r.cancel()));
  });
});

describe("console: a running task's page follows its log live", () => {
  it("marks the log live on a running task's page, and streams it with the session cookie", async () => {
    const { agent, token, id } = await runningTask("live-console");
    const cookie = `gc_console=${token}`;
    const page = await (await call(`/console/tasks/${id}`, { headers: { cookie } })).text();
    expect(page).toContain(`data-live="/console/tasks/${id}/log/live"`);
    expect(page).toContain(`<script src="/console/assets/console.js"`);
    const res = await call(`/console/tasks/${id}/log/live`, { headers: { cookie, accept: "text/event-stream" } });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = new SseReader(res.body!);
    await agent.next("task.follow");
    agent.send({ type: "task.log", taskId: id, first: 0, lines: ["live in the console"] });
    expect(await reader.take(1)).toEqual([line("live in the console")]);
    agent.done(id, "ok", 200, { log: ["live in the console"] });
    expect(await reader.rest()).toEqual([{ event: "end", data: '{"status":200}' }]);
    // Finished: the page shows the recorded log, nothing live.
    expect(await (await call(`/console/tasks/${id}`, { headers: { cookie } })).text()).not.toContain("data-live");
  });

  it("answers another account's task with the API's 404", async () => {
    const { token } = await newAccount();
    const other = await newAccount("other");
    const fn = await deployedFunction(token);
    const id = await newTask(token, fn);
    const res = await call(`/console/tasks/${id}/log/live`, { headers: { cookie: `gc_console=${other.token}`, accept: "text/event-stream" } });
    expect(res.status).toBe(404);
  });
});

describe("GET /v1/openapi.json", () => {
  it("documents the text/event-stream answers of the task log and the function tail, and their follow parameter", async () => {
    const doc = await (await call("/v1/openapi.json")).json<{ paths: Record<string, Record<string, any>> }>();
    const streamOf = (path: string) => Object.entries(doc.paths).find(([p]) => p.replace(/\{\w+\}/g, "{}") === path)![1].get;
    for (const path of ["/v1/task/{}/log", "/v1/function/{}/logs"]) {
      const op = streamOf(path);
      expect(op.responses["200"].content["text/event-stream"].schema.description, path).toMatch(/event: line/);
      expect(op.parameters.map((p: { name: string }) => p.name), path).toContain("follow");
      expect(Object.keys(op.responses), path).toContain("429");
    }
    // The task log still answers JSON without follow.
    expect(Object.keys(streamOf("/v1/task/{}/log").responses["200"].content)).toEqual(["application/json", "text/event-stream"]);
  });
});
