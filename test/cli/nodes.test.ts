import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { AgentProcess, LocalWorker } from "../e2e/harness.js";
import { asOperator } from "./run-cli.js";

// `gcfaas nodes …` against a local Worker with one real agent, as an operator (the admin token).
let worker: LocalWorker;
let agent: AgentProcess;

const { gc, ok } = asOperator(() => worker.url);

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  worker = await LocalWorker.create();
  agent = await AgentProcess.start(worker, await worker.agentToken("cli-node"), "cli-node", ["--slots", "3", "--langs", "py"]);
}, 600_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
});

describe("gcfaas nodes", () => {
  it("lists the fleet with each node's state, slots, sandbox runtime and languages", async () => {
    const json = (await ok(["nodes", "list", "--json"])).json<{ id: string; connected: boolean; slots: number; runtime: string; langs: string[] }[]>();
    expect(json).toEqual([expect.objectContaining({ id: "cli-node", connected: true, slots: 3, runtime: "runsc", langs: ["py"] })]);
    const human = (await ok(["nodes", "list"])).stdout;
    expect(human).toMatch(/^NODE\s+STATE\s+BUSY\s+RUNTIME/m);
    expect(human).toMatch(/cli-node\s+serving\s+0\/3\s+runsc\s+py/);
  });

  it("drains and resumes a node", async () => {
    expect((await ok(["nodes", "drain", "cli-node"])).stdout).toContain("is draining");
    expect((await ok(["nodes", "list"])).stdout).toMatch(/cli-node\s+draining/);
    await ok(["nodes", "resume", "cli-node"]);
    expect((await ok(["nodes", "list"])).stdout).toMatch(/cli-node\s+serving/);
  });

  it("answers a node that never connected with the API's 404", async () => {
    const r = await gc(["nodes", "drain", "nobody"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("not_found");
  });
});
