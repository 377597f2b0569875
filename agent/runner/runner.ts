import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type Docker from "dockerode";
import { dockerClient, removeLeftoverContainers } from "../docker/client.js";
import { log } from "../log.js";
import type { SandboxLimits } from "../docker/sandbox.js";
import { offlineImages, type Lang, type RuntimeImages } from "../runtimes/languages.js";
import { RuntimePool } from "../pool/runtime-pool.js";
import { ArtifactCache } from "./artifact-cache.js";
import { ContainerExitedEarly, FunctionContainer, StartTimeout, type Exchange } from "./function-container.js";
import { MAX_CALL_LOG_BYTES, type CallLog, type LogBounds } from "./invocation-log.js";
import { ResponseTooLargeError } from "./shim-client.js";
import type { ContainerInfo, InvokeRequest, InvokeResult, RunnerOptions } from "./types.js";
import { configFingerprint } from "./config-fingerprint.js";
import type { EgressSandbox } from "../egress/index.js";

type Settings = Required<Omit<RunnerOptions, "docker" | "images" | "pool" | "egress">>;

interface Slot {
  key: string;
  functionId: string;
  buildId: string;
  container: FunctionContainer;
  idleTimer?: NodeJS.Timeout;
}

const JSON_HEADERS = { "content-type": "application/json" };

/**
 * Runs functions in containers, keeping each one warm for reuse by later calls of the same build
 * with the same capabilities. One container serves one call at a time; the node runs at most
 * `maxContainers`, evicting the longest-idle container of another function when full.
 */
export class Runner {
  private readonly docker: Docker;
  private readonly images: RuntimeImages;
  private readonly settings: Settings;
  private readonly artifacts: ArtifactCache;
  private readonly pool: RuntimePool | null;
  private readonly egress: EgressSandbox | null;
  private readonly slots = new Set<Slot>();
  private starting = 0;
  private readonly capacityWaiters: (() => void)[] = [];
  private closed = false;

  private constructor(options: RunnerOptions) {
    this.docker = options.docker ?? dockerClient();
    this.images = options.images ?? offlineImages();
    this.settings = {
      stateDir: path.resolve(options.stateDir),
      agentId: options.agentId ?? "default",
      idleTimeoutMs: options.idleTimeoutMs ?? 5 * 60_000,
      maxContainers: options.maxContainers ?? 16,
      defaultCpus: options.defaultCpus ?? 1,
      defaultMemoryMiB: options.defaultMemoryMiB ?? 256,
      pidsLimit: options.pidsLimit ?? 128,
      tmpfsMiB: options.tmpfsMiB ?? 64,
      allowPrivileged: options.allowPrivileged ?? false,
      maxResponseBytes: options.maxResponseBytes ?? 10 * 1024 * 1024,
      maxLogLines: options.maxLogLines ?? 10_000,
      maxLogBytes: options.maxLogBytes ?? MAX_CALL_LOG_BYTES,
      runtime: options.runtime ?? "",
    };
    this.egress = options.egress ?? null;
    this.artifacts = new ArtifactCache(path.join(this.settings.stateDir, "artifacts"));
    const pool = options.pool;
    this.pool =
      pool && pool.size > 0 && pool.languages.length > 0
        ? new RuntimePool(pool, {
            docker: this.docker,
            images: this.images,
            agentId: this.settings.agentId,
            socketsDir: path.join(this.settings.stateDir, "sockets"),
            dir: path.join(this.settings.stateDir, "pool"),
            logBounds: this.logBounds(),
            defaultLimits: this.limitsFor({ timeout: 1, cpuCount: 0, memSize: 0, privileged: false, egress: false }),
            hasRoom: () => this.used() < this.settings.maxContainers,
          })
        : null;
  }

  /** Prepares the state folder and removes containers a previous process with this agentId left. */
  static async create(options: RunnerOptions): Promise<Runner> {
    const runner = new Runner(options);
    const { stateDir, agentId } = runner.settings;
    await fs.mkdir(path.join(stateDir, "artifacts"), { recursive: true });
    await fs.rm(path.join(stateDir, "sockets"), { recursive: true, force: true });
    await fs.mkdir(path.join(stateDir, "sockets"), { recursive: true, mode: 0o711 });
    await removeLeftoverContainers(runner.docker, agentId);
    await runner.pool?.start();
    return runner;
  }

