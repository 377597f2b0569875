import { execFile, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { DebianRoot, parseEnvFile, parseUnit } from "./debian-root.js";
import { deploy, invoke } from "./deploy.js";
import { bootWithSystemd } from "./nspawn.js";
import { engineMountNamespace } from "../support/engine-namespace.js";
import { ADMIN_TOKEN, AgentProcess, api, freePort, LocalWorker, ROOT, type Api } from "./harness.js";
import { commandLine, descendants } from "../support/process-tree.js";
import { zipSources } from "../support/zip.js";

const run = promisify(execFile);

// install-agent.sh runs as root in a clean Debian bookworm root (mmdebstrap minbase) where systemd
// does not run; the agent it installs is then started the way its unit starts it and runs a task
// of a Worker on local workerd. The root's packages come from Debian's mirror, like a host's.
//
// The root has no Node.js at all (bookworm's own nodejs is 18, past its end of life): the release
// carries the pinned LTS (scripts/node-runtime.env) and the unit runs that.
//
// The images are built under a tag of this test's own (GCFAAS_IMAGE_TAG), so that a checkout whose
// shims differ never replaces the gcfaas/<lang>:offline images other suites on this engine use.
const IMAGE_TAG = `install-test-${process.pid}`;
const NODE_ID = "debian-root-1";
const INSTALLER = ["/bin/bash", "/root/release/install-agent.sh"];
/** The unit's file system settings that give the agent a mount namespace of its own. */
const UNIT_SANDBOX = ["ProtectSystem", "ReadWritePaths", "ProtectHome", "PrivateTmp", "ProtectKernelTunables", "ProtectKernelModules", "ProtectControlGroups", "ProtectClock", "ProtectHostname", "RestrictNamespaces"];

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
      // The unit's ProtectHome and PrivateTmp would hide such a folder from the agent.
      ["--state-dir", "/tmp/gcfaas", /--state-dir cannot be under \/home, \/root, \/run\/user, \/tmp or \/var\/tmp/],
      ["--state-dir", "/home/ops/gcfaas", /--state-dir cannot be under/],
      ["--egress-allow", "10.0.5.0/24;touch /tmp/ran", /--egress-allow must be IPv4 ranges separated by commas/],
      // Without --egress the allowance would sit unused in the env file, misleading whoever reads it.
      ["--egress-allow", "10.0.5.0/24", /--egress-allow needs --egress/],
    ] as const) {
      const args = { "--url": worker.url, "--node-id": NODE_ID, "--slots": "2", [flag]: value };
      const { code, output } = await debian.run([...INSTALLER, ...Object.entries(args).flat()], { GCFAAS_AGENT_TOKEN: token });
      expect(code, output).toBe(1);
      expect(output).toMatch(message);
    }
    expect(existsSync(debian.file("etc/gcfaas"))).toBe(false);
  });
});

describe("install-agent.sh and the agent token", () => {
  it("refuses --token: a command line shows in ps to every user of the host", async () => {
    const { code, output } = await debian.run([...INSTALLER, "--url", worker.url, "--token", token]);
    expect(code, output).toBe(1);
    expect(output).toMatch(/--token is not accepted: a command line shows in ps .* Pass --token-file FILE \(mode 600\), --token-file - \(standard input\)/);
    expect(existsSync(debian.file("etc/gcfaas"))).toBe(false);
  });

  it("refuses plain http to another host, where the token would travel in clear, unless --insecure is given", async () => {
    const remote = await debian.run([...INSTALLER, "--url", "http://10.20.30.40:8787", "--node-id", NODE_ID], { GCFAAS_AGENT_TOKEN: token });
    expect(remote.code, remote.output).toBe(1);
    expect(remote.output).toMatch(/--url http:\/\/10\.20\.30\.40:8787 is plain http to another host: the agent token would cross the network in clear\. Use https:\/\/, a loopback address .* or pass --insecure/);
    // Accepted with --insecure: the run goes on to the next check (a bad --slots here) and warns.
    const insecure = await debian.run([...INSTALLER, "--url", "http://10.20.30.40:8787", "--insecure", "--slots", "0"], { GCFAAS_AGENT_TOKEN: token });
    expect(insecure.output).toMatch(/warning: --insecure: the agent token travels in clear to 10\.20\.30\.40/);
    expect(insecure.output).toMatch(/--slots must be a number/);
    for (const loopback of ["http://localhost:1", "http://127.8.9.10:1"]) {
      const local = await debian.run([...INSTALLER, "--url", loopback, "--slots", "0"], { GCFAAS_AGENT_TOKEN: token });
      expect(local.output).not.toMatch(/plain http/);
      expect(local.output).toMatch(/--slots must be a number/);
    }
    expect(existsSync(debian.file("etc/gcfaas"))).toBe(false);
  });
});

