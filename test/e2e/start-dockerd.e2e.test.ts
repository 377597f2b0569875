import { spawn, execFile, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { descendants } from "../support/process-tree.js";
import { ROOT } from "./harness.js";

const run = promisify(execFile);

// The start command's Docker step (scripts/images/ensure-docker.sh → start-dockerd.sh) against a
// private second engine of this test: its own socket, pid file, data root and exec root (and so its
// own containerd). The machine's own dockerd serves others and is never signalled: every signal
// here goes to a pid read from this engine's pid file or to this test's own processes.
const ENSURE = path.join(ROOT, "scripts/images/ensure-docker.sh");
let dir: string;
let env: NodeJS.ProcessEnv;
let pidFile: string;

interface Output {
  child: ChildProcess;
  text: () => string;
  exited: Promise<number | null>;
}

/** Runs ensure-docker.sh in a process group of its own, as a terminal runs a foreground command. */
function ensureDocker(argv: string[] = ["bash", ENSURE]): Output {
  const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  return { child, text: () => out, exited };
}

async function untilLine(o: Output, re: RegExp): Promise<void> {
  for (let i = 0; i < 600 && !re.test(o.text()); i++) await sleep(100);
  expect(o.text()).toMatch(re);
}

const enginePid = () => Number(readFileSync(pidFile, "utf8").trim());
const state = (pid: number) => /^State:\s+(\S)/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
/** Gone or a zombie: nothing reaps orphans on some hosts. */
const exited = (pid: number) => !existsSync(`/proc/${pid}`) || state(pid) === "Z";
const sessionAndGroup = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return { pgid: Number(fields[2]), sid: Number(fields[3]) };
};

async function answers(): Promise<boolean> {
  return run("docker", ["version", "--format", "{{.Server.Version}}"], { env, timeout: 10_000 }).then(
    () => true,
    () => false,
  );
}

async function untilExited(pid: number): Promise<void> {
  for (let i = 0; i < 600 && !exited(pid); i++) await sleep(100);
  expect(exited(pid)).toBe(true);
}

/** The processes of this engine: every live one whose command line names its folder. */
async function engineProcesses(): Promise<number[]> {
  const out: number[] = [];
  for (const entry of await fs.readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cmd = await fs.readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (cmd.includes(dir) && !exited(Number(entry))) out.push(Number(entry));
  }
  return out;
}

beforeAll(async () => {
  // Short: a unix socket path has a 108-byte limit.
  dir = await fs.mkdtemp("/tmp/gcd-");
  pidFile = path.join(dir, "docker.pid");
  env = {
    ...process.env,
    DOCKER_HOST: `unix://${dir}/docker.sock`,
    GCFAAS_DOCKERD_PIDFILE: pidFile,
    GCFAAS_DOCKERD_DATA_ROOT: path.join(dir, "data"),
    GCFAAS_DOCKERD_EXEC_ROOT: path.join(dir, "exec"),
    GCFAAS_DOCKERD_LOG: path.join(dir, "dockerd.log"),
  };
});

afterAll(async () => {
  for (const pid of await engineProcesses()) process.kill(pid, "SIGTERM");
  for (let i = 0; i < 300 && (await engineProcesses()).length; i++) await sleep(100);
  for (const pid of await engineProcesses()) process.kill(pid, "SIGKILL");
  // dockerd leaves its data root bind-mounted on itself.
  const mounts = (await fs.readFile("/proc/self/mounts", "utf8")).split("\n").map((l) => l.split(" ")[1] ?? "").filter((m) => m.startsWith(`${dir}/`));
  for (const m of mounts.sort().reverse()) await run("umount", ["-l", m]).catch(() => undefined);
  await fs.rm(dir, { recursive: true, force: true });
}, 60_000);

