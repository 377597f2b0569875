import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type Docker from "dockerode";
import type { SandboxLimits } from "../docker/sandbox.js";
import { log } from "../log.js";
import type { Lang, RuntimeImages } from "../runtimes/languages.js";
import { FunctionContainer, type FunctionIdentity } from "../runner/function-container.js";
import type { LogBounds } from "../runner/invocation-log.js";
import { RecentDemand } from "./demand.js";
import { linkTree } from "./function-files.js";
import { POOL_COMMAND } from "./pool-commands.js";
import type { PoolSettings } from "../runner/types.js";

export type { PoolSettings };

/** What the pool needs from the runner that owns it. */
export interface PoolHost {
  docker: Docker;
  images: RuntimeImages;
  agentId: string;
  socketsDir: string;
  /** Parent of the pooled containers' own /function folders. */
  dir: string;
  logBounds: LogBounds;
  /** The limits of a function asking for the node's defaults: what a pooled container starts with. */
  defaultLimits: SandboxLimits;
  /** Whether the node's container cap leaves room for one more (counting this pool's). */
  hasRoom: () => boolean;
}

export interface Pooled {
  container: FunctionContainer;
  /** The limits the container was started with. */
  limits: SandboxLimits;
  createdAt: number;
}

// A language whose pooled container failed to start is not retried for this long.
const START_FAILURE_BACKOFF_MS = 30_000;

/**
 * OpenWhisk's "stem cells": per language, containers started ahead of demand, with the sandbox
 * every function gets but no function yet. A function's first call on the node takes one, links
 * the function's files into its own /function and sends the init; the pool refills behind it.
 *
 * Docker can change memory and CPUs of a running runc container, so under runc a pool key is the
 * language and the limits are updated at claim. gVisor's runsc has no update: there a key is the
 * language with the limits, so a function only ever gets a container started with its own limits.
 */
