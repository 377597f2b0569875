import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { zipItems } from "../support/zip.js";
import { LocalWorker, ROOT, api, localStack, type AgentProcess, type Api } from "./harness.js";
import { deploy, invoke, result } from "./deploy.js";

/**
 * D1 trouble on purpose against the whole local stack: the Worker on workerd with every D1 round
 * trip delayed (GCFAAS_D1_DELAY_MS) and the test's failure control, a real agent and Docker. The
 * windows here are opened for a minute and closed by the test once what it waits for has happened,
 * so nothing depends on how fast this machine is; bench/d1-trouble.ts runs a 60 s outage by the clock.
 */
const DELAY_MS = 5;
let worker: LocalWorker;
let agent: AgentProcess;
let user: Api;
const workerLog = path.join(os.tmpdir(), `gcfaas-d1-trouble-${process.pid}.log`);

/**
 * The tasks whose outcomes must meet the outage run this long: the window opens two local requests
 * after their creation answered, long before they finish.
 */
const sleepsThenSays = (word: string) => `import time\ndef handle(event, context):\n    time.sleep(3)\n    return "${word}"\n`;
const says = (word: string) => `def handle(event, context):\n    return "${word}"\n`;

/** Waits (no time limit of its own but the test's) until `seen` is true; polled, not timed. */
async function until(what: string, seen: () => boolean | Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await seen())) {
    if (Date.now() > deadline) throw new Error(`${what}: not seen in ${timeoutMs} ms`);
    await sleep(200);
  }
}

const hasFinished = (taskId: string) => agent.log.includes(`"msg":"task finished","taskId":"${taskId}"`);
const agentFinished = (taskId: string) => until(`the agent finishing ${taskId}`, () => hasFinished(taskId));
const workerLogged = (text: string, after: number) => until(`the Worker logging "${text}"`, async () => (await readFile(workerLog, "utf8")).slice(after).includes(text));
const logSize = async () => (await readFile(workerLog, "utf8")).length;
const invocations = async () => (await user.json("GET", "/v1/usage", 200)).invocations as number;
const tasksOf = async (functionId: string) => (await user.json("GET", `/v1/task/list?functionId=${functionId}`, 200)) as { id: string; status: number }[];

async function expectUnavailable(res: Response) {
  const body = (await res.json()) as { error?: { code?: string } };
  expect({ status: res.status, code: body.error?.code, retryAfter: res.headers.get("retry-after") }).toEqual({ status: 503, code: "storage_unavailable", retryAfter: "5" });
}

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  ({ worker, agent, user } = await localStack({ account: "d1-trouble", nodeId: "d1-agent", agentArgs: ["--slots", "4"], logFile: workerLog, d1DelayMs: DELAY_MS, testD1Failures: true }));
}, 1_800_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
});

describe("GCFAAS_D1_DELAY_MS", () => {
  it("stops the start command on a delay that is not a whole number of milliseconds, before it starts anything", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "scripts/start.ts")], {
      cwd: ROOT, env: { ...process.env, GCFAAS_D1_DELAY_MS: "soon", GCFAAS_STATE_DIR: path.join(os.tmpdir(), `gcfaas-d1-start-${process.pid}`) }, stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
    expect({ code, out: out.trim() }).toEqual({ code: 1, out: '[start] failed: GCFAAS_D1_DELAY_MS must be a whole number of milliseconds from 0 to 60000, not "soon"' });
  });

  it("refuses a LocalWorker delay that is not a whole number of milliseconds before starting anything", async () => {
    await expect(LocalWorker.create({ d1DelayMs: -1 })).rejects.toThrow(/d1DelayMs must be a whole number of milliseconds/);
    await expect(LocalWorker.create({ d1DelayMs: 2.5 })).rejects.toThrow(/d1DelayMs must be a whole number of milliseconds/);
  });

  it("holds back D1 round trips of the Worker and the dispatcher, and tasks answer as without it, D1 written after", async () => {
    const fn = await deploy(user, "py", await zipItems([{ name: "handler.py", data: says("far") }]), "far");
    expect(fn.build.status, fn.build.log.join("\n")).toBe("SUCCESS");
    const before = await worker.d1State();
    expect(before.delayMs).toBe(DELAY_MS);
    const { res } = await invoke(user, fn.functionId);
    expect(res).toEqual({ status: 200, contentType: "text/plain; charset=utf-8", body: "far" });
    // The call was answered from the shard; the shard's batch of the task's row and outcome still
    // reaches D1 through the delay, after the answer.
    await until("the shard's batch reaching D1", async () => (await worker.d1State()).delayed - before.delayed >= 1);
  }, 600_000);
});

