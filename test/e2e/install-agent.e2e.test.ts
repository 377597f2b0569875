import { execFile, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { DebianRoot, parseEnvFile, parseUnit } from "./debian-root.js";
import { deploy, invoke } from "./deploy.js";
import { ADMIN_TOKEN, AgentProcess, api, freePort, LocalWorker, ROOT, type Api } from "./harness.js";
import { zipSources } from "../support/zip.js";

const run = promisify(execFile);

// install-agent.sh runs as root in a clean Debian bookworm root (mmdebstrap minbase) where systemd
// does not run; the agent it installs is then started the way its unit starts it and runs a task
// of a Worker on local workerd. The root's packages come from Debian's mirror, like a host's.
//
// One arrangement of the test: bookworm's own nodejs is 18, too old for the agent, and no NodeSource
// mirror is reachable here, so after checking that the script refuses such a host, the test
// copies this machine's Node 20 binary into /usr/local/bin as an operator would.
//
// The images are built under a tag of this test's own (GCFAAS_IMAGE_TAG), so that a checkout whose
// shims differ never replaces the gcfaas/<lang>:offline images other suites on this engine use.
const IMAGE_TAG = `install-test-${process.pid}`;
const NODE_ID = "debian-root-1";
const INSTALLER = ["/bin/bash", "/root/release/install-agent.sh"];

let debian: DebianRoot;
let worker: LocalWorker;
let user: Api;
let token: string;
let functionId: string;
let agent: ChildProcess | undefined;
let agentLog = "";

async function readRoot(p: string): Promise<string> {
  return fs.readFile(debian.file(p), "utf8");
}

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  debian = await DebianRoot.create();
  await run("bash", [path.join(ROOT, "scripts/release-agent.sh"), debian.file("root/release")]);
  worker = await LocalWorker.create();
  const admin = api(worker.url, ADMIN_TOKEN);
  const acct = await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "install" } });
  user = api(worker.url, acct.token);
  token = await worker.agentToken(NODE_ID);
  // The function is built by an agent of the checkout: builds loop-mount a space the host's
  // Docker Engine must see, which a mount made inside the root is not. The root's agent runs the task.
  const builder = await AgentProcess.start(worker, await worker.agentToken("builder"), "builder", ["--langs", "py", "--metrics", "0"]);
  try {
    const zip = await zipSources({ "handler.py": "def handle(event, context):\n    return {'ran': 'in the debian root', 'got': event.json}\n" });
    const deployed = await deploy(user, "py", zip, "installed");
    expect(deployed.build.status, deployed.build.log.join("\n")).toBe("SUCCESS");
    functionId = deployed.functionId;
  } finally {
    await builder.stop();
  }
}, 900_000);

afterAll(async () => {
  if (agent && agent.exitCode === null) agent.kill("SIGKILL");
  await worker?.dispose();
  await debian?.dispose();
  await run("docker", ["image", "rm", `gcfaas/python:${IMAGE_TAG}`]).catch(() => undefined);
});

