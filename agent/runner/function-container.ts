import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type Docker from "dockerode";
import { forceRemove, LABEL_AGENT, LABEL_BUILD, LABEL_FUNCTION, LABEL_MANAGED, LABEL_ROLE } from "../docker/client.js";
import { attachOutput } from "../docker/output.js";
import { sandboxHostConfig, type SandboxLimits } from "../docker/sandbox.js";
import { FUNCTION_UID } from "../runtimes/languages.js";
import { InvocationLog, type CallLog, type LineFeed, type LogBounds } from "./invocation-log.js";
import { CHANNEL_SOCKET, ShimChannel } from "./shim-channel.js";
import type { ShimResponse } from "./shim-client.js";
import type { FunctionRequest } from "./types.js";

/** Which function a container serves, as its shim learns it (environment at start, or pool init). */
export interface FunctionIdentity {
  functionId: string;
  buildId: string;
  timeoutSeconds: number;
  memoryMiB: number;
}

export interface ContainerSpec {
  docker: Docker;
  image: string;
  agentId: string;
  /** The host folder bound read-only at /function: the build's artifact, or a pooled container's own. */
  functionDir: string;
  /** Set: the container starts serving this function. Null: a pooled container, named by init later. */
  identity: FunctionIdentity | null;
  /** The image's default command when absent; pooled containers start their language's pool command. */
  cmd?: string[];
  socketsDir: string;
  limits: SandboxLimits;
  logBounds: LogBounds;
}

/** The request a pooled container's shim takes first (see docs/runtimes.md, "Pool mode"). */
export const INIT_PATH = "/.gcfaas/init";

function identityEnv(identity: FunctionIdentity): string[] {
  return [
    `GCFAAS_FUNCTION_ID=${identity.functionId}`,
    `GCFAAS_BUILD_ID=${identity.buildId}`,
    `GCFAAS_TIMEOUT=${identity.timeoutSeconds}`,
    `GCFAAS_MEMORY_MIB=${identity.memoryMiB}`,
  ];
}

export type Exchange =
  | { kind: "response"; response: ShimResponse; log: CallLog }
  | { kind: "crashed"; oomKilled: boolean; exitCode: number | null; log: CallLog }
  | { kind: "failed"; error: Error; log: CallLog };

// After the response, the end markers travel through dockerd's attach stream; they normally trail
// by well under a millisecond, this only bounds a shim that died right after answering.
const MARKER_GRACE_MS = 1000;
/** How long a SIGKILLed container's OOM mark may trail its exit in dockerd (see exitState). */
const OOM_EVENT_POLLS = 5;
const OOM_EVENT_POLL_MS = 200;

/** One container running one build's shim; it serves one call at a time. */
export class FunctionContainer {
  busy = false;
  lastUsed = Date.now();
  private exited = false;
  private exitWaiters: (() => void)[] = [];

  private constructor(
    readonly id: string,
    private readonly channel: ShimChannel,
    private readonly spec: ContainerSpec,
    private readonly log: InvocationLog,
  ) {}

  /** Creates, attaches and starts the container; resolves when the shim accepts connections. */
  static async start(spec: ContainerSpec, deadline: number): Promise<FunctionContainer> {
    const name = `gcfaas-fn-${randomBytes(8).toString("hex")}`;
    const channel = await ShimChannel.open(path.join(spec.socketsDir, name));
    const uid = spec.limits.privileged ? 0 : FUNCTION_UID;
    const log = new InvocationLog(spec.logBounds);
    let container: Docker.Container | null = null;
    try {
      container = await spec.docker.createContainer({
        name,
        Image: spec.image,
        ...(spec.cmd ? { Cmd: spec.cmd } : {}),
        User: `${uid}:${uid}`,
        Env: [...(spec.identity ? identityEnv(spec.identity) : ["GCFAAS_POOL=1"]), `GCFAAS_SOCKET=/run/gcfaas/${CHANNEL_SOCKET}`],
        // Labels cannot change on a running container: a pooled one keeps role "pool" for its life.
        Labels: {
          [LABEL_MANAGED]: "true",
          [LABEL_ROLE]: spec.identity ? "run" : "pool",
          [LABEL_AGENT]: spec.agentId,
          ...(spec.identity ? { [LABEL_FUNCTION]: spec.identity.functionId, [LABEL_BUILD]: spec.identity.buildId } : {}),
        },
        HostConfig: sandboxHostConfig(spec.limits, [
          { host: spec.functionDir, container: "/function", readOnly: true },
          { host: channel.dir, container: "/run/gcfaas", readOnly: true },
        ]),
      });
      const fc = new FunctionContainer(container.id, channel, spec, log);
      await attachOutput(spec.docker, container, (stream, chunk) => log.push(stream, chunk));
      void container.wait({ condition: "next-exit" }).then(
        () => fc.markExited(),
        () => fc.markExited(),
      );
      await container.start();
      await fc.waitReady(deadline);
      return fc;
    } catch (err) {
      if (container) await forceRemove(spec.docker, container.id).catch(() => undefined);
      await channel.close();
      throw err;
    }
  }

  /** The host folder bound at /function. */
  get functionDir(): string {
    return this.spec.functionDir;
  }

