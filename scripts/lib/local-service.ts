import { spawn, type ChildProcess } from "node:child_process";
import { randomInt } from "node:crypto";
import { createWriteStream } from "node:fs";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { d1DelayFrom } from "./d1-delay.js";

/**
 * The service on one machine, for `npm run dev` and the end-to-end suite alike: the Worker under
 * wrangler's dev server (workerd with local D1, R2 and Durable Objects persisted in a folder, so a
 * restart keeps them; see serve-worker.ts) and agents as separate `node` processes driving the local Docker Engine.
 */
export const ROOT = path.resolve(import.meta.dirname, "../..");
const BIN = path.join(ROOT, "node_modules/.bin");
export const ADMIN_TOKEN = "e2e-admin-token";

/** Where the kernel's ephemeral ports (those of every `listen(0)` and outgoing connection) begin. */
async function ephemeralFloor(): Promise<number> {
  const range = await fs.readFile("/proc/sys/net/ipv4/ip_local_port_range", "utf8").catch(() => "");
  const low = Number(range.trim().split(/\s+/)[0]);
  return Number.isInteger(low) && low > 11_000 ? low : 32_768;
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/**
 * A loopback port free now, for a process to listen on a little later. Drawn below the kernel's
 * ephemeral range: a port the kernel handed out and took back (listen(0) then close) may go to the
 * next listen(0) meanwhile, and the Worker's own start makes several (workerd's sockets, wrangler's
 * migrations), so a Worker once found its port taken (EADDRINUSE). The kernel never hands out a port
 * below the range by itself; only another caller of this function could take it, at random among
 * thousands.
 */
export async function freePort(): Promise<number> {
  const floor = await ephemeralFloor();
  for (;;) {
    const port = 10_000 + randomInt(floor - 10_000);
    if (await canListen(port)) return port;
  }
}

function waitForLine(child: ChildProcess, re: RegExp, timeoutMs: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`${what} not ready in ${timeoutMs} ms:\n${seen.slice(-3000)}`)), timeoutMs);
    const onData = (d: Buffer) => {
      seen += d.toString();
      if (re.test(seen)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code}:\n${seen.slice(-3000)}`));
    });
  });
}

export interface WorkerOptions {
  /** Persisted D1/R2/DO state; a fresh temporary folder when omitted (removed by dispose()). */
  stateDir?: string;
  port?: number;
  adminToken?: string;
  /** A file that receives wrangler's output (appended); otherwise it is dropped once ready. */
  logFile?: string;
  /**
   * Lets the test fire the Worker's Cron Triggers on demand (triggerCron), as `wrangler dev
   * --test-scheduled` does; off by default, since any local client could then fire them too.
   */
  testScheduled?: boolean;
  /** Milliseconds added before every D1 round trip (GCFAAS_D1_DELAY_MS); the environment's value when omitted. */
  d1DelayMs?: number;
  /** Lets the test make D1 fail for a while (failD1); off by default, as testScheduled is. */
  testD1Failures?: boolean;
  /**
   * Fires wrangler.toml's Cron Triggers at their times, as Cloudflare does for a deployed Worker
   * (the start command); off by default, so that no sweep runs in the middle of a test.
   */
  crons?: boolean;
}

export type D1FailureMode = "refuse" | "lose_answer";

/** The Worker's D1 trouble as GET /__test/d1 reports it (worker/diagnostics/d1-control.ts). */
export interface D1TroubleState {
  failing: boolean;
  until: number | null;
  mode: D1FailureMode | null;
  /** Round trips the current (or last) window failed. */
  failed: number;
  /** Round trips held back by the delay since the Worker started. */
  delayed: number;
  delayMs: number;
}

export class LocalWorker {
  child?: ChildProcess;
  readonly url: string;
  private constructor(
    readonly port: number,
    readonly stateDir: string,
    readonly adminToken: string,
    private readonly temporary: boolean,
    private readonly logFile: string | undefined,
    private readonly testScheduled = false,
    private readonly d1: { delayMs?: number; failures?: boolean } = {},
    private readonly crons = false,
  ) {
    this.url = `http://127.0.0.1:${port}`;
  }

  static async create(o: WorkerOptions = {}): Promise<LocalWorker> {
    const stateDir = o.stateDir ?? (await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-e2e-")));
    await fs.mkdir(stateDir, { recursive: true });
    if (o.d1DelayMs !== undefined) d1DelayFrom(String(o.d1DelayMs), "d1DelayMs");
    const d1 = { ...(o.d1DelayMs !== undefined ? { delayMs: o.d1DelayMs } : {}), failures: o.testD1Failures ?? false };
    const w = new LocalWorker(o.port ?? (await freePort()), stateDir, o.adminToken ?? ADMIN_TOKEN, !o.stateDir, o.logFile, o.testScheduled, d1, o.crons);
    // Idempotent: applies only migrations the local database has not seen.
    await run(path.join(BIN, "wrangler"), ["d1", "migrations", "apply", "gc-faas", "--local", "--persist-to", stateDir]);
    await w.start();
    return w;
  }

  async start(): Promise<void> {
    this.child = spawn(
      process.execPath,
      ["--import", "tsx", path.join(ROOT, "scripts/lib/serve-worker.ts"), String(this.port), this.stateDir, this.logFile ? "info" : "warn"],
      // Its own process group: wrangler runs workerd as grandchildren, which a signal to wrangler
      // alone can leave behind. The admin token travels in the environment: a command line is
      // readable by every user of the host (ps), a process's environment by its owner alone.
      { cwd: ROOT, env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true", GCFAAS_ADMIN_TOKEN: this.adminToken, ...(this.testScheduled ? { GCFAAS_TEST_SCHEDULED: "1" } : {}), GCFAAS_CRONS: this.crons ? "on" : "off", ...this.d1Env() }, stdio: ["ignore", "pipe", "pipe"], detached: true },
    );
    if (this.logFile) teeToFile(this.child, this.logFile);
    await waitForLine(this.child, /Ready on/, 120_000, "the Worker");
    this.startKeepalive();
  }

  /** Runs the Worker's scheduled handler for `cron` now, or as if at `at` (only with `testScheduled`); resolves once it finished. */
  async triggerCron(cron: string, at?: number): Promise<void> {
    if (!this.testScheduled) throw new Error("this LocalWorker was created without testScheduled");
    const res = await fetch(`${this.url}/__test/scheduled?cron=${encodeURIComponent(cron)}${at === undefined ? "" : `&time=${at}`}`, { method: "POST" });
    if (!res.ok) throw new Error(`firing the cron ${cron}: ${res.status} ${await res.text()}`);
    await res.body?.cancel();
  }

  private d1Env(): Record<string, string> {
    return {
      ...(this.d1.delayMs !== undefined ? { GCFAAS_D1_DELAY_MS: String(this.d1.delayMs) } : {}),
      ...(this.d1.failures ? { GCFAAS_TEST_D1_FAILURES: "1" } : {}),
    };
  }

  /**
   * Makes every D1 round trip of the Worker and its Durable Objects fail for `ms` from now (only
   * with `testD1Failures`). `refuse`: D1 is not reached; `lose_answer`: it is, and commits, and the
   * caller gets the error anyway; `after` round trips go through first. Resolves with the state
   * once the window is open.
   */
  failD1(ms: number, mode: D1FailureMode = "refuse", after = 0): Promise<D1TroubleState> {
    return this.d1Control("POST", `?failForMs=${ms}&mode=${mode}&after=${after}`);
  }

  /** Ends a failure window now. */
  healD1(): Promise<D1TroubleState> {
    return this.d1Control("DELETE");
  }

  d1State(): Promise<D1TroubleState> {
    return this.d1Control("GET");
  }

  private d1Control(method: string, query = ""): Promise<D1TroubleState> {
    if (!this.d1.failures) throw new Error("this LocalWorker was created without testD1Failures");
    return d1Control(this.url, this.adminToken, method, query);
  }

  private keepalive?: NodeJS.Timeout;

  /**
   * Local workerd (as of 1.20260409) can leave requests that sleep on timers (result reads with
   * ?wait) stalled until some other HTTP request reaches the Worker; production has a steady flow
   * of requests and no such stall was seen there. A request a second keeps local runs honest.
   */
  private startKeepalive() {
    clearInterval(this.keepalive);
    this.keepalive = setInterval(() => {
      fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.body?.cancel(), () => undefined);
    }, 1000);
    this.keepalive.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.keepalive);
    const c = this.child;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once("exit", r));
    killGroup(c, "SIGTERM");
    await Promise.race([exited, sleep(10_000)]);
    // Whatever of the group outlived wrangler (workerd) goes too.
    killGroup(c, "SIGKILL");
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** A new agent token, bound to the node id the agent must then run as. */
  agentToken(nodeId: string): Promise<string> {
    return mintAgentToken(this.url, this.adminToken, nodeId);
  }

  async dispose(): Promise<void> {
    await this.stop();
    if (this.temporary) await fs.rm(this.stateDir, { recursive: true, force: true });
  }
}