describe("install-agent.sh settings", () => {
  it("refuses values that the env file could not hold safely (it is also read by a shell) before writing anything", async () => {
    for (const [flag, value, message] of [
      ["--url", "http://127.0.0.1:1;touch /tmp/ran", /--url must be the control plane's http\(s\) URL/],
      ["--node-id", "a b", /--node-id must be 1-64 of/],
      ["--slots", "2000", /--slots must be a number from 1 to 1024/],
    ] as const) {
      const args = { "--url": worker.url, "--node-id": NODE_ID, "--slots": "2", [flag]: value };
      const { code, output } = await debian.run([...INSTALLER, ...Object.entries(args).flat(), "--token", token]);
      expect(code, output).toBe(1);
      expect(output).toMatch(message);
    }
    expect(existsSync(debian.file("etc/gcfaas"))).toBe(false);
  });
});

describe("install-agent.sh on a host without Node.js 20", () => {
  it("refuses, naming the way out, before installing anything", async () => {
    const { code, output } = await debian.run([...INSTALLER, "--url", worker.url, "--token", token, "--node-id", NODE_ID]);
    expect(code, output).toBe(1);
    expect(output).toMatch(/needs Node\.js >= 20; this host has none and its apt sources offer 18\. Re-run with --nodesource/);
    expect(existsSync(debian.file("usr/sbin/dockerd"))).toBe(false);
    expect(existsSync(debian.file("opt/gcfaas-agent"))).toBe(false);
  });
});

describe("install-agent.sh on a clean Debian 12", () => {
  let output = "";

  beforeAll(async () => {
    await fs.copyFile(process.execPath, debian.file("usr/local/bin/node"));
    const installed = await debian.run([...INSTALLER, "--url", worker.url, "--node-id", NODE_ID, "--langs", "py", "--state-dir", path.join(debian.shared, "state")], {
      GCFAAS_AGENT_TOKEN: token,
      GCFAAS_IMAGE_TAG: IMAGE_TAG,
    });
    output = installed.output;
    expect(installed.code, output).toBe(0);
  }, 600_000);

  it("installs the Docker engine and gVisor from Debian and registers runsc with --network=none and --fsgofer-host-uds", async () => {
    expect(output).toMatch(/installing .*docker\.io.*runsc/);
    expect(existsSync(debian.file("usr/sbin/dockerd"))).toBe(true);
    expect(existsSync(debian.file("usr/bin/runsc"))).toBe(true);
    expect(JSON.parse(await readRoot("etc/docker/daemon.json"))).toEqual({ runtimes: { runsc: { path: "/usr/bin/runsc", runtimeArgs: ["--network=none", "--fsgofer-host-uds"] } } });
  });

  it("places the bundled agent with its runtime definitions and builds the language's image", async () => {
    expect((await readRoot("opt/gcfaas-agent/VERSION")).trim()).toMatch(/^\d+\.\d+\.\d+\+\w+$/);
    expect(existsSync(debian.file("opt/gcfaas-agent/gcfaas-agent.mjs"))).toBe(true);
    expect(existsSync(debian.file("opt/gcfaas-agent/agent/runtimes/python/Dockerfile.offline"))).toBe(true);
    expect(existsSync(debian.file("opt/gcfaas-agent/node_modules"))).toBe(false);
    const { stdout } = await run("docker", ["image", "inspect", "-f", '{{ index .Config.Labels "gcfaas.shim-hash" }}', `gcfaas/python:${IMAGE_TAG}`]);
    expect(stdout.trim()).toMatch(/^[0-9a-f]{16}$/);
  });

  it("writes /etc/gcfaas/agent.env readable by root alone", async () => {
    const stat = await fs.stat(debian.file("etc/gcfaas/agent.env"));
    expect(stat.mode & 0o777).toBe(0o600);
    expect(stat.uid).toBe(0);
    expect(parseEnvFile(await readRoot("etc/gcfaas/agent.env"))).toEqual({
      GCFAAS_URL: worker.url,
      GCFAAS_AGENT_TOKEN: token,
      GCFAAS_NODE_ID: NODE_ID,
      GCFAAS_LANGS: "py",
      GCFAAS_STATE_DIR: path.join(debian.shared, "state"),
      GCFAAS_IMAGE_TAG: IMAGE_TAG,
    });
  });

  it("writes a unit that restarts always, reads the env file and stops with a drain", async () => {
    const unit = parseUnit(await readRoot("etc/systemd/system/gcfaas-agent.service"));
    expect(unit).toMatchObject({
      EnvironmentFile: "/etc/gcfaas/agent.env",
      ExecStart: "/usr/local/bin/node /opt/gcfaas-agent/gcfaas-agent.mjs",
      WorkingDirectory: "/opt/gcfaas-agent",
      Restart: "always",
      KillSignal: "SIGTERM",
      KillMode: "mixed",
    });
    expect(Number(unit.TimeoutStopSec)).toBeGreaterThanOrEqual(600);
    expect(output).toMatch(/systemd does not run here/);
    expect(output).toMatch(/journalctl -u gcfaas-agent -f/);
  });

  it("upgrades from a release that ships its images, installing nothing, keeping settings not given and lines added by hand", async () => {
    const metricsPort = await freePort();
    await fs.appendFile(debian.file("etc/gcfaas/agent.env"), `GCFAAS_METRICS=127.0.0.1:${metricsPort}\n`);
    await run("bash", [path.join(ROOT, "scripts/release-agent.sh"), "--with-images", "python", debian.file("root/release-with-images")], { env: { ...process.env, GCFAAS_IMAGE_TAG: IMAGE_TAG } });
    const again = await debian.run(["/bin/bash", "/root/release-with-images/install-agent.sh", "--slots", "3"], { GCFAAS_IMAGE_TAG: IMAGE_TAG });
    expect(again.code, again.output).toBe(0);
    expect(again.output).not.toMatch(/installing|registered runsc|building runtime images/);
    expect(again.output).toMatch(/loading runtime images from \/root\/release-with-images\/images\.tar/);
    expect(parseEnvFile(await readRoot("etc/gcfaas/agent.env"))).toMatchObject({ GCFAAS_URL: worker.url, GCFAAS_AGENT_TOKEN: token, GCFAAS_SLOTS: "3", GCFAAS_METRICS: `127.0.0.1:${metricsPort}` });
    expect((await fs.stat(debian.file("etc/gcfaas/agent.env"))).mode & 0o777).toBe(0o600);
  });

  it("gives an agent that, started as the unit starts it, connects, runs a task and serves its metrics", async () => {
    const { EnvironmentFile = "", ExecStart = "", WorkingDirectory } = parseUnit(await readRoot("etc/systemd/system/gcfaas-agent.service"));
    const env = parseEnvFile(await readRoot(EnvironmentFile));
    agent = debian.spawn(ExecStart.split(" "), env, WorkingDirectory);
    const connected = new Promise<void>((resolve, reject) => {
      const onData = (d: Buffer) => {
        agentLog += d;
        if (/connected to dispatcher/.test(agentLog)) resolve();
      };
      agent!.stdout!.on("data", onData);
      agent!.stderr!.on("data", onData);
      agent!.on("exit", (code) => reject(new Error(`the agent exited (${code}):\n${agentLog}`)));
    });
    await connected;

    const { id, res } = await invoke(user, functionId, { json: { n: 1 } });
    expect(res.status, agentLog).toBe(200);
    expect(JSON.parse(res.body)).toEqual({ ran: "in the debian root", got: { n: 1 } });
    // The installer registered gVisor, and the installed agent runs the task under it.
    expect(await user.json("GET", `/v1/task/${id}`, 200)).toMatchObject({ node: NODE_ID, runtime: "runsc" });
    const nodes = await api(worker.url, ADMIN_TOKEN).json<{ id: string; agentVersion: string | null; connected: boolean }[]>("GET", "/v1/admin/nodes", 200);
    expect(nodes.find((n) => n.id === NODE_ID)).toMatchObject({ connected: true, runtime: "runsc", agentVersion: (await readRoot("opt/gcfaas-agent/VERSION")).trim() });

    const metrics = await (await fetch(`http://${env.GCFAAS_METRICS}/metrics`)).text();
    expect(metrics).toMatch(/^gcfaas_agent_task_duration_seconds_count\{lang="py",status="2xx"\} 1$/m);
    expect(metrics).toMatch(/^gcfaas_agent_slots 3$/m);

    const exited = new Promise<number | null>((resolve) => agent!.once("exit", resolve));
    agent.kill("SIGTERM");
    expect(await exited, agentLog).toBe(0);
    expect(agentLog).toMatch(/drained and stopped/);
  });

  it("--uninstall removes the unit, the env file, the agent and its state, and keeps the images", async () => {
    const removed = await debian.run([...INSTALLER, "--uninstall"]);
    expect(removed.code, removed.output).toBe(0);
    for (const p of ["etc/systemd/system/gcfaas-agent.service", "etc/gcfaas/agent.env", "etc/gcfaas", "opt/gcfaas-agent"]) expect(existsSync(debian.file(p)), p).toBe(false);
    expect(existsSync(path.join(debian.shared, "state"))).toBe(false);
    expect(removed.output).toMatch(/runtime images stay/);
    await expect(run("docker", ["image", "inspect", `gcfaas/python:${IMAGE_TAG}`])).resolves.toBeDefined();
  });
});