describe("a D1 outage", () => {
  it("keeps creating, running and answering tasks in the shard and through a public endpoint it served while D1 fails, and records every task once when D1 is back", async () => {
    const fn = await deploy(user, "py", await zipItems([{ name: "handler.py", data: sleepsThenSays("slept") }]), "sleeper");
    expect(fn.build.status, fn.build.log.join("\n")).toBe("SUCCESS");
    const { id: endpoint } = await user.json("POST", `/v1/endpoint/${fn.functionId}`, 201, { json: {} });
    const { id: neverCalled } = await user.json("POST", `/v1/endpoint/${fn.functionId}`, 201, { json: {} });
    await invoke(user, fn.functionId); // a warm container, and the shard knows the function and holds a lease
    const usedBefore = await invocations();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await user.json("POST", `/v1/task/${fn.functionId}`, 201, {})).id);
    // The endpoint served once: its object holds what the door needs.
    const served = await fetch(`${worker.url}/gc/${endpoint}`, { method: "POST" });
    expect(served.status).toBe(201);
    ids.push(((await served.json()) as { id: string }).id);
    const logged = await logSize();

    expect((await worker.failD1(60_000)).failing).toBe(true);
    expect(ids.filter(hasFinished)).toEqual([]); // still running: their outcomes meet the outage
    // Created in the function's shard from its lease: nothing on the way needs D1.
    const during = (await user.json("POST", `/v1/task/${fn.functionId}`, 201, {})).id as string;
    const sync = await user("POST", `/v1/task/${fn.functionId}`, { headers: { prefer: "wait=20" } });
    expect({ status: sync.status, applied: sync.headers.get("preference-applied"), body: await sync.text() }).toEqual({ status: 200, applied: "wait", body: "slept" });
    ids.push(during, sync.headers.get("x-task-id")!);
    // Read from the shard, which holds what D1 does not have yet.
    expect(await user.json("GET", `/v1/task/${during}`, 200)).toMatchObject({ id: during, functionId: fn.functionId });
    // A public endpoint it served before answers from its object, asynchronously and synchronously.
    const gcDuring = await fetch(`${worker.url}/gc/${endpoint}`, { method: "POST" });
    expect(gcDuring.status).toBe(201);
    ids.push(((await gcDuring.json()) as { id: string }).id);
    const gcSync = await fetch(`${worker.url}/gc/${endpoint}`, { method: "POST", headers: { prefer: "wait=20" } });
    expect({ status: gcSync.status, applied: gcSync.headers.get("preference-applied"), body: await gcSync.text() }).toEqual({ status: 200, applied: "wait", body: "slept" });
    ids.push(gcSync.headers.get("x-task-id")!);
    // One never called cannot be known without D1: it answers 503 until D1 is back.
    await expectUnavailable(await fetch(`${worker.url}/gc/${neverCalled}`, { method: "POST" }));
    for (const id of ids) await agentFinished(id);
    for (const id of ids) expect(await result(user, id)).toEqual({ status: 200, contentType: "text/plain; charset=utf-8", body: "slept" });
    expect(await user.json("GET", `/v1/task/${during}/log`, 200)).toEqual({ id: during, finished: true, log: [] });
    // The dispatcher took the outcomes and created rows while D1 was down, and its writes of them failed.
    await workerLogged("recording outcomes failed; retrying", logged);
    expect((await worker.healD1()).failed).toBeGreaterThan(0);

    // Every task recorded once, and counted once: the warm-up and the eight.
    await until("the records catching up", async () => (await tasksOf(fn.functionId)).length === 9 && (await invocations()) === usedBefore + 8);
    expect((await tasksOf(fn.functionId)).map((t) => t.status)).toEqual(Array(9).fill(200));
    expect(await invocations()).toBe(usedBefore + 8);
    expect((await fetch(`${worker.url}/gc/${neverCalled}`, { method: "POST" })).status).toBe(201);
  }, 600_000);

  it("counts a task once when D1 committed its outcome but the answer was lost, and still fires its trigger", async () => {
    const first = await deploy(user, "py", await zipItems([{ name: "handler.py", data: sleepsThenSays("first") }]), "first");
    const next = await deploy(user, "py", await zipItems([{ name: "handler.py", data: says("next") }]), "next");
    expect([first.build.status, next.build.status]).toEqual(["SUCCESS", "SUCCESS"]);
    await invoke(user, first.functionId);
    await invoke(user, next.functionId);
    await user.json("POST", "/v1/trigger", 201, { json: { functionId: first.functionId, nextId: next.functionId, includeResult: false, status: 200 } });
    const usedBefore = await invocations();
    const { id } = await user.json("POST", `/v1/task/${first.functionId}`, 201, {});
    const logged = await logSize();

    await worker.failD1(60_000, "lose_answer");
    expect(hasFinished(id)).toBe(false);
    await agentFinished(id);
    // Its write reached D1 and committed; the dispatcher was told it failed, and retries.
    await workerLogged("recording outcomes failed; retrying", logged);
    await worker.healD1();

    expect(await result(user, id)).toEqual({ status: 200, contentType: "text/plain; charset=utf-8", body: "first" });
    await until("the triggered task finishing", async () => (await tasksOf(next.functionId)).every((t) => t.status !== 0) && (await tasksOf(next.functionId)).length === 2);
    expect((await tasksOf(next.functionId)).map((t) => t.status)).toEqual([200, 200]);
    expect(await invocations()).toBe(usedBefore + 2);
  }, 600_000);
});

