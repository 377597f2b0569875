import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type Docker from "dockerode";
import { forceRemove, LABEL_AGENT, LABEL_BUILD, LABEL_FUNCTION, LABEL_MANAGED, LABEL_ROLE } from "../docker/client.js";
import { attachOutput } from "../docker/output.js";
import { sandboxHostConfig, type SandboxLimits } from "../docker/sandbox.js";
import { FUNCTION_UID } from "../runtimes/languages.js";
import { InvocationLog } from "./invocation-log.js";
import { canConnect, sendToShim, type ShimResponse } from "./shim-client.js";
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

const SOCKET_NAME = "shim.sock";
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
    readonly socketPath: string,
    private readonly socketDir: string,
    private readonly spec: ContainerSpec,
    private readonly log: InvocationLog,
  ) {}

  /** Creates, attaches and starts the container; resolves when the shim accepts connections. */
  static async start(spec: ContainerSpec, deadline: number): Promise<FunctionContainer> {
    const name = `gcfaas-fn-${randomBytes(8).toString("hex")}`;
    const socketDir = path.join(spec.socketsDir, name);
    await fs.mkdir(socketDir, { mode: 0o700 });
    const uid = spec.limits.privileged ? 0 : FUNCTION_UID;
    await fs.chown(socketDir, uid, uid);
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
          `GCFAAS_SOCKET=/run/gcfaas/${SOCKET_NAME}`,
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
          { host: socketDir, container: "/run/gcfaas", readOnly: false },
        ]),
      });
      const fc = new FunctionContainer(container.id, path.join(socketDir, SOCKET_NAME), socketDir, spec, log);
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
      await fs.rm(socketDir, { recursive: true, force: true });
      throw err;
    }
  }

  get hasExited(): boolean {
    return this.exited;
  }

  private markExited(): void {
    this.exited = true;
    for (const wake of this.exitWaiters.splice(0)) wake();
  }

  private async waitReady(deadline: number): Promise<void> {
    for (let delay = 1; ; delay = Math.min(delay * 2, 20)) {
      if (this.exited) throw new ContainerExitedEarly(this.log.takeUnfinished());
      if (Date.now() >= deadline) throw new StartTimeout();
      if ((await fs.stat(this.socketPath).catch(() => null)) && (await canConnect(this.socketPath))) return;
      await new Promise((r) => setTimeout(r, delay));
    }
  }

  /** Sends one request; never throws. */
  async exchange(request: FunctionRequest, maxResponseBytes: number): Promise<Exchange> {
    const invocationId = randomBytes(12).toString("hex");
    try {
      const response = await sendToShim(this.socketPath, request, invocationId, maxResponseBytes);
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
    await fs.rm(this.socketDir, { recursive: true, force: true });
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
