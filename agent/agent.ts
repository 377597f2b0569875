import type { SandboxRuntime } from "./docker/sandbox-runtime.js";
import fs from "node:fs/promises";
import path from "node:path";
import type { AgentMessage, DispatcherMessage } from "../shared/protocol/messages.js";
import { PROTOCOL_VERSION } from "../shared/protocol/messages.js";
import type { AgentConfig } from "./config.js";
import { ControlPlane } from "./control/control-plane.js";
import { DispatcherConnection } from "./control/connection.js";
import { freeInShard, slotShare } from "../shared/protocol/slot-shares.js";
import { log } from "./log.js";
import type { Runner } from "./runner/index.js";
import { runBuild } from "./work/run-build.js";
import { runTask } from "./work/run-task.js";
import { LiveLog } from "./work/live-log.js";
import { ArtifactStore } from "./work/artifact-store.js";
import { BuildSlots } from "./work/build-slots.js";
import { checkBuildSpaces, removeLeftoverBuildSpaces } from "./builder/build-space.js";
import { useEngineMountNamespace } from "./builder/host-mount.js";
import { FUNCTION_UID } from "./runtimes/languages.js";
import { AgentMetrics } from "./metrics/agent-metrics.js";
import { AGENT_VERSION } from "./version.js";
import type { WorkContext } from "./work/work-context.js";

type Assign = Extract<DispatcherMessage, { type: "build.assign" | "task.assign" }>;

/**
 * The agent: one connection per dispatcher shard, a set of running builds and tasks, and the
 * runner that keeps warm containers. Work runs concurrently up to `slots`; the dispatcher never
 * sends more, and the agent refuses nothing it is sent so that the dispatcher's view stays true.
 */
export class Agent implements WorkContext {
  private readonly connections: DispatcherConnection[] = [];
  private readonly running = new Map<string, { kind: "task" | "build"; conn: DispatcherConnection; cancelled: boolean; abort: AbortController; live?: LiveLog }>();
  private draining = false;
  /** The dispatcher's shard count: each shard is offered a share of the slots (slot-shares.ts). */
  private shards = 1;
  private idle?: () => void;
  /** The warm functions the last heartbeat after a task reported. */
  private warmSent = "";
  readonly control: ControlPlane;
  readonly artifacts: ArtifactStore;
  readonly buildSlots: BuildSlots;
  readonly metrics: AgentMetrics;

  constructor(
    readonly config: AgentConfig,
    private readonly runner: Runner,
    /** What unprivileged functions and builds run under on this node (privileged ones: runc). */
    readonly sandbox: SandboxRuntime = "runc",
  ) {
    this.control = new ControlPlane(config.url, config.token);
    this.artifacts = new ArtifactStore(path.join(config.stateDir, "downloads"), this.control, runner, config.keepArtifacts);
    this.buildSlots = new BuildSlots(config.maxBuilds, runner);
    this.metrics = new AgentMetrics({
      slots: () => config.slots,
      busySlots: () => this.running.size,
      runningBuilds: () => this.buildSlots.busy,
      warmContainers: () => runner.containers().length,
      pooledContainers: () => runner.pooledContainers(),
      draining: () => this.draining,
    });
  }

  async start(): Promise<void> {
    const work = path.join(this.config.stateDir, "work");
    await useEngineMountNamespace(this.config.engineMountNs);
    const left = await removeLeftoverBuildSpaces(work);
    if (left) log("warn", "unmounted build spaces a previous agent process left", { count: left });
    await checkBuildSpaces(work, FUNCTION_UID);
    const { shards, nodeId } = await this.control.getJson<{ shards: number; nodeId?: string }>("/v1/agent/config");
    // The dispatcher would close every connection that names another node: say so once, plainly.
    if (nodeId && nodeId !== this.config.nodeId) throw new Error(`the agent token is bound to node ${nodeId}, but this agent runs as ${this.config.nodeId}: start it with --node-id ${nodeId} or mint a token for ${this.config.nodeId}`);
    this.shards = shards;
    for (let s = 0; s < shards; s++) {
      const conn = new DispatcherConnection(this.control.wsUrl(s), this.control.authHeader, {
        hello: () => this.hello(s),
        heartbeat: () => this.heartbeat(s),
        draining: () => this.draining,
        onMessage: (msg, c) => this.onMessage(msg, c),
      }, s);
      this.connections.push(conn);
      conn.start();
    }
    log("info", "agent started", { nodeId: this.config.nodeId, shards, slots: this.config.slots, privileged: this.config.privileged, langs: this.config.langs });
  }

  /** SIGTERM: take nothing new, finish what runs, then close. */
  async drain(): Promise<void> {
    this.draining = true;
    for (const c of this.connections) c.sendHeartbeat();
    log("info", "draining", { running: this.running.size });
    if (this.running.size) await new Promise<void>((r) => (this.idle = r));
    await Promise.all(this.connections.map((c) => c.stop()));
    await this.runner.shutdown();
    log("info", "drained and stopped");
  }