export class RuntimePool {
  private readonly ready = new Map<string, Pooled[]>();
  private readonly keyLimits = new Map<string, { lang: Lang; limits: SandboxLimits }>();
  private readonly demand: RecentDemand;
  private readonly failedUntil = new Map<string, number>();
  private startingCount = 0;
  /** The upkeep in progress, if any: shutdown waits for it, so no container it starts outlives the agent. */
  private filling: Promise<void> | undefined;
  private refillAgain = false;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly settings: PoolSettings,
    private readonly host: PoolHost,
  ) {
    this.demand = new RecentDemand(settings.idleMs);
    for (const lang of settings.languages) this.keyFor(lang, host.defaultLimits);
  }

  /** Starts filling, and the upkeep that trims idle surplus and follows demand. */
  async start(): Promise<void> {
    await fs.rm(this.host.dir, { recursive: true, force: true });
    await fs.mkdir(this.host.dir, { recursive: true, mode: 0o711 });
    this.timer = setInterval(() => this.refill(), Math.max(1000, Math.min(10_000, this.settings.idleMs / 2)));
    this.timer.unref();
    this.refill();
  }

  /** Pooled containers, started and starting: they count against the node's container cap. */
  count(): number {
    let n = this.startingCount;
    for (const list of this.ready.values()) n += list.length;
    return n;
  }

  /** Ready pooled containers per language, for metrics and tests. */
  readyByLang(): Partial<Record<Lang, number>> {
    const out: Partial<Record<Lang, number>> = {};
    for (const [key, list] of this.ready) {
      const lang = this.keyLimits.get(key)!.lang;
      out[lang] = (out[lang] ?? 0) + list.filter((p) => !p.container.hasExited).length;
    }
    return out;
  }

  /** A ready container for a first call of `lang` with `limits`, taken out of the pool; counts demand. */
  take(lang: Lang, limits: SandboxLimits): Pooled | undefined {
    if (this.closed || limits.privileged || !this.settings.languages.includes(lang)) return undefined;
    const key = this.keyFor(lang, limits);
    this.demand.record(key);
    const list = this.ready.get(key) ?? [];
    let taken: Pooled | undefined;
    while (!taken && list.length > 0) {
      const candidate = list.shift()!;
      if (candidate.container.hasExited) void candidate.container.remove().catch(() => undefined);
      else taken = candidate;
    }
    // A hit refills once its claim is done (claim's finally): a container start beside the claim
    // would take the CPU the first call needs on a small node. A miss grows the pool now.
    if (!taken) this.refill();
    return taken;
  }

  /**
   * Makes a taken container the function's: its files, its limits, then the init. Throws what a
   * cold start throws (StartTimeout, ContainerExitedEarly); on any other failure the container is
   * removed and null returned, and the caller starts one the usual way.
   */
  async claim(pooled: Pooled, identity: FunctionIdentity, artifactDir: string, limits: SandboxLimits, deadline: number): Promise<FunctionContainer | null> {
    try {
      return await this.claimContainer(pooled, identity, artifactDir, limits, deadline);
    } finally {
      this.refill();
    }
  }

  private async claimContainer(pooled: Pooled, identity: FunctionIdentity, artifactDir: string, limits: SandboxLimits, deadline: number): Promise<FunctionContainer | null> {
    const { container } = pooled;
    try {
      await linkTree(artifactDir, container.functionDir);
      if (limits.memoryMiB !== pooled.limits.memoryMiB || limits.cpus !== pooled.limits.cpus) {
        const memory = Math.round(limits.memoryMiB * 1024 * 1024);
        await this.host.docker.getContainer(container.id).update({ Memory: memory, MemorySwap: memory, NanoCpus: Math.round(limits.cpus * 1e9) });
      }
    } catch (err) {
      log("warn", "pooled container could not take its function; starting one", { containerId: container.id, error: (err as Error).message });
      await container.remove().catch(() => undefined);
      return null;
    }
    try {
      await container.init(identity, deadline);
      // Its labels cannot change; its name can, so `docker ps` shows whose it is. Off the call's path.
      const name = `gcfaas-fn-${identity.functionId.replace(/[^A-Za-z0-9_.-]/g, "-")}-${randomBytes(4).toString("hex")}`;
      void this.host.docker.getContainer(container.id).rename({ name }).catch(() => undefined);
      return container;
    } catch (err) {
      await container.remove().catch(() => undefined);
      throw err;
    }
  }

  /** Removes one ready container (the oldest of the largest key) to make room; false when none. */
  async evictOne(): Promise<boolean> {
    const lists = [...this.ready.values()].filter((l) => l.length > 0).sort((a, b) => b.length - a.length);
    const victim = lists[0]?.shift();
    if (!victim) return false;
    await victim.container.remove().catch(() => undefined);
    return true;
  }

  async shutdown(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    // A start in flight removes its own container once it sees the pool closed.
    await this.filling;
    const all = [...this.ready.values()].flatMap((l) => l.splice(0));
    await Promise.all(all.map((p) => p.container.remove().catch(() => undefined)));
  }

  private keyFor(lang: Lang, limits: SandboxLimits): string {
    const updatable = limits.runtime !== "runsc";
    const key = updatable ? lang : `${lang}|${limits.memoryMiB}|${limits.cpus}`;
    if (!this.keyLimits.has(key)) {
      this.keyLimits.set(key, { lang, limits: updatable ? this.host.defaultLimits : { ...this.host.defaultLimits, memoryMiB: limits.memoryMiB, cpus: limits.cpus } });
    }
    return key;
  }

  private standing(key: string): number {
    const { lang } = this.keyLimits.get(key)!;
    return key === this.keyFor(lang, this.host.defaultLimits) ? this.settings.size : 0;
  }

  private target(key: string): number {
    return Math.max(this.standing(key), Math.min(this.settings.max, this.demand.count(key)));
  }

  /**
   * Fills toward the targets; also called when room appears under the node's cap. Serialised: on
   * two cores, one container start at a time leaves the node's calls their CPU.
   */
  refill(): void {
    if (this.closed) return;
    if (this.filling) {
      this.refillAgain = true;
      return;
    }
    this.filling = this.fillOnce()
      .catch((err: Error) => log("warn", "runtime pool upkeep failed", { error: err.message }))
      .finally(() => {
        this.filling = undefined;
        if (this.refillAgain) {
          this.refillAgain = false;
          this.refill();
        }
      });
  }

  private async fillOnce(): Promise<void> {
    const now = Date.now();
    for (const [key, list] of this.ready) {
      // Died while waiting (nothing of a function's ran in it): drop it.
      for (const dead of list.filter((p) => p.container.hasExited)) {
        list.splice(list.indexOf(dead), 1);
        await dead.container.remove().catch(() => undefined);
      }
      const surplus = list.length - this.target(key);
      const idle = list.filter((p) => now - p.createdAt >= this.settings.idleMs).slice(0, Math.max(0, surplus));
      for (const p of idle) {
        list.splice(list.indexOf(p), 1);
        await p.container.remove().catch(() => undefined);
      }
    }
    // Every language's standing containers come before any language's growth: on a full node, growth
    // gives its room back to a language below its standing size.
    const phases = [
      { want: (key: string) => this.standing(key), mayReclaim: true },
      { want: (key: string) => this.target(key), mayReclaim: false },
    ];
    for (const { want, mayReclaim } of phases) {
      for (let progress = true; progress && !this.closed; ) {
        progress = false;
        for (const key of this.keyLimits.keys()) {
          if (this.closed) return;
          if ((this.ready.get(key)?.length ?? 0) >= want(key) || (this.failedUntil.get(key) ?? 0) > Date.now()) continue;
          if (!this.host.hasRoom() && !(mayReclaim && (await this.removeGrowth(key)) && this.host.hasRoom())) continue;
          if (await this.startOne(key)) progress = true;
        }
      }
    }
  }

  /** Removes the oldest container of another key that holds more than its standing size. */
  private async removeGrowth(forKey: string): Promise<boolean> {
    for (const [key, list] of this.ready) {
      if (key === forKey || list.length <= this.standing(key)) continue;
      const oldest = list.shift()!;
      await oldest.container.remove().catch(() => undefined);
      return true;
    }
    return false;
  }

  private async startOne(key: string): Promise<boolean> {
    const { lang, limits } = this.keyLimits.get(key)!;
    const functionDir = path.join(this.host.dir, randomBytes(8).toString("hex"));
    this.startingCount += 1;
    try {
      await fs.mkdir(functionDir, { mode: 0o755 });
      await fs.chown(functionDir, 0, 0);
      const container = await FunctionContainer.start(
        {
          docker: this.host.docker,
          image: this.host.images[lang].run,
          agentId: this.host.agentId,
          functionDir,
          identity: null,
          cmd: POOL_COMMAND[lang],
          socketsDir: this.host.socketsDir,
          limits,
          logBounds: this.host.logBounds,
        },
        Date.now() + 60_000,
      );
      if (this.closed) {
        await container.remove();
        return false;
      }
      const list = this.ready.get(key) ?? [];
      list.push({ container, limits, createdAt: Date.now() });
      this.ready.set(key, list);
      return true;
    } catch (err) {
      this.failedUntil.set(key, Date.now() + START_FAILURE_BACKOFF_MS);
      log("warn", "pooled container failed to start", { lang, error: (err as Error).message });
      await fs.rm(functionDir, { recursive: true, force: true });
      return false;
    } finally {
      this.startingCount -= 1;
    }
  }
}