describe("starting the Docker Engine (ensure-docker.sh)", () => {
  it("starts it in a session of its own: a Ctrl-C to the start command's process group leaves it running", async () => {
    // A shell that stays after the script, like the start command's node process does.
    const start = ensureDocker(["bash", "-c", `bash ${ENSURE} && echo started && exec sleep 600`]);
    await untilLine(start, /^started$/m);
    const pid = enginePid();
    expect(await answers()).toBe(true);
    expect(sessionAndGroup(pid).sid).toBe(pid);
    expect(sessionAndGroup(pid).pgid).not.toBe(start.child.pid);
    expect(descendants(start.child.pid!)).not.toContain(pid);

    process.kill(-start.child.pid!, "SIGINT");
    await start.exited;
    expect(exited(pid)).toBe(false);
    expect(await answers()).toBe(true);
  }, 180_000);

  it("does nothing when the engine answers", async () => {
    const pid = enginePid();
    const again = ensureDocker();
    expect(await again.exited, again.text()).toBe(0);
    expect(again.text()).not.toMatch(/starting dockerd/);
    expect(enginePid()).toBe(pid);
  }, 60_000);
});

describe("starting the Docker Engine over a stale pid file", () => {
  it("removes a pid file whose pid is now another program's, and starts", async () => {
    const old = enginePid();
    process.kill(old, "SIGKILL");
    await untilExited(old);
    // After a crash the pid is reused: dockerd alone would refuse ("pid file found").
    const other = spawn("sleep", ["600"], { stdio: "ignore" });
    try {
      await fs.writeFile(pidFile, `${other.pid}\n`);
      const start = ensureDocker();
      expect(await start.exited, start.text()).toBe(0);
      expect(start.text()).toMatch(new RegExp(`removing the stale pid file .* \\(pid ${other.pid} is not a running dockerd\\)`));
      expect(enginePid()).not.toBe(other.pid);
      expect(await answers()).toBe(true);
      expect(exited(other.pid!)).toBe(false);
    } finally {
      other.kill("SIGKILL");
    }
  }, 240_000);

  it("removes the pid files of an engine that is gone, and of its containerd, and starts at once", async () => {
    const old = enginePid();
    process.kill(old, "SIGKILL");
    await untilExited(old);
    const start = ensureDocker();
    expect(await start.exited, start.text()).toBe(0);
    expect(start.text()).toMatch(new RegExp(`removing the stale pid file .* \\(pid ${old} is not a running dockerd\\)`));
    // Its containerd died with it: left behind, that pid file made the new engine wait for a
    // containerd that never answers ("timeout waiting for containerd to start").
    expect(start.text()).toMatch(/removing the stale pid file .*\/exec\/containerd\/containerd\.pid \(pid \d+ is not a running containerd\)/);
    expect(start.text()).not.toMatch(/exited before answering/);
    expect(await answers()).toBe(true);
  }, 240_000);
});

describe("starting the Docker Engine while the previous one is still exiting", () => {
  it("waits for an engine that neither answers nor has exited, and starts once it is gone", async () => {
    const old = enginePid();
    // Held mid-way: stopped, with its SIGTERM pending, it stays an engine that does not answer.
    process.kill(old, "SIGSTOP");
    process.kill(old, "SIGTERM");
    const start = ensureDocker();
    await untilLine(start, new RegExp(`dockerd ${old} does not answer: waiting for it to come up or to exit`));
    expect(start.child.exitCode).toBe(null);
    process.kill(old, "SIGKILL");
    expect(await start.exited, start.text()).toBe(0);
    expect(start.text()).toMatch(new RegExp(`dockerd ${old} has exited`));
    expect(enginePid()).not.toBe(old);
    expect(await answers()).toBe(true);
  }, 300_000);

  it("starts right after a stop was asked, whichever moment of the old engine's shutdown it meets", async () => {
    const old = enginePid();
    process.kill(old, "SIGTERM");
    // From the moment it stops answering: before, the script rightly takes it for a running engine.
    while (await answers()) await sleep(50);
    const start = ensureDocker();
    expect(await start.exited, start.text()).toBe(0);
    expect(await answers()).toBe(true);
    const now = enginePid();
    expect(now).not.toBe(old);
    expect(exited(old)).toBe(true);
  }, 300_000);
});
