import http from "node:http";
import { spawn } from "node:child_process";
import { setTimeout as sleep } from "node:timers/promises";
import { BIN } from "../cli/run-cli.js";
import { launchBrowser } from "../support/browser.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { zipItems } from "../support/zip.js";
import { SseReader, type SseEvent } from "../../shared/sse-reader.js";
import { ADMIN_TOKEN, AgentProcess, api, LocalWorker, type Api } from "./harness.js";
import { deploy, result } from "./deploy.js";

/**
 * Live logs end to end (api-decisions "Live logs"): the local service, a real agent and real
 * Python, Node.js, Ruby and Go functions that print, sleep, and print again. What a follower reads before
 * the sleep ends must have reached it while the task still ran: each runtime's stdout reaches the
 * agent line by line, not when the call returns.
 */
const SLEEP_S = 4;
const handlers = {
  py: { name: "handler.py", data: `import time\ndef handle(event, context):\n    print("before the sleep")\n    time.sleep(${SLEEP_S})\n    print("after the sleep")\n    return "done"\n` },
  js: { name: "handler.js", data: `module.exports = async () => {\n  console.log("before the sleep");\n  await new Promise((r) => setTimeout(r, ${SLEEP_S * 1000}));\n  console.log("after the sleep");\n  return { statusCode: 200, body: "done" };\n};\n` },
  rb: { name: "handler.rb", data: `def handle(_event, _context)\n  puts "before the sleep"\n  sleep ${SLEEP_S}\n  puts "after the sleep"\n  { statusCode: 200, body: "done" }\nend\n` },
  go: {
    name: "handler.go",
    data: `package function\n\nimport (\n\t"fmt"\n\t"time"\n\n\thandler "github.com/openfaas/templates-sdk/go-http"\n)\n\nfunc Handle(req handler.Request) (handler.Response, error) {\n\tfmt.Println("before the sleep")\n\ttime.Sleep(${SLEEP_S} * time.Second)\n\tfmt.Println("after the sleep")\n\treturn handler.Response{StatusCode: 200, Body: []byte("done")}, nil\n}\n`,
  },
};
const CHATTY_LINES = 7000;
/**
 * A stopped reader's bytes wait in two loopback TCP connections (client ↔ the local server's front
 * door ↔ workerd), whose buffers grow to several MiB (about 9 MB in all, measured here): 24 tasks
 * print 42 MB, over four times that.
 */
const CHATTY_TASKS = 24;
const chatty = { name: "handler.py", data: `def handle(event, context):\n    for i in range(${CHATTY_LINES}):\n        print(f"line {i:05d} " + "x" * 240)\n    return "done"\n` };

let worker: LocalWorker;
let agent: AgentProcess;
let user: Api;
let token: string;
const functions: Record<string, string> = {};

beforeAll(async () => {
  await ensureOfflineImages(["py", "js", "rb", "go"]);
  worker = await LocalWorker.create();
  const admin = api(worker.url, ADMIN_TOKEN);
  token = (await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "live" } })).token;
  user = api(worker.url, token);
  agent = await AgentProcess.start(worker, await worker.agentToken("live-agent"), "live-agent", ["--slots", "4"]);
  for (const [lang, item] of Object.entries({ ...handlers, chatty })) {
    const fn = await deploy(user, lang === "chatty" ? "py" : lang, await zipItems([item]), `live${lang}`);
    expect(fn.build.status, fn.build.log.join("\n")).toBe("SUCCESS");
    functions[lang] = fn.functionId;
  }
}, 1_800_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
});

async function follow(path: string, as: Api = user): Promise<SseReader> {
  const res = await as("GET", path, { headers: { accept: "text/event-stream" } });
  expect(res.status, res.status === 200 ? "" : await res.text()).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
  return new SseReader(res.body!);
}

type ErrorBody = { error: { code: string } };
const line = (data: string) => ({ event: "line", data });
const task = (functionId: string) => user.json("POST", `/v1/task/${functionId}`, 201).then((r) => r.id as string);
const unfinished = async (id: string) => (await user.json("GET", `/v1/task/${id}`, 200)).finished === null;

