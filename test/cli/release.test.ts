import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { ADMIN_TOKEN, AgentProcess, api, LocalWorker, type Api } from "../e2e/harness.js";
import { runCli, show } from "./run-cli.js";

// `gcfaas release` and `gcfaas rollback` against a local Worker and one real agent (Docker): two
// builds of one Python function that answer "v1" and "v2", so every answer says which code ran.
let worker: LocalWorker;
let agent: AgentProcess;
let token: string;
let owner: Api;
let tmp: string;
let fn: string;
const builds: string[] = [];

const gc = (args: string[]) => runCli(args, { cwd: tmp, env: { GCFAAS_URL: worker.url, GCFAAS_TOKEN: token, GCFAAS_CONFIG: "/nonexistent/gcfaas.json" } });
const ok = async (args: string[]) => {
  const r = await gc(args);
  expect(r.code, `gcfaas ${args.join(" ")}\n${show(r)}`).toBe(0);
  return r;
};

async function deployVersion(version: string): Promise<string> {
  await fs.writeFile(path.join(tmp, "rel", "handler.py"), `def handle(event, context):\n    return "${version}"\n`);
  const r = await ok(["deploy", "rel", "--json"]);
  return r.json<{ id: string; functionId: string }>().id;
}

/** A task through the CLI: which code answered, and which build the task records. */
async function invoke(): Promise<{ body: string; buildId: string }> {
  const r = await ok(["invoke", "rel", "--json"]);
  const { id, body } = r.json<{ id: string; body: string }>();
  const task = await owner.json("GET", `/v1/task/${id}`, 200);
  return { body, buildId: task.buildId };
}

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-cli-release-"));
  worker = await LocalWorker.create();
  token = (await api(worker.url, ADMIN_TOKEN).json("POST", "/v1/admin/accounts", 201, { json: { name: "cli-release" } })).token;
  owner = api(worker.url, token);
  agent = await AgentProcess.start(worker, await worker.agentToken("agent-release"), "agent-release", ["--slots", "4"]);
  const init = await gc(["init", "rel", "--lang", "py"]);
  expect(init.code, show(init)).toBe(0);
  builds.push(await deployVersion("v1"), await deployVersion("v2"));
  fn = JSON.parse(await fs.readFile(path.join(tmp, "rel", ".gcfaas.json"), "utf8")).functionId;
}, 900_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
  if (tmp) await fs.rm(tmp, { recursive: true, force: true });
});

describe("gcfaas release", () => {
  it("shows the release, pins a build, and follows the newest again with --latest; a warm container of one build never answers for the other", async () => {
    const [v1, v2] = builds as [string, string];
    expect((await ok(["release", "rel", "--json"])).json()).toEqual({ buildId: v2, pinned: false, canary: null });
    expect((await ok(["release", "rel"])).stdout).toMatch(/follows the newest successful build/);
    // v2 runs and stays warm on the agent; the pin must start v1's code, not reuse v2's container.
    expect(await invoke()).toEqual({ body: "v2", buildId: v2 });
    const pinned = await ok(["release", "rel", v1]);
    expect(pinned.stdout).toMatch(new RegExp(`build:\\s+${v1}`));
    expect(pinned.stdout).toMatch(/mode:\s+pinned/);
    expect(await invoke()).toEqual({ body: "v1", buildId: v1 });
    expect(await invoke()).toEqual({ body: "v1", buildId: v1 });
    expect((await ok(["release", "rel", "--latest", "--json"])).json()).toEqual({ buildId: v2, pinned: false, canary: null });
    expect(await invoke()).toEqual({ body: "v2", buildId: v2 });
  });

  it("with --canary sends part of the tasks to a second build, each answered by its own build's code", async () => {
    const [v1, v2] = builds as [string, string];
    expect((await ok(["release", "rel", v1, "--canary", `${v2}=50`, "--json"])).json()).toEqual({ buildId: v1, pinned: true, canary: { buildId: v2, weight: 50 } });
    // Concurrent calls keep warm containers of both builds busy side by side on the one agent.
    const ran = await Promise.all(
      Array.from({ length: 24 }, async () => {
        const res = await owner("POST", `/v1/task/${fn}`, { headers: { prefer: "wait=30" } });
        expect(res.status).toBe(200);
        return { body: await res.text(), id: res.headers.get("x-task-id") ?? "" };
      }),
    );
    const seen = new Set<string>();
    for (const r of ran) {
      const task = await owner.json("GET", `/v1/task/${r.id}`, 200);
      expect(r.body).toBe(task.buildId === v1 ? "v1" : "v2");
      seen.add(task.buildId);
    }
    // Each of 24 calls goes either way at 50 %: all one way has a chance of 2 in 16 million.
    expect([...seen].sort()).toEqual([v1, v2].sort());
  });

  it("refuses a build id together with --latest, and a malformed --canary, as usage errors", async () => {
    const both = await gc(["release", "rel", builds[0]!, "--latest"]);
    expect(both.code, show(both)).toBe(2);
    const bad = await gc(["release", "rel", builds[0]!, "--canary", "nope"]);
    expect(bad.code, show(bad)).toBe(2);
    expect(bad.stderr).toContain("<build-id>=<weight>");
    const weight = await gc(["release", "rel", builds[0]!, "--canary", `${builds[1]}=100`]);
    expect(weight.code, show(weight)).toBe(1);
    expect(weight.stderr).toMatch(/validation_failed.*\n.*canary\.weight/);
  });
});

describe("gcfaas rollback", () => {
  it("pins the build before the one that runs, and fails with the service's 409 when there is none", async () => {
    const [v1, v2] = builds as [string, string];
    await ok(["release", "rel", "--latest"]);
    const back = await ok(["rollback", "rel", "--json"]);
    expect(back.json()).toEqual({ buildId: v1, pinned: true, canary: null });
    expect(await invoke()).toEqual({ body: "v1", buildId: v1 });
    const none = await gc(["rollback", "rel"]);
    expect(none.code, show(none)).toBe(1);
    expect(none.stderr).toContain("error: no_previous_build:");
    expect((await ok(["release", "rel", "--json"])).json()).toEqual({ buildId: v1, pinned: true, canary: null });
    await ok(["release", "rel", v2]);
    expect(await invoke()).toEqual({ body: "v2", buildId: v2 });
  });
});
