import { randomBytes } from "node:crypto";
import path from "node:path";
import type Docker from "dockerode";
import { forceRemove, LABEL_AGENT, LABEL_BUILD, LABEL_FUNCTION, LABEL_MANAGED, LABEL_ROLE } from "../docker/client.js";
import { attachOutput } from "../docker/output.js";
import { sandboxHostConfig, type SandboxLimits } from "../docker/sandbox.js";
import { FUNCTION_UID } from "../runtimes/languages.js";
import { InvocationLog } from "./invocation-log.js";
import { CHANNEL_SOCKET, ShimChannel } from "./shim-channel.js";
import type { ShimResponse } from "./shim-client.js";
import type { FunctionRequest } from "./types.js";

export interface ContainerSpec {
  docker: Docker;
  image: string;
  functionId: string;
  buildId: string;
  agentId: string;
  artifactDir: string;
  socketsDir: string;
  limits: SandboxLimits;
  timeoutSeconds: number;
  maxLogLines: number;
}

export type Exchange =
  | { kind: "response"; response: ShimResponse; log: string[] }
  | { kind: "crashed"; oomKilled: boolean; exitCode: number | null; log: string[] }
  | { kind: "failed"; error: Error; log: string[] };

// After the response, the end markers travel through dockerd's attach stream; they normally trail
// by well under a millisecond, this only bounds a shim that died right after answering.
const MARKER_GRACE_MS = 1000;

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
    const log = new InvocationLog(spec.maxLogLines);
    let container: Docker.Container | null = null;
    try {
      container = await spec.docker.createContainer({
        name,
        Image: spec.image,
        User: `${uid}:${uid}`,
        Env: [
          `GCFAAS_FUNCTION_ID=${spec.functionId}`,
          `GCFAAS_BUILD_ID=${spec.buildId}`,
          `GCFAAS_TIMEOUT=${spec.timeoutSeconds}`,
          `GCFAAS_MEMORY_MIB=${spec.limits.memoryMiB}`,
          `GCFAAS_SOCKET=/run/gcfaas/${CHANNEL_SOCKET}`,
        ],
        Labels: {
          [LABEL_MANAGED]: "true",
          [LABEL_ROLE]: "run",
          [LABEL_AGENT]: spec.agentId,
          [LABEL_FUNCTION]: spec.functionId,
          [LABEL_BUILD]: spec.buildId,
        },
        HostConfig: sandboxHostConfig(spec.limits, [
          { host: spec.artifactDir, container: "/function", readOnly: true },
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

  /** Sends one request; never throws. */
  async exchange(request: FunctionRequest, maxResponseBytes: number): Promise<Exchange> {
    const invocationId = randomBytes(12).toString("hex");
    try {
      const response = await this.channel.exchange(request, invocationId, maxResponseBytes);
      return { kind: "response", response, log: await this.log.take(invocationId, MARKER_GRACE_MS) };
    } catch (err) {
      await this.waitExit(2000);
      if (this.exited) {
        const state = (await this.spec.docker.getContainer(this.id).inspect().catch(() => null))?.State;
        return { kind: "crashed", oomKilled: state?.OOMKilled ?? false, exitCode: state?.ExitCode ?? null, log: this.log.takeUnfinished() };
      }
      return { kind: "failed", error: err instanceof Error ? err : new Error(String(err)), log: this.log.takeUnfinished() };
    }
  }

  /**
   * One exchange with the shim and nothing else (no log cut, no crash diagnosis): the baseline the
   * benchmarks measure the runner against. Only while the container is idle.
   */
  bareExchange(request: FunctionRequest, invocationId: string, maxResponseBytes: number): Promise<ShimResponse> {
    return this.channel.exchange(request, invocationId, maxResponseBytes);
  }

  /** Output printed by a call that will never complete (timed out or crashed). */
  unfinishedLog(): string[] {
    return this.log.takeUnfinished();
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
  }
}

export class ContainerExitedEarly extends Error {
  constructor(readonly log: string[]) {
    super("the runtime exited before it was ready");
  }
}

export class StartTimeout extends Error {
  constructor() {
    super("the runtime did not become ready before the deadline");
  }
}