describe("admission in the shard", () => {
  it("holds an account to its cap of unfinished tasks, shows them to their owner before D1 has them, and gives the slots back when they end", async () => {
    const admin = api(worker.url, worker.adminToken);
    const owner = api(worker.url, (await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "capped" } })).token);
    const fn = await deploy(owner, "py", await zipItems([{ name: "handler.py", data: says("queued") }]), "capped");
    expect(fn.build.status, fn.build.log.join("\n")).toBe("SUCCESS");
    // Paused, its tasks stay unfinished: the account's whole cap (MAX_PENDING_TASKS, 1000) fills.
    expect((await owner("POST", `/v1/function/${fn.functionId}/togglePause`)).status).toBe(204);
    const CAP = 1000;
    let asked = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (asked < CAP) {
          asked++;
          await owner.json("POST", `/v1/task/${fn.functionId}`, 201, {});
        }
      }),
    );
    const refused = await owner("POST", `/v1/task/${fn.functionId}`, {});
    const body = (await refused.json()) as { error?: { code?: string } };
    expect({ status: refused.status, code: body.error?.code, retryAfter: Number(refused.headers.get("retry-after")) > 0 }).toEqual({ status: 429, code: "too_many_pending_tasks", retryAfter: true });
    expect((await owner.json("GET", "/v1/usage", 200)).pending).toBe(CAP);
    expect(await owner.json("GET", `/v1/task/list?functionId=${fn.functionId}&limit=1000`, 200)).toHaveLength(CAP);
    // Another account is not held back by this one's cap.
    expect((await user("POST", `/v1/task/${(await deploy(user, "py", await zipItems([{ name: "handler.py", data: says("free") }]), "free")).functionId}`, {})).status).toBe(201);
    // Deleting the function cancels its tasks: the account's slots come back at once.
    expect((await owner("DELETE", `/v1/function/${fn.functionId}`)).status).toBe(204);
    const next = await deploy(owner, "py", await zipItems([{ name: "handler.py", data: says("again") }]), "again");
    expect((await invoke(owner, next.functionId)).res).toEqual({ status: 200, contentType: "text/plain; charset=utf-8", body: "again" });
  }, 600_000);
});
