import fs from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { CLIENT_LEFT_LINE, quietDisconnects } from "../../scripts/lib/quiet-disconnects.js";
import { zipSources } from "../support/zip.js";
import { localStack, type AgentProcess, type Api, type LocalWorker } from "./harness.js";
import { deploy } from "./deploy.js";

// What workerd printed, verbatim, for a client that hung up while a 2 MB result was being written.
const WORKERD_TRACE = [
  "workerd/server/server.c++:5237: error: kj::getCaughtExceptionAsKj() = kj/async-io-unix.c++:186: disconnected: ::write(fd, buffer.begin(), buffer.size()): Broken pipe",
  "stack: /x/workerd@51497d1 /x/workerd@514a481 /x/workerd@36c685f",
];

describe("workerd's output through quietDisconnects", () => {
  it("cuts a client-left error and its stack to one short line and passes everything else", async () => {
    const lines: string[] = [];
    const input = Readable.from([["before", ...WORKERD_TRACE, "after", "stack: of another error"].join("\n") + "\n"]);
    quietDisconnects(input, (l) => lines.push(l));
    await new Promise((r) => input.once("end", r));
    await sleep(10);
    expect(lines).toEqual(["before", CLIENT_LEFT_LINE, "after", "stack: of another error"]);
  });
});

let worker: LocalWorker;
let agent: AgentProcess;
let user: Api;
let token: string;
let logDir: string;
const logFile = () => path.join(logDir, "worker.log");

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  logDir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-quiet-"));
  ({ worker, agent, token, user } = await localStack({ account: "quiet", nodeId: "quiet-agent", logFile: logFile() }));
}, 1_800_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
  if (logDir) await fs.rm(logDir, { recursive: true, force: true });
});

/** A request whose client hangs up at its first byte of answer, or after `ms`, whichever comes first. */
function hangUp(method: string, p: string, headers: Record<string, string>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const req = http.request(`${worker.url}${p}`, { method, headers: { authorization: `Bearer ${token}`, ...headers } }, (res) =>
      res.once("data", () => {
        req.destroy();
        resolve();
      }),
    );
    req.on("error", () => resolve());
    req.end(method === "POST" ? "{}" : undefined);
    setTimeout(() => {
      req.destroy();
      resolve();
    }, ms);
  });
}

describe("a client that disconnects", () => {
  it("leaves no error, stack trace or Broken pipe in the Worker's log", async () => {
    const big = "import time\ndef handle(e, c):\n    time.sleep(float(e.query.get('sleep', '0')))\n    return {'x': 'y' * 2000000}\n";
    const { functionId } = await deploy(user, "py", await zipSources({ "handler.py": big }), "quiet");
    const task = await user.json("POST", `/v1/task/${functionId}`, 201, { json: {} });
    await user("GET", `/v1/task/${task.id}/result?wait=30`).then((r) => r.text());
    // A synchronous call, a result long poll and large answers, each left half-way.
    await hangUp("POST", `/v1/task/${functionId}?sleep=2`, { prefer: "wait=10", "content-type": "application/json" }, 500);
    const slow = await user.json("POST", `/v1/task/${functionId}?sleep=2`, 201, { json: {} });
    await hangUp("GET", `/v1/task/${slow.id}/result?wait=10`, {}, 500);
    for (let i = 0; i < 5; i++) await hangUp("GET", `/v1/task/${task.id}/result`, {}, 5000);
    await sleep(2000);
    // The service still answers whole.
    const whole = await user("GET", `/v1/task/${task.id}/result`);
    expect((await whole.text()).length).toBeGreaterThan(2_000_000);
    const log = await fs.readFile(logFile(), "utf8");
    expect(log).not.toMatch(/Broken pipe|Connection reset|^stack:|socket hang up/m);
  }, 600_000);
});