  /** Stops at once (tests simulate a crash with it): connections drop, containers go. */
  async kill(): Promise<void> {
    await Promise.all(this.connections.map((c) => c.stop()));
    await this.runner.shutdown().catch(() => undefined);
  }

  get busy(): number {
    return this.running.size;
  }

  private hello(shard: number): AgentMessage {
    const running = [...this.running].filter(([, r]) => r.conn.shard === shard).map(([id, r]) => ({ kind: r.kind, id }));
    running.push(...(this.connections[shard]?.outbox.finishing() ?? []));
    return {
      type: "hello",
      version: PROTOCOL_VERSION,
      nodeId: this.config.nodeId,
      cpus: this.config.cpus,
      memMiB: this.config.memMiB,
      privileged: this.config.privileged,
      ...(this.config.egress ? { egress: true } : {}),
      langs: this.config.langs,
      // Each shard assigns on its own: it is offered its share, so that the shards together never
      // hand this node more than its slots.
      slots: this.draining ? 0 : slotShare(this.config.slots, this.shards, shard),
      slotsShared: true,
      configs: true,
      liveLogs: true,
      builds: this.config.maxBuilds,
      running: running.slice(0, 1024),
      warm: this.warm(),
      agentVersion: AGENT_VERSION,
      runtime: this.sandbox,
    };
  }

  private heartbeat(shard: number): AgentMessage {
    const running = [...this.running.values()].filter((r) => r.conn.shard === shard).length;
    return { type: "heartbeat", free: freeInShard(this.config.slots, this.shards, shard, running), warm: this.warm(), draining: this.draining };
  }

  private warm() {
    const seen = new Map<string, string>();
    for (const c of this.runner.containers()) seen.set(c.functionId, c.buildId);
    return [...seen].slice(0, 200).map(([functionId, buildId]) => ({ functionId, buildId }));
  }

  private onMessage(msg: DispatcherMessage, conn: DispatcherConnection): void {
    if (msg.type === "task.cancel") {
      // The dispatcher recorded an outcome already (a timeout, a deleted function, another
      // agent's report): the invocation stops now and its report is dropped.
      const r = this.running.get(msg.taskId);
      if (r) {
        r.cancelled = true;
        r.abort.abort();
      }
      return;
    }
    if (msg.type === "task.follow") return this.running.get(msg.taskId)?.live?.follow(msg.on);
    if (msg.type === "build.assign" || msg.type === "task.assign") void this.run(msg, conn);
  }

  private async run(msg: Assign, conn: DispatcherConnection): Promise<void> {
    const id = msg.type === "build.assign" ? msg.buildId : msg.taskId;
    if (this.running.has(id)) return; // a re-sent assignment of work already under way
    const live = msg.type === "task.assign" ? new LiveLog(id, (m) => conn.send(m), Object.values(msg.config?.secrets ?? {})) : undefined;
    const entry = { kind: msg.type === "build.assign" ? ("build" as const) : ("task" as const), conn, cancelled: false, abort: new AbortController(), live };
    this.running.set(id, entry);
    const started = performance.now();
    const report = (m: AgentMessage) => {
      this.metrics.finished(msg.lang, (performance.now() - started) / 1000, m);
      // A cancelled task's outcome is dropped: the dispatcher already recorded one.
      if (!(entry.kind === "task" && entry.cancelled && m.type === "task.done")) conn.send(m);
    };
    try {
      if (msg.type === "build.assign") await runBuild(this, msg, report);
      else await runTask(this, this.runner, msg, report, entry.abort.signal, live);
    } catch (e) {
      log("error", "work failed unexpectedly", { id, error: (e as Error).stack ?? String(e) });
      this.metrics.failed("agent_error");
      // The error may name host paths or errno codes: those stay in the agent's log above.
      const message = `the agent could not run this ${msg.type === "build.assign" ? "build" : "task"}`;
      if (msg.type === "build.assign") report({ type: "build.done", buildId: id, ok: false, reason: `agent error: ${message}` });
      else report({ type: "task.done", taskId: id, status: 500, headers: { "content-type": "application/json" }, body: Buffer.from(JSON.stringify({ error: { code: "agent_error", message } })).toString("base64"), bodyUploaded: false, log: [`[runtime] agent error: ${message}`], logUploaded: false, durationMs: 0 });
    } finally {
      this.running.delete(id);
      // A new warm container is news for placement; a finished task alone is not (the dispatcher
      // counts slots itself), and a heartbeat per task would double the frames of the hot path.
      const warm = this.warm().map((w) => w.functionId).sort().join();
      if (warm !== this.warmSent) {
        this.warmSent = warm;
        for (const c of this.connections) c.sendHeartbeat();
      }
      if (this.draining && this.running.size === 0) this.idle?.();
    }
  }

  /** A per-build scratch folder under the state dir, removed after use. */
  async scratch(name: string): Promise<string> {
    const dir = path.join(this.config.stateDir, "work", name);
    await fs.rm(dir, { recursive: true, force: true });
    await fs.mkdir(dir, { recursive: true });
    return dir;
  }
}