  async invoke(call: InvokeRequest): Promise<InvokeResult> {
    if (this.closed) throw new Error("runner is shut down");
    const started = Date.now();
    const caps = call.capabilities;
    if (caps.privileged && !this.settings.allowPrivileged) {
      throw new Error("this node does not run privileged functions");
    }
    if (caps.egress && !this.egress) throw new Error("this node does not run functions with network egress (agent --egress)");
    if (!(caps.timeout > 0)) throw new Error(`timeout must be a positive number of seconds, got ${caps.timeout}`);
    const deadline = started + caps.timeout * 1000;
    const limits = this.limitsFor(caps);
    const base = [call.functionId, call.buildId, call.lang, limits.cpus, limits.memoryMiB, caps.privileged, caps.timeout, !!caps.egress].join("|");
    // A container keeps the configuration it first served (a handler may read it once, at load):
    // a call with another one never reuses it.
    const key = `${base}|${configFingerprint(call.env)}`;
    let pooled = false;
    const finish = (r: Outcome): InvokeResult => ({ ...r, durationMs: Date.now() - started, runtime: limits.runtime ?? "runc", pooled });

    if (call.signal?.aborted) return finish(cancelledResult(NO_LOG, "cold", ""));
    let slot = this.takeIdle(key, base);
    const kind: "cold" | "warm" = slot ? "warm" : "cold";
    if (!slot) {
      // A pooled container already holds its place under the node's cap: it moves to `starting`.
      // Pooled containers have no network, and a running container under gVisor cannot join one.
      const taken = limits.egress ? undefined : this.pool?.take(call.lang, limits);
      if (taken) this.starting += 1;
      else await this.reserveCapacity();
      try {
        const artifactDir = await this.artifacts.dirFor(call.buildId, call.artifactPath);
        const identity = { functionId: call.functionId, buildId: call.buildId, timeoutSeconds: caps.timeout, memoryMiB: limits.memoryMiB };
        // A pooled container that dies in its claim still served the call: its result says pooled.
        pooled = taken !== undefined;
        const claimed = taken ? await this.pool!.claim(taken, identity, artifactDir, limits, deadline) : null;
        pooled = claimed !== null;
        const container =
          claimed ??
          (await FunctionContainer.start(
            {
              docker: this.docker,
              image: this.images[call.lang].run,
              agentId: this.settings.agentId,
              functionDir: artifactDir,
              identity,
              socketsDir: path.join(this.settings.stateDir, "sockets"),
              limits,
              logBounds: this.logBounds(),
            },
            deadline,
          ));
        slot = { key, functionId: call.functionId, buildId: call.buildId, container };
        container.busy = true;
        this.slots.add(slot);
      } catch (err) {
        if (err instanceof StartTimeout) return finish(timeoutResult(caps.timeout, NO_LOG, "cold", ""));
        if (err instanceof ContainerExitedEarly) {
          return finish({ ...errorResult("the function runtime exited while starting", err.log), container: "cold", containerId: "" });
        }
        throw err;
      } finally {
        this.starting -= 1;
      }
    }

    const container = slot.container;
    const remaining = Math.max(0, deadline - Date.now());
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const timedOut = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), remaining)));
    const cancelled = new Promise<"cancelled">((resolve) => {
      onAbort = () => resolve("cancelled");
      if (call.signal?.aborted) onAbort();
      else call.signal?.addEventListener("abort", onAbort, { once: true });
    });
    call.live?.attach(container.output);
    const outcome = await Promise.race([container.exchange(call.request, this.settings.maxResponseBytes, call.env), timedOut, cancelled]);
    call.live?.detach();
    clearTimeout(timer);
    call.signal?.removeEventListener("abort", onAbort!);

    if (outcome === "timeout" || outcome === "cancelled") {
      // The function is still running in there: the container goes, whatever state it is in.
      const log = container.unfinishedLog();
      await this.discard(slot);
      return finish(outcome === "timeout" ? timeoutResult(caps.timeout, log, kind, container.id) : cancelledResult(log, kind, container.id));
    }
    if (outcome.kind === "failed" && !(outcome.error instanceof ResponseTooLargeError)) {
      // The reason may name host paths or errno codes: it goes to the operator, not the tenant.
      log("warn", "shim exchange failed", { functionId: call.functionId, containerId: container.id, error: outcome.error.message });
    }
    const result = toResult(outcome, this.settings.maxResponseBytes, limits.memoryMiB);
    if (outcome.kind === "response" && !container.hasExited) this.release(slot);
    else await this.discard(slot);
    return finish({ ...result, container: kind, containerId: container.id });
  }

  /** Warm and busy containers, for diagnostics, tests and benchmarks. */
  containers(): ContainerInfo[] {
    return [...this.slots].map((s) => ({
      id: s.container.id,
      functionId: s.functionId,
      buildId: s.buildId,
      busy: s.container.busy,
      logBytes: s.container.logBytes,
      bareExchange: (request) => s.container.bareExchange(request, randomBytes(12).toString("hex"), this.settings.maxResponseBytes),
    }));
  }

  /** Removes the warm containers of one function (e.g. when it is deleted or rebuilt). */
  async evictFunction(functionId: string): Promise<void> {
    await Promise.all([...this.slots].filter((s) => s.functionId === functionId && !s.container.busy).map((s) => this.discard(s)));
  }

  /** Deletes a build's unpacked artifact from this node (after its idle containers are gone). */
  async forgetBuild(buildId: string): Promise<void> {
    await Promise.all([...this.slots].filter((s) => s.buildId === buildId && !s.container.busy).map((s) => this.discard(s)));
    await this.artifacts.forget(buildId);
  }

  /**
   * Takes one container of `maxContainers` for a build (its container is not the runner's) until
   * the returned release is called, evicting an idle warm container when the node is full.
   */
  async holdForBuild(): Promise<() => void> {
    await this.reserveCapacity();
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.starting -= 1;
      this.capacityWaiters.shift()?.();
    };
  }

  /** Ready pooled containers per language (empty when the pool is off). */
  pooledContainers(): Partial<Record<Lang, number>> {
    return this.pool?.readyByLang() ?? {};
  }

  async shutdown(): Promise<void> {
    this.closed = true;
    for (const wake of this.capacityWaiters.splice(0)) wake();
    await Promise.all([...[...this.slots].map((s) => this.discard(s)), this.pool?.shutdown()]);
  }

  private logBounds(): LogBounds {
    return { maxLines: this.settings.maxLogLines, maxBytes: this.settings.maxLogBytes };
  }

  private limitsFor(caps: InvokeRequest["capabilities"]): SandboxLimits {
    const egress = caps.egress && this.egress ? { network: this.egress.network, resolvConf: this.egress.resolvConf } : undefined;
    const sandbox = caps.privileged ? undefined : this.settings.runtime || undefined;
    return {
      // Docker refuses more CPUs than the host has; a function asking for more gets them all.
      cpus: Math.min(caps.cpuCount > 0 ? caps.cpuCount : this.settings.defaultCpus, os.cpus().length),
      memoryMiB: caps.memSize > 0 ? caps.memSize : this.settings.defaultMemoryMiB,
      pids: this.settings.pidsLimit,
      tmpfsMiB: this.settings.tmpfsMiB,
      privileged: caps.privileged,
      // gVisor's own network stack does not start on these kernels: egress runs it in host mode, inside the container's namespace.
      runtime: egress && sandbox === "runsc" ? this.egress!.runtime : sandbox,
      egress,
    };
  }

  /** Containers held under the cap: warm and busy ones, starts and builds in progress, the pool. */
  private used(): number {
    return this.slots.size + this.starting + (this.pool?.count() ?? 0);
  }

  private takeIdle(key: string, base: string): Slot | undefined {
    for (const slot of this.slots) {
      // Died while idle (e.g. a background thread crashed it), or holds a configuration since changed: never hand it out.
      if (!slot.container.busy && (slot.container.hasExited || (slot.key !== key && slot.key.startsWith(`${base}|`)))) {
        void this.discard(slot);
        continue;
      }
      if (slot.key === key && !slot.container.busy) {
        clearTimeout(slot.idleTimer);
        slot.container.busy = true;
        return slot;
      }
    }
    return undefined;
  }

  private release(slot: Slot): void {
    slot.container.busy = false;
    slot.container.lastUsed = Date.now();
    slot.idleTimer = setTimeout(() => void this.discard(slot), this.settings.idleTimeoutMs);
    slot.idleTimer.unref();
    this.capacityWaiters.shift()?.();
  }

  private async discard(slot: Slot): Promise<void> {
    if (!this.slots.delete(slot)) return;
    clearTimeout(slot.idleTimer);
    await slot.container.remove().catch(() => undefined);
    const waiter = this.capacityWaiters.shift();
    // The room goes to whoever waits for it; with nobody waiting, the pool may take it.
    if (waiter) waiter();
    else this.pool?.refill();
  }

  /** Waits for room under maxContainers, evicting the longest-idle container when the node is full. */
  private async reserveCapacity(): Promise<void> {
    for (;;) {
      if (this.closed) throw new Error("runner is shut down");
      if (this.used() < this.settings.maxContainers) {
        this.starting += 1;
        return;
      }
      // A pooled container is the cheapest to give up: it holds no function yet.
      if (this.pool && (await this.pool.evictOne())) continue;
      const idle = [...this.slots].filter((s) => !s.container.busy).sort((a, b) => a.container.lastUsed - b.container.lastUsed)[0];
      if (idle) {
        await this.discard(idle);
        continue;
      }
      await new Promise<void>((resolve) => this.capacityWaiters.push(resolve));
    }
  }
}

