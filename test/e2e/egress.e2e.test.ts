import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { dockerClient } from "../../agent/docker/client.js";
import { bridgeOf, removePolicy } from "../../agent/egress/index.js";
import { probeHandlers } from "../agent/helpers/egress-probes.js";
import { startTestLan, TEST_NAMES, type TestLan } from "../support/test-lan.js";
import { zipItems } from "../support/zip.js";
import { ADMIN_TOKEN, AgentProcess, api, LocalWorker, type Api } from "./harness.js";
import { deploy } from "./deploy.js";

/**
 * Network egress through the whole service: the API and the operator's grant, the dispatcher's
 * placement and its fail-fast verdict, a real agent started with --egress, Docker and gVisor, and
 * test hosts on a network this file creates (test/support/test-lan.ts): nothing leaves the machine.
 */
const tag = randomBytes(2).toString("hex");
const network = `gcfaas-egress-e2e-${tag}`;
const subnet = `10.218.${parseInt(tag, 16) % 250}.0/24`;

let lan: TestLan;
let worker: LocalWorker;
let admin: Api;
let owner: Api;
let ownerId: string;
let plain: AgentProcess;
let egressAgent: AgentProcess | undefined;
let logDir: string;
let functionId: string;

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  lan = await startTestLan();
  logDir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-egress-e2e-"));
  worker = await LocalWorker.create({ logFile: path.join(logDir, "worker.log") });
  admin = api(worker.url, ADMIN_TOKEN);
  const acct = await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "egress-owner" } });
  owner = api(worker.url, acct.token);
  ownerId = acct.accountId;
  // First a fleet whose only node does not allow egress.
  plain = await AgentProcess.start(worker, await worker.agentToken("plain-node"), "plain-node", ["--slots", "2", "--langs", "py", "--pool-size", "0"], path.join(logDir, "plain.log"));
  const d = await deploy(owner, "py", await zipItems(probeHandlers.py!), "prober");
  expect(d.build.status, d.build.log?.join("\n")).toBe("SUCCESS");
  functionId = d.functionId;
}, 1_800_000);

afterAll(async () => {
  await egressAgent?.stop();
  await plain?.stop();
  await worker?.dispose();
  await removePolicy({ bridge: bridgeOf(network), subnet }).catch(() => undefined);
  await dockerClient().getNetwork(network).remove().catch(() => undefined);
  await lan?.close();
  await fs.rm(logDir, { recursive: true, force: true });
});

async function probe(targets: string[], mode = "probe"): Promise<{ status: number; body: string; taskId: string }> {
  const res = await owner("POST", `/v1/task/${functionId}?mode=${mode}`, { json: targets, headers: { prefer: "wait=60" } });
  return { status: res.status, body: await res.text(), taskId: res.headers.get("x-task-id") ?? "" };
}

const at = (address: string) => `${address}:${lan.port}`;

describe("a function without egress", () => {
  it("has no network: loopback only, the public test host unreachable", async () => {
    const ifaces = await probe([], "ifaces");
    expect(ifaces.status, ifaces.body).toBe(200);
    expect(JSON.parse(ifaces.body)).toEqual(["lo"]);
    const out = await probe([at(lan.hosts.public)]);
    expect(JSON.parse(out.body)[at(lan.hosts.public)]).toMatch(/^refused/);
  });
});

describe("PUT /v1/function/<id>/network without the operator's grant", () => {
  it("answers 403 egress_not_allowed and keeps none", async () => {
    const res = await owner("PUT", `/v1/function/${functionId}/network`, { json: { egress: "internet" } });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("egress_not_allowed");
    expect(await owner.json("GET", `/v1/function/${functionId}/network`, 200)).toEqual({ egress: "none" });
  });
});

describe("an egress task when no node of the fleet allows egress", () => {
  it("fails at once with 503 and a log line saying why", async () => {
    await admin.json("PATCH", `/v1/admin/accounts/${ownerId}`, 204, { json: { egress: true } });
    const put = await owner("PUT", `/v1/function/${functionId}/network`, { json: { egress: "internet" } });
    expect(put.status).toBe(204);
    const out = await probe([at(lan.hosts.public)]);
    expect(out.status, out.body).toBe(503);
    const { log } = await owner.json<{ log: string[] }>("GET", `/v1/task/${out.taskId}/log`, 200);
    expect(log.join("\n")).toMatch(/egress/);
  });
});

describe("an egress task on a fleet with an egress node", () => {
  beforeAll(async () => {
    egressAgent = await AgentProcess.start(
      worker,
      await worker.agentToken("egress-node"),
      "egress-node",
      ["--slots", "2", "--langs", "py", "--egress", "--egress-network", network, "--egress-subnet", subnet, "--egress-dns", lan.hosts.resolver, "--egress-allow", lan.allowedRange],
      path.join(logDir, "egress.log"),
    );
  }, 300_000);

  it("runs on that node only, under gVisor where it has it, and reaches public addresses by name and by address", async () => {
    for (let i = 0; i < 3; i++) {
      const out = await probe([`${TEST_NAMES.public}:${lan.port}`, at(lan.hosts.public)]);
      expect(out.status, out.body).toBe(200);
      const body = JSON.parse(out.body) as Record<string, string>;
      expect(body[`${TEST_NAMES.public}:${lan.port}`]).toBe(`ok test host ${lan.hosts.public}`);
      expect(body[at(lan.hosts.public)]).toBe(`ok test host ${lan.hosts.public}`);
      const task = await owner.json<{ node: string; runtime: string }>("GET", `/v1/task/${out.taskId}`, 200);
      expect(task.node).toBe("egress-node");
      expect(["runsc-egress", "runc"]).toContain(task.runtime);
    }
  });

  it("reaches the operator's allowed range, and is refused the metadata range, other private ranges and the node", async () => {
    const targets = [at(lan.hosts.allowed), at(lan.hosts.linkLocal), `${TEST_NAMES.linkLocal}:${lan.port}`, at(lan.hosts.rfc1918_10), at(lan.hosts.shared), at(lan.hostSide), `127.0.0.1:${new URL(worker.url).port}`];
    const out = await probe(targets);
    expect(out.status, out.body).toBe(200);
    const body = JSON.parse(out.body) as Record<string, string>;
    expect(body[at(lan.hosts.allowed)]).toBe(`ok test host ${lan.hosts.allowed}`);
    for (const t of targets.slice(1)) expect(body[t], t).toMatch(/^refused/);
  });

  it("goes back to no network once the function asks for none", async () => {
    expect((await owner("PUT", `/v1/function/${functionId}/network`, { json: { egress: "none" } })).status).toBe(204);
    const ifaces = await probe([], "ifaces");
    expect(JSON.parse(ifaces.body)).toEqual(["lo"]);
  });
});