describe("GET /v1/task/<id>/log?follow=1", () => {
  for (const lang of Object.keys(handlers))
    it(`${lang}: the line printed before the sleep arrives while the task still runs, then the rest and the end`, async () => {
      const id = await task(functions[lang]!);
      const first = await follow(`/v1/task/${id}/log?follow=1`);
      expect(await first.until((e) => e.event === "line")).toEqual([line("before the sleep")]);
      expect(await unfinished(id)).toBe(true);
      // A second follower joining now gets the lines so far first.
      const second = await follow(`/v1/task/${id}/log?follow=1`);
      const end = { event: "end", data: '{"status":200}' };
      expect(await second.rest()).toEqual([line("before the sleep"), line("after the sleep"), end]);
      expect(await first.rest()).toEqual([line("after the sleep"), end]);
      // A finished task: all its lines and its end at once.
      expect(await (await follow(`/v1/task/${id}/log?follow=1`)).rest()).toEqual([line("before the sleep"), line("after the sleep"), end]);
    }, 120_000);

  it("answers 404 for another account's task", async () => {
    const other = api(worker.url, (await api(worker.url, ADMIN_TOKEN).json("POST", "/v1/admin/accounts", 201, { json: { name: "other" } })).token);
    const id = await task(functions.py!);
    const res = await other("GET", `/v1/task/${id}/log?follow=1`, { headers: { accept: "text/event-stream" } });
    expect([res.status, ((await res.json()) as ErrorBody).error.code]).toEqual([404, "not_found"]);
    const tail = await other("GET", `/v1/function/${functions.py}/logs?follow=1`, { headers: { accept: "text/event-stream" } });
    expect([tail.status, ((await tail.json()) as ErrorBody).error.code]).toEqual([404, "not_found"]);
    await result(user, id);
  }, 60_000);
});

describe("GET /v1/function/<id>/logs?follow=1", () => {
  it("tails two tasks of the function: each one's start, lines and end", async () => {
    const tail = await follow(`/v1/function/${functions.py}/logs?follow=1`);
    const ids = [await task(functions.py!), await task(functions.py!)];
    const events: SseEvent[] = [];
    const ended = new Set<string>();
    while (ended.size < 2) {
      const e = (await tail.next())!;
      events.push(e);
      if (e.event === "task" && JSON.parse(e.data).state === "ended") ended.add(JSON.parse(e.data).taskId);
    }
    await tail.cancel();
    for (const id of ids) {
      const mine = events.filter((e) => JSON.parse(e.data).taskId === id).map((e) => ({ event: e.event, ...JSON.parse(e.data) }));
      expect(mine).toEqual([
        { event: "task", taskId: id, state: "started" },
        { event: "line", taskId: id, line: "before the sleep" },
        { event: "line", taskId: id, line: "after the sleep" },
        { event: "task", taskId: id, state: "ended", status: 200 },
      ]);
    }
  }, 120_000);
});

describe("a follower that does not read", () => {
  it("loses lines with a note, and the tasks finish regardless", async () => {
    const slow = await pausedFollower(`/v1/function/${functions.chatty}/logs?follow=1`);
    const ids = await Promise.all(Array.from({ length: CHATTY_TASKS }, () => task(functions.chatty!)));
    // The follower has read nothing, and every task is recorded all the same.
    for (const id of ids) expect((await result(user, id)).status).toBe(200);
    const reader = slow.resume();
    const events: SseEvent[] = [];
    const ended = new Set<string>();
    while (ended.size < ids.length) {
      const e = (await reader.next())!;
      events.push(e);
      if (e.event === "task" && JSON.parse(e.data).state === "ended") ended.add(JSON.parse(e.data).taskId);
    }
    slow.close();
    const dropped = events.filter((e) => e.event === "dropped").reduce((n, e) => n + (JSON.parse(e.data).lines as number), 0);
    const lines = events.filter((e) => e.event === "line");
    expect(dropped).toBeGreaterThan(0);
    expect(lines.length + dropped).toBeLessThanOrEqual(CHATTY_LINES * CHATTY_TASKS);
    expect([...ended].sort()).toEqual([...ids].sort());
  }, 300_000);
});