describe("install-agent.sh digests", () => {
  /** A copy of the release, changed by `change`, installed from; returns the installer's output. */
  async function installFromCopy(name: string, change: (dir: string) => Promise<void>, extra: string[] = []) {
    const dir = debian.file(`root/${name}`);
    await fs.cp(debian.file("root/release"), dir, { recursive: true });
    await change(dir);
    const r = await debian.run(["/bin/bash", `/root/${name}/install-agent.sh`, "--url", worker.url, "--node-id", NODE_ID, ...extra], { GCFAAS_AGENT_TOKEN: token });
    expect(r.code, r.output).toBe(1);
    expect(existsSync(debian.file("etc/gcfaas"))).toBe(false);
    expect(existsSync(debian.file("opt/gcfaas-agent"))).toBe(false);
    return r.output;
  }

  it("refuses a release whose file does not match SHA256SUMS, before installing anything", async () => {
    const out = await installFromCopy("release-altered", (dir) => fs.appendFile(path.join(dir, "gcfaas-agent.mjs"), "\n// altered\n"));
    expect(out).toMatch(/the release in \/root\/release-altered does not match its SHA256SUMS \(a damaged or altered copy\); nothing was installed:\n.*gcfaas-agent\.mjs: FAILED/);
  });

  it("refuses a file that SHA256SUMS does not list, and a release without SHA256SUMS", async () => {
    expect(await installFromCopy("release-extra", (dir) => fs.writeFile(path.join(dir, "agent/runtimes/python/extra.sh"), "echo hi\n"))).toMatch(
      /files in \/root\/release-extra that its SHA256SUMS does not list: agent\/runtimes\/python\/extra\.sh; nothing was installed/,
    );
    expect(await installFromCopy("release-unsummed", (dir) => fs.rm(path.join(dir, "SHA256SUMS")))).toMatch(/no SHA256SUMS in \/root\/release-unsummed/);
  });

  it("pins SHA256SUMS itself with --release-sha256", async () => {
    const out = await installFromCopy("release-pinned", async () => undefined, ["--release-sha256", "0".repeat(64)]);
    expect(out).toMatch(/SHA256SUMS has SHA-256 [0-9a-f]{64}, not the 0{64} given with --release-sha256: the release was altered or damaged; nothing was installed/);
  });

  it("refuses an images tarball without its .sha256 beside it, or that does not match it", async () => {
    const tar = debian.file("root/images-other.tar");
    await fs.writeFile(tar, "not really images");
    const args = ["--images-tar", "/root/images-other.tar"];
    expect(await installFromCopy("release-img1", async () => undefined, args)).toMatch(/--images-tar \/root\/images-other\.tar has no \/root\/images-other\.tar\.sha256 beside it .* it is not loaded/);
    await fs.writeFile(`${tar}.sha256`, `${"1".repeat(64)}  images-other.tar\n`);
    expect(await installFromCopy("release-img2", async () => undefined, args)).toMatch(/\/root\/images-other\.tar has SHA-256 [0-9a-f]{64}, not 1{64} from .*: a damaged or altered tarball; nothing was installed/);
  });
});