/** The D1 failure control of the Worker at `url` (worker/diagnostics/d1-control.ts): GET the state, POST a window, DELETE it. */
export async function d1Control(url: string, adminToken: string, method: string, query = ""): Promise<D1TroubleState> {
  const res = await fetch(`${url}/__test/d1${query}`, { method, headers: { authorization: `Bearer ${adminToken}` } });
  if (!res.ok) throw new Error(`${method} /__test/d1${query}: ${res.status} ${await res.text()}`);
  return (await res.json()) as D1TroubleState;
}

/** A new agent token from the Worker at `url`, bound to the node id the agent must then run as. */
export async function mintAgentToken(url: string, adminToken: string, nodeId: string): Promise<string> {
  const res = await fetch(`${url}/v1/admin/agent-tokens`, {
    method: "POST",
    headers: { authorization: `Bearer ${adminToken}`, "content-type": "application/json" },
    body: JSON.stringify({ nodeId }),
  });
  if (res.status !== 201) throw new Error(`minting an agent token for ${nodeId}: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { token: string }).token;
}

function killGroup(c: ChildProcess, signal: NodeJS.Signals) {
  try {
    if (c.pid) process.kill(-c.pid, signal);
  } catch {
    /* the group is gone */
  }
}

function teeToFile(child: ChildProcess, file: string) {
  const out = createWriteStream(file, { flags: "a" });
  child.stdout?.pipe(out, { end: false });
  child.stderr?.pipe(out, { end: false });
}

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    c.stdout.on("data", (d) => (out += d));
    c.stderr.on("data", (d) => (out += d));
    c.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(" ")} failed:\n${out}`))));
  });
}