  get hasExited(): boolean {
    return this.exited;
  }

  private markExited(): void {
    this.exited = true;
    // A call waiting for the shim's next connection would otherwise wait until its timeout.
    void this.channel.close().catch(() => undefined);
    for (const wake of this.exitWaiters.splice(0)) wake();
  }

  /** The shim's first connection is its readiness: it connects once the handler is loaded. */
  private async waitReady(deadline: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      // Closed means exited: markExited closes the channel.
      this.channel.whenReady().then(() => "ready" as const, () => "exited" as const),
      new Promise<"exited">((resolve) => this.exitWaiters.push(() => resolve("exited"))),
      new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), Math.max(0, deadline - Date.now())))),
    ]);
    clearTimeout(timer);
    if (outcome === "exited" || this.exited) throw new ContainerExitedEarly(this.log.takeUnfinished());
    if (outcome === "timeout") throw new StartTimeout();
  }

  /**
   * Names the function a pooled container serves, once its files are in /function: the shim sets
   * the function's variables and loads its handler (Go and Rust: the loader execs the binary).
   */
  async init(identity: FunctionIdentity, deadline: number): Promise<void> {
    const request = { method: "POST", path: INIT_PATH, query: {}, headers: {}, body: identityEnv(identity).join("\n") };
    let timer: NodeJS.Timeout | undefined;
    const answer = await Promise.race([
      this.channel.exchange(request, randomBytes(12).toString("hex"), 1024).catch((err: Error) => err),
      new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), Math.max(0, deadline - Date.now())))),
    ]);
    clearTimeout(timer);
    if (answer === "timeout") throw new StartTimeout();
    if (answer instanceof Error || answer.status !== 204) {
      if (this.exited) throw new ContainerExitedEarly(this.log.takeUnfinished());
      throw new Error(`the pooled runtime refused its init (${answer instanceof Error ? answer.message : answer.status})`);
    }
    // As a start does: the shim's next connection says the handler is loaded (for Go and Rust, that
    // the exec'd binary runs), and a runtime dying here reads as it would at a start.
    await this.waitReady(deadline);
  }

  /** Sends one request; never throws. */
  async exchange(request: FunctionRequest, maxResponseBytes: number, env?: Record<string, string>): Promise<Exchange> {
    const invocationId = randomBytes(12).toString("hex");
    try {
      const response = await this.channel.exchange(request, invocationId, maxResponseBytes, env);
      return { kind: "response", response, log: await this.log.take(invocationId, MARKER_GRACE_MS) };
    } catch (err) {
      await this.waitExit(2000);
      if (this.exited) {
        const state = await this.exitState();
        return { kind: "crashed", oomKilled: state?.OOMKilled ?? false, exitCode: state?.ExitCode ?? null, log: this.log.takeUnfinished() };
      }
      return { kind: "failed", error: err instanceof Error ? err : new Error(String(err)), log: this.log.takeUnfinished() };
    }
  }

  /**
   * How the container ended. dockerd learns of an OOM kill and of the exit through two separate
   * containerd events, and under load it may record the exit first: a SIGKILL (137) not (yet)
   * marked OOMKilled is asked again for a short while before it is taken for another kill.
   */
  private async exitState(): Promise<{ OOMKilled?: boolean; ExitCode?: number } | undefined> {
    const inspect = () => this.spec.docker.getContainer(this.id).inspect().then((i) => i.State, () => undefined);
    let state = await inspect();
    for (let i = 0; state?.ExitCode === 137 && !state.OOMKilled && i < OOM_EVENT_POLLS; i++) {
      await new Promise((r) => setTimeout(r, OOM_EVENT_POLL_MS));
      state = await inspect();
    }
    return state;
  }

  /**
   * One exchange with the shim and nothing else (no log cut, no crash diagnosis): the baseline the
   * benchmarks measure the runner against. Only while the container is idle.
   */
  bareExchange(request: FunctionRequest, invocationId: string, maxResponseBytes: number): Promise<ShimResponse> {
    return this.channel.exchange(request, invocationId, maxResponseBytes);
  }

  /** The running call's output as it is printed (a live follower's source). */
  get output(): LineFeed {
    return this.log;
  }

  /** Output printed by a call that will never complete (timed out or crashed). */
  unfinishedLog(): CallLog {
    return this.log.takeUnfinished();
  }

  /** Output bytes the container's log holds now, and the most it ever held: what its calls' output costs the agent. */
  get logBytes(): { retained: number; peak: number } {
    return { retained: this.log.retainedBytes, peak: this.log.peakRetainedBytes };
  }

  private waitExit(ms: number): Promise<void> {
    if (this.exited) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.exitWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  async remove(): Promise<void> {
    await forceRemove(this.spec.docker, this.id);
    await this.channel.close();
    // A pooled container's /function is its own folder (its function's files linked in): it goes too.
    if (!this.spec.identity) await fs.rm(this.spec.functionDir, { recursive: true, force: true });
  }
}

export class ContainerExitedEarly extends Error {
  constructor(readonly log: CallLog) {
    super("the runtime exited before it was ready");
  }
}

export class StartTimeout extends Error {
  constructor() {
    super("the runtime did not become ready before the deadline");
  }
}