describe("install-agent.sh on a clean Debian 12", () => {
  let output = "";

  beforeAll(async () => {
    expect(existsSync(debian.file("usr/bin/node")) || existsSync(debian.file("usr/local/bin/node"))).toBe(false);
    // The token on standard input: neither the command line nor the environment holds it.
    const installed = await debian.run(
      [...INSTALLER, "--url", worker.url, "--token-file", "-", "--node-id", NODE_ID, "--langs", "py", "--state-dir", path.join(debian.shared, "state")],
      { GCFAAS_IMAGE_TAG: IMAGE_TAG },
      `${token}\n`,
    );
    output = installed.output;
    expect(installed.code, output).toBe(0);
  }, 600_000);

  it("installs the Docker engine and gVisor from Debian and registers runsc with --network=none and --fsgofer-host-uds, and runsc-egress with --network=host", async () => {
    expect(output).toMatch(/installing .*docker\.io.*runsc/);
    expect(existsSync(debian.file("usr/sbin/dockerd"))).toBe(true);
    expect(existsSync(debian.file("usr/bin/runsc"))).toBe(true);
    expect(JSON.parse(await readRoot("etc/docker/daemon.json"))).toEqual({
      runtimes: {
        runsc: { path: "/usr/bin/runsc", runtimeArgs: ["--network=none", "--fsgofer-host-uds"] },
        "runsc-egress": { path: "/usr/bin/runsc", runtimeArgs: ["--network=host", "--fsgofer-host-uds"] },
      },
    });
  });

  it("places the agent with its own Node.js, the pinned LTS, on a host that has none", async () => {
    const pinned = /NODE_VERSION=(\S+)/.exec(await fs.readFile(path.join(ROOT, "scripts/node-runtime.env"), "utf8"))![1];
    expect(output).toContain(`with Node.js v${pinned}`);
    const { stdout } = await run(debian.file("opt/gcfaas-agent/node/bin/node"), ["--version"]);
    expect(stdout.trim()).toBe(`v${pinned}`);
    expect(existsSync(debian.file("usr/bin/node")) || existsSync(debian.file("usr/local/bin/node"))).toBe(false);
  });

  it("places the bundled agent with its runtime definitions and builds the language's image", async () => {
    expect((await readRoot("opt/gcfaas-agent/VERSION")).trim()).toMatch(/^\d+\.\d+\.\d+\+\w+$/);
    expect(existsSync(debian.file("opt/gcfaas-agent/gcfaas-agent.mjs"))).toBe(true);
    expect(existsSync(debian.file("opt/gcfaas-agent/agent/runtimes/python/Dockerfile.offline"))).toBe(true);
    expect(existsSync(debian.file("opt/gcfaas-agent/node_modules"))).toBe(false);
    const { stdout } = await run("docker", ["image", "inspect", "-f", '{{ index .Config.Labels "gcfaas.shim-hash" }}', `gcfaas/python:${IMAGE_TAG}`]);
    expect(stdout.trim()).toMatch(/^[0-9a-f]{16}$/);
  });

  it("writes the token to /etc/gcfaas/agent-token and the settings to agent.env, both readable by root alone", async () => {
    for (const file of ["etc/gcfaas/agent.env", "etc/gcfaas/agent-token"]) {
      const stat = await fs.stat(debian.file(file));
      expect(stat.mode & 0o777, file).toBe(0o600);
      expect(stat.uid, file).toBe(0);
    }
    expect(await readRoot("etc/gcfaas/agent-token")).toBe(`${token}\n`);
    expect(parseEnvFile(await readRoot("etc/gcfaas/agent.env"))).toEqual({
      GCFAAS_URL: worker.url,
      GCFAAS_AGENT_TOKEN_FILE: "/etc/gcfaas/agent-token",
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
      ExecStart: "/opt/gcfaas-agent/node/bin/node /opt/gcfaas-agent/gcfaas-agent.mjs",
      WorkingDirectory: "/opt/gcfaas-agent",
      Restart: "always",
      KillSignal: "SIGTERM",
      KillMode: "mixed",
    });
    expect(Number(unit.TimeoutStopSec)).toBeGreaterThanOrEqual(600);
    expect(unit).toMatchObject({ NoNewPrivileges: "yes", RestrictSUIDSGID: "yes", LockPersonality: "yes", RestrictNamespaces: "mnt", SystemCallArchitectures: "native" });
    expect(unit).toMatchObject({ ProtectSystem: "strict", ReadWritePaths: path.join(debian.shared, "state"), ProtectHome: "yes", PrivateTmp: "yes", ProtectKernelTunables: "yes" });
    expect(unit.ExecStart).not.toMatch(/token|gca_/);
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
    expect(parseEnvFile(await readRoot("etc/gcfaas/agent.env"))).toMatchObject({ GCFAAS_URL: worker.url, GCFAAS_AGENT_TOKEN_FILE: "/etc/gcfaas/agent-token", GCFAAS_SLOTS: "3", GCFAAS_METRICS: `127.0.0.1:${metricsPort}` });
    expect(await readRoot("etc/gcfaas/agent-token")).toBe(`${token}\n`);
    expect((await fs.stat(debian.file("etc/gcfaas/agent.env"))).mode & 0o777).toBe(0o600);
  });

  it("moves the token of an older install's env file into the token file", async () => {
    const envFile = debian.file("etc/gcfaas/agent.env");
    const older = (await fs.readFile(envFile, "utf8")).replace(/^GCFAAS_AGENT_TOKEN_FILE=.*$/m, `GCFAAS_AGENT_TOKEN=${token}`);
    await fs.writeFile(envFile, older);
    await fs.rm(debian.file("etc/gcfaas/agent-token"));
    const again = await debian.run(["/bin/bash", "/root/release-with-images/install-agent.sh"], { GCFAAS_IMAGE_TAG: IMAGE_TAG });
    expect(again.code, again.output).toBe(0);
    expect(await readRoot("etc/gcfaas/agent-token")).toBe(`${token}\n`);
    const env = parseEnvFile(await readRoot("etc/gcfaas/agent.env"));
    expect(env.GCFAAS_AGENT_TOKEN_FILE).toBe("/etc/gcfaas/agent-token");
    expect(env.GCFAAS_AGENT_TOKEN).toBeUndefined();
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
    expect(commandLine(agent.pid!)).not.toContain(token);
    expect(descendants(agent.pid!).map(commandLine).join("\n")).not.toContain(token);

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

  describe("the unit under systemd (the root booted with systemd-nspawn)", () => {
    // Arrangements of the test: systemd is added to the root (minbase has none), Docker's own units
    // are masked there since the host's engine answers through the bound socket, the host's loop
    // devices are bound in, and the unit is enabled by hand (the installer enables it only where
    // systemd runs). The root's PID 1 is its own systemd, not in the engine's mount namespace as a
    // host's is: this machine's /proc is bound in at HOST_PROC and the env file points the agent at
    // dockerd's namespace there (on a host the unit's /proc/1/ns/mnt). nspawn's bind of the
    // namespace file itself fails with EINVAL.
    const HOST_PROC = "/run/host-proc";
    beforeAll(async () => {
      const added = await debian.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "systemd", "systemd-sysv"]);
      expect(added.code, added.output).toBe(0);
      const units = await debian.run(["sh", "-c", "systemctl mask docker.service docker.socket containerd.service && systemctl enable gcfaas-agent.service"]);
      expect(units.code, units.output).toBe(0);
      await fs.appendFile(debian.file("etc/gcfaas/agent.env"), `GCFAAS_ENGINE_MOUNT_NS=${await engineMountNamespace(HOST_PROC)}\n`);
    }, 600_000);

    it("passes systemd-analyze verify", async () => {
      const verified = await debian.run(["systemd-analyze", "verify", "/etc/systemd/system/gcfaas-agent.service"]);
      expect(verified.code, verified.output).toBe(0);
      expect(verified.output).not.toMatch(/gcfaas-agent\.service:.*(Unknown|ignoring|invalid)/i);
    });

    it("starts the agent under its hardening, where it connects, builds a function and runs tasks, its token on no command line", async () => {
      // The agent checks at start that it can loop-mount a build space; nspawn's /dev has no loop devices.
      const loops = (await fs.readdir("/dev")).filter((d) => /^loop(\d+|-control)$/.test(d)).map((d) => `/dev/${d}`);
      await fs.mkdir(debian.file("home/neighbour"), { recursive: true });
      await fs.writeFile(debian.file("home/neighbour/secret"), "not the agent's\n");
      const booted = await bootWithSystemd(debian.root, [debian.shared, ...loops, `/proc:${HOST_PROC}`]);
      let console = "";
      booted.stdout!.on("data", (d) => (console += d));
      booted.stderr!.on("data", (d) => (console += d));
      const halted = new Promise<number | null>((resolve) => booted.once("exit", resolve));
      try {
        const admin = api(worker.url, ADMIN_TOKEN);
        let node: { connected: boolean } | undefined;
        for (let i = 0; i < 240 && !node?.connected; i++) {
          await new Promise((r) => setTimeout(r, 500));
          node = (await admin.json<{ id: string; connected: boolean }[]>("GET", "/v1/admin/nodes", 200)).find((n) => n.id === NODE_ID);
        }
        expect(node?.connected, console).toBe(true);

        const { id, res } = await invoke(user, functionId, { json: { n: 2 } });
        expect(res.status, console).toBe(200);
        expect(JSON.parse(res.body)).toEqual({ ran: "in the debian root", got: { n: 2 } });
        expect(await user.json("GET", `/v1/task/${id}`, 200)).toMatchObject({ node: NODE_ID, runtime: "runsc" });

        // A build, the one thing that mounts: its space is mounted where the engine binds it from,
        // so the build step sees the source the agent unpacked (an empty folder would fail it).
        const zip = await zipSources({ "handler.py": "import helper\ndef handle(event, context):\n    return {'built': helper.WHERE}\n", "helper.py": "WHERE = 'under the unit'\n" });
        const built = await deploy(user, "py", zip, "builtunderunit");
        expect(built.build.status, `${built.build.log.join("\n")}\n${console}`).toBe("SUCCESS");
        const call = await invoke(user, built.functionId, {});
        expect(call.res.status, console).toBe(200);
        expect(JSON.parse(call.res.body)).toEqual({ built: "under the unit" });
        expect(await user.json("GET", `/v1/task/${call.id}`, 200)).toMatchObject({ node: NODE_ID });

        // The agent as systemd started it, against the container's systemd (which nspawn already
        // filters): no new privileges, and the unit's seccomp filters on top; no token in argv.
        const inside = descendants(booted.pid!);
        const pid = inside.find((p) => commandLine(p).includes("/opt/gcfaas-agent/gcfaas-agent.mjs"));
        const init = inside.find((p) => commandLine(p) === "/usr/lib/systemd/systemd" || commandLine(p) === "/sbin/init");
        expect(pid, console).toBeDefined();
        expect(init, inside.map(commandLine).join("\n")).toBeDefined();
        const field = (status: string, name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)$`, "m").exec(status)?.[1]);
        const agentStatus = await fs.readFile(`/proc/${pid}/status`, "utf8");
        const initStatus = await fs.readFile(`/proc/${init}/status`, "utf8");
        expect(field(agentStatus, "NoNewPrivs")).toBe(1);
        expect(field(initStatus, "NoNewPrivs")).toBe(0);
        expect(field(agentStatus, "Seccomp")).toBe(2);
        expect(field(agentStatus, "Seccomp_filters")).toBeGreaterThan(field(initStatus, "Seccomp_filters"));
        // CAP_SYS_BOOT (22) and CAP_LEASE (28) are out of the agent's bounding set.
        const bounding = (status: string) => BigInt(`0x${/^CapBnd:\s+([0-9a-f]+)$/m.exec(status)![1]}`);
        for (const cap of [22n, 28n]) {
          expect(bounding(initStatus) & (1n << cap)).not.toBe(0n);
          expect(bounding(agentStatus) & (1n << cap)).toBe(0n);
        }
        expect(commandLine(pid!)).not.toContain(token);

        // The file system settings, as systemd applied them, and what they leave a compromised agent.
        const show = await run("nsenter", ["--target", String(init), "--mount", "--pid", "systemctl", "show", "gcfaas-agent.service", ...UNIT_SANDBOX.map((p) => `--property=${p}`)]);
        expect(Object.fromEntries(show.stdout.trim().split("\n").map((l) => l.split(/=(.*)/s).slice(0, 2)))).toEqual({
          ProtectSystem: "strict",
          ReadWritePaths: path.join(debian.shared, "state"),
          ProtectHome: "yes",
          PrivateTmp: "yes",
          ProtectKernelTunables: "yes",
          ProtectKernelModules: "yes",
          ProtectControlGroups: "yes",
          ProtectClock: "yes",
          ProtectHostname: "yes",
          RestrictNamespaces: "mnt",
        });
        const asAgent = (script: string) => run("nsenter", ["--target", String(pid), "--mount", "sh", "-c", script]).then(() => "written", (e: { stderr: string }) => e.stderr.trim());
        expect(await asAgent("echo x > /usr/local/bin/gcfaas-probe")).toMatch(/Read-only file system/);
        expect(await asAgent("echo x > /etc/gcfaas/probe")).toMatch(/Read-only file system/);
        expect(await asAgent("echo x > /proc/sys/kernel/hostname")).toMatch(/Read-only file system/);
        expect(await asAgent("cat /home/neighbour/secret")).toMatch(/No such file or directory/);
        expect(await asAgent(`echo x > ${path.join(debian.shared, "state", "probe")}`)).toBe("written");
        expect(await asAgent("echo x > /tmp/gcfaas-probe")).toBe("written");
        // The agent's /tmp is its own: the file is not in the root's.
        await expect(run("nsenter", ["--target", String(init), "--mount", "cat", "/tmp/gcfaas-probe"])).rejects.toThrow(/No such file or directory/);
        await fs.rm(path.join(debian.shared, "state", "probe"));
      } finally {
        booted.kill("SIGTERM");
      }
      expect(await halted, console).toBe(0);
    }, 300_000);
  });

  it("--uninstall removes the unit, the env file, the agent and its state, and keeps the images", async () => {
    const removed = await debian.run([...INSTALLER, "--uninstall"]);
    expect(removed.code, removed.output).toBe(0);
    for (const p of ["etc/systemd/system/gcfaas-agent.service", "etc/gcfaas/agent.env", "etc/gcfaas/agent-token", "etc/gcfaas", "opt/gcfaas-agent"]) expect(existsSync(debian.file(p)), p).toBe(false);
    expect(existsSync(path.join(debian.shared, "state"))).toBe(false);
    expect(removed.output).toMatch(/runtime images stay/);
    await expect(run("docker", ["image", "inspect", `gcfaas/python:${IMAGE_TAG}`])).resolves.toBeDefined();
  });
});