describe("gcfaas logs --follow and gcfaas tail", () => {
  it("logs --follow prints the line before the sleep while the task runs, then the rest, and exits with the task", async () => {
    const id = await task(functions.py!);
    const cli = startCli(["logs", id, "--follow"]);
    await cli.waitFor(/before the sleep\n/);
    expect(await unfinished(id)).toBe(true);
    expect(await cli.exit()).toBe(0);
    expect(cli.stdout).toBe("before the sleep\nafter the sleep\n");
  }, 120_000);

  it("tail prints each task's lines as it runs, with its id", async () => {
    const cli = startCli(["tail", functions.js!, "--json"]);
    await cli.waitFor(/tailing/, "stderr");
    const id = await task(functions.js!);
    await cli.waitFor(/"state":"ended"/);
    cli.stop();
    expect(cli.stdout.trim().split("\n").map((l) => JSON.parse(l))).toEqual([
      { event: "task", taskId: id, state: "started" },
      { event: "line", taskId: id, line: "before the sleep" },
      { event: "line", taskId: id, line: "after the sleep" },
      { event: "task", taskId: id, state: "ended", status: 200 },
    ]);
  }, 120_000);
});

describe("the console's task page", () => {
  it("shows a running task's log live: the line before the sleep while it runs, then the rest and its status", async () => {
    const browser = await launchBrowser();
    try {
      const context = await browser.newContext();
      // The session cookie is the account's token (docs/console.md).
      await context.addCookies([{ name: "gc_console", value: token, url: `${worker.url}/console` }]);
      const page = await context.newPage();
      const id = await task(functions.py!);
      await page.goto(`${worker.url}/console/tasks/${id}`);
      const log = page.locator("#task-log");
      await expect.poll(() => log.innerText(), { timeout: 30_000 }).toContain("before the sleep");
      expect(await unfinished(id)).toBe(true);
      await expect.poll(() => page.locator("#task-log-state").innerText(), { timeout: 30_000 }).toContain("finished (status 200)");
      expect(await log.innerText()).toBe("before the sleep\nafter the sleep");
    } finally {
      await browser.close();
    }
  }, 120_000);
});

/** The CLI as a running child process, its output read as it comes. */
function startCli(args: string[]) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "/tmp", GCFAAS_URL: worker.url, GCFAAS_TOKEN: token }, stdio: ["ignore", "pipe", "pipe"] });
  const out = { stdout: "", stderr: "" };
  child.stdout.on("data", (d) => (out.stdout += d));
  child.stderr.on("data", (d) => (out.stderr += d));
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  return {
    get stdout() {
      return out.stdout;
    },
    async waitFor(pattern: RegExp, stream: "stdout" | "stderr" = "stdout") {
      while (!pattern.test(out[stream])) {
        if (child.exitCode !== null) throw new Error(`gcfaas ${args.join(" ")} exited ${child.exitCode}:\n${out.stdout}\n${out.stderr}`);
        await sleep(50);
      }
    },
    exit: () => exited,
    stop: () => child.kill("SIGINT"),
  };
}

/** A follower whose socket is not read until resume(): the slowest reader there is. */
async function pausedFollower(path: string): Promise<{ resume(): SseReader; close(): void }> {
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.get(`${worker.url}${path}`, { headers: { accept: "text/event-stream", authorization: `Bearer ${token}` } }, resolve);
    req.on("error", reject);
  });
  expect(res.statusCode).toBe(200);
  res.pause();
  return {
    resume: () => new SseReader(new ReadableStream({ start: (c) => { res.on("data", (d: Buffer) => c.enqueue(new Uint8Array(d))); res.on("end", () => c.close()); res.resume(); } })),
    close: () => res.destroy(),
  };
}