export class AgentProcess {
  child?: ChildProcess;
  log = "";
  constructor(
    readonly nodeId: string,
    private readonly args: string[],
    /** Never in `args`: a command line is readable by every user of the host (ps). */
    private readonly token: string,
    private readonly logFile?: string,
  ) {}

  /** `worker`: the Worker to connect to, and a folder whose `agent-<node id>` holds the agent's state. */
  static async start(worker: { url: string; stateDir: string }, token: string, nodeId: string, extra: string[] = [], logFile?: string): Promise<AgentProcess> {
    const stateDir = path.join(worker.stateDir, `agent-${nodeId}`);
    // Several agents on one host: each serves its metrics on a port of its own unless told one.
    const metrics = extra.includes("--metrics") ? [] : ["--metrics", `127.0.0.1:${await freePort()}`];
    const a = new AgentProcess(nodeId, ["--import", "tsx", path.join(ROOT, "agent/main.ts"), "--url", worker.url, "--node-id", nodeId, "--state-dir", stateDir, "--no-build-images", ...metrics, ...extra], token, logFile);
    await a.spawn();
    return a;
  }

  async spawn(): Promise<void> {
    this.child = spawn(process.execPath, this.args, { cwd: ROOT, env: { ...process.env, GCFAAS_DEBUG: "1", GCFAAS_AGENT_TOKEN: this.token }, stdio: ["ignore", "pipe", "pipe"] });
    // The last 256 KiB of output, for test failure messages.
    const keep = (d: Buffer) => (this.log = (this.log + d.toString()).slice(-262_144));
    this.child.stdout?.on("data", keep);
    this.child.stderr?.on("data", keep);
    if (this.logFile) teeToFile(this.child, this.logFile);
    await waitForLine(this.child, /connected to dispatcher/, 60_000, `agent ${this.nodeId}`);
  }

  /** A crash: no drain, no goodbye. */
  kill(): void {
    this.child?.kill("SIGKILL");
  }

  async stop(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once("exit", r));
    c.kill("SIGTERM");
    await Promise.race([exited, sleep(30_000)]);
    if (c.exitCode === null) c.kill("SIGKILL");
  }
}

