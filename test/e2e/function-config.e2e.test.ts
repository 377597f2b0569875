import { createHash, randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { LABEL_MANAGED } from "../../agent/docker/client.js";
import { zipItems } from "../support/zip.js";
import { ADMIN_TOKEN, AgentProcess, api, freePort, LocalWorker, type Api } from "./harness.js";
import { deploy } from "./deploy.js";

/**
 * Environment variables and secrets end to end: the API, the dispatcher, a real agent with its
 * runtime pool on, Docker. Two accounts' functions share the node; the secret must reach its own
 * function and nothing else, and nowhere at rest: not the Worker's state folder (D1, Durable
 * Objects, R2), not the agent's, not `docker inspect`, not a log.
 */
const SECRET = `sk_live_${randomBytes(12).toString("hex")}`;
/** What the functions answer for the secret: its hash, so that the recorded result does not hold it. */
const SEEN = createHash("sha256").update(SECRET).digest("hex");
const docker = new Docker();

const PY = `import hashlib
import os


def digest(value):
    return None if value is None else hashlib.sha256(value.encode()).hexdigest()


AT_LOAD = digest(os.environ.get("API_KEY"))


def handle(event, context):
    print("the key is " + str(os.environ.get("API_KEY")))
    return {"mode": os.environ.get("MODE"), "apiKey": digest(os.environ.get("API_KEY")), "atLoad": AT_LOAD}
`;
const JS = `const { createHash } = require("node:crypto");
const digest = (v) => (v === undefined ? null : createHash("sha256").update(v).digest("hex"));
const atLoad = digest(process.env.API_KEY);
module.exports = async () => {
  console.log("the key is " + process.env.API_KEY);
  return { mode: process.env.MODE ?? null, apiKey: digest(process.env.API_KEY), atLoad };
};
`;

let worker: LocalWorker;
let agent: AgentProcess;
let owner: Api;
let stranger: Api;
let logDir: string;
let metricsUrl: string;

beforeAll(async () => {
  await ensureOfflineImages(["py", "js"]);
  logDir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-config-logs-"));
  worker = await LocalWorker.create({ logFile: path.join(logDir, "worker.log") });
  const admin = api(worker.url, ADMIN_TOKEN);
  owner = api(worker.url, (await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "owner" } })).token);
  stranger = api(worker.url, (await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "stranger" } })).token);
  const metricsAt = `127.0.0.1:${await freePort()}`;
  metricsUrl = `http://${metricsAt}/metrics`;
  agent = await AgentProcess.start(worker, await worker.agentToken("config-agent"), "config-agent", ["--slots", "4", "--pool-size", "1", "--pool-langs", "py,js", "--metrics", metricsAt], path.join(logDir, "agent.log"));
}, 1_800_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
  await fs.rm(logDir, { recursive: true, force: true });
});

async function run(api: Api, functionId: string): Promise<{ body: Record<string, unknown>; log: string[] }> {
  const res = await api("POST", `/v1/task/${functionId}`, { headers: { prefer: "wait=60" } });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  const { log } = await api.json<{ log: string[] }>("GET", `/v1/task/${res.headers.get("x-task-id")}/log`, 200);
  return { body: JSON.parse(text), log };
}

async function filesHolding(dir: string, needle: string): Promise<string[]> {
  const hits: string[] = [];
  for (const entry of await fs.readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    if ((await fs.readFile(file).catch(() => Buffer.alloc(0))).includes(needle)) hits.push(file);
  }
  return hits;
}

describe("variables and secrets through the service", () => {
  it("reach the function in Python and Node.js, a change from the next call, never another account's function, nothing at rest", async () => {
    const py = await deploy(owner, "py", await zipItems([{ name: "handler.py", data: PY }]), "configpy");
    const js = await deploy(owner, "js", await zipItems([{ name: "handler.js", data: JS }]), "configjs");
    const theirs = await deploy(stranger, "py", await zipItems([{ name: "handler.py", data: PY }]), "theirs");
    for (const fn of [py, js, theirs]) expect(fn.build.status, fn.build.log.join("\n")).toBe("SUCCESS");

    for (const fn of [py, js]) {
      await owner.json("PUT", `/v1/function/${fn.functionId}/env`, 204, { json: { MODE: "first" } });
      await owner.json("PUT", `/v1/function/${fn.functionId}/secrets/API_KEY`, 204, { json: { value: SECRET } });
      const first = await run(owner, fn.functionId);
      expect(first.body).toEqual({ mode: "first", apiKey: SEEN, atLoad: SEEN });
      // The function printed its secret: the task log shows it masked.
      expect(first.log.join("\n")).toContain("the key is ***");
      expect(first.log.join("\n")).not.toContain(SECRET);

      await owner.json("PUT", `/v1/function/${fn.functionId}/env`, 204, { json: { MODE: "second" } });
      await owner.json("DELETE", `/v1/function/${fn.functionId}/secrets/API_KEY`, 204);
      expect((await run(owner, fn.functionId)).body).toEqual({ mode: "second", apiKey: null, atLoad: null });
      await owner.json("PUT", `/v1/function/${fn.functionId}/secrets/API_KEY`, 204, { json: { value: SECRET } });
      expect((await run(owner, fn.functionId)).body).toMatchObject({ apiKey: SEEN });
    }

    // Another account's function on the same node, the pool on: none of it.
    expect((await run(stranger, theirs.functionId)).body).toEqual({ mode: null, apiKey: null, atLoad: null });

    const containers = await docker.listContainers({ all: true, filters: { label: [`${LABEL_MANAGED}=true`] } });
    expect(containers.length).toBeGreaterThan(0);
    // Other checkouts' containers share the engine and may go while this looks: those are skipped.
    for (const c of containers) expect(JSON.stringify(await docker.getContainer(c.Id).inspect().catch(() => null))).not.toContain(SECRET);
    // The Worker's state (D1, Durable Objects, R2) and the agent's (under the same folder), and both logs.
    expect(await filesHolding(worker.stateDir, SECRET)).toEqual([]);
    expect(await filesHolding(logDir, SECRET)).toEqual([]);
    expect(agent.log).not.toContain(SECRET);
    const metrics = await fetch(metricsUrl);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).not.toContain(SECRET);
  }, 1_200_000);
});