type Outcome = Omit<InvokeResult, "durationMs" | "runtime" | "pooled">;

const NO_LOG: CallLog = { lines: [], cut: { lines: 0, bytes: 0 } };

function timeoutResult(seconds: number, log: CallLog, container: "cold" | "warm", containerId: string): Outcome {
  return {
    status: 504,
    headers: JSON_HEADERS,
    body: Buffer.from(JSON.stringify({ error: `function timed out after ${seconds} s` })),
    log: [...log.lines, `[runtime] timed out after ${seconds} s; the container was killed`],
    logCut: log.cut,
    container,
    containerId,
  };
}

function cancelledResult(log: CallLog, container: "cold" | "warm", containerId: string): Outcome {
  return {
    status: 410,
    headers: JSON_HEADERS,
    body: Buffer.from(JSON.stringify({ error: "the task was cancelled" })),
    log: [...log.lines, "[runtime] cancelled; the container was killed"],
    logCut: log.cut,
    container,
    containerId,
  };
}

function errorResult(message: string, log: CallLog): Pick<InvokeResult, "status" | "headers" | "body" | "log" | "logCut"> {
  return { status: 500, headers: JSON_HEADERS, body: Buffer.from(JSON.stringify({ error: message })), log: [...log.lines, `[runtime] ${message}`], logCut: log.cut };
}

function toResult(outcome: Exchange, maxResponseBytes: number, memoryMiB: number): Pick<InvokeResult, "status" | "headers" | "body" | "log" | "logCut"> {
  switch (outcome.kind) {
    case "response":
      return { ...outcome.response, log: outcome.log.lines, logCut: outcome.log.cut };
    case "crashed":
      return outcome.oomKilled
        ? errorResult(`the function ran out of memory (limit ${memoryMiB} MiB) and was killed`, outcome.log)
        : errorResult(`the function's process exited (code ${outcome.exitCode ?? "unknown"})`, outcome.log);
    case "failed":
      return outcome.error instanceof ResponseTooLargeError
        ? errorResult(`the function's response exceeds ${maxResponseBytes} bytes`, outcome.log)
        : errorResult("the function runtime failed to answer", outcome.log);
  }
}
