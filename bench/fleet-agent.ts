/**
 * A simulated agent for bench/fleet.ts: one node, one WebSocket per dispatcher shard, speaking the
 * real protocol (hello with its slot share per shard, task.assign answered by task.done after a
 * delay, acks settling reports), without Docker. Like the real agent it reconnects after a drop,
 * names in its hello the work it still holds, and sends again every report not yet acknowledged.
 */
import WebSocket from "ws";
import { slotShare } from "../shared/protocol/slot-shares.js";
import { PROTOCOL_VERSION, dispatcherMessage, type AgentMessage, type DispatcherMessage } from "../shared/protocol/messages.js";

type TaskAssign = Extract<DispatcherMessage, { type: "task.assign" }>;
type BuildAssign = Extract<DispatcherMessage, { type: "build.assign" }>;

export interface FleetObserver {
  assigned(taskId: string, nodeId: string): void;
}

export class FleetAgent {
  /** Work this node runs now, over all its shards: never more than `slots` if the dispatcher is right. */
  private readonly inflight = new Map<string, number>();
  private readonly unacked: Map<string, AgentMessage>[];
  private readonly sockets: (WebSocket | undefined)[];
  private stopped = false;
  /** The most work this node held at once. */
  peak = 0;
  tasksDone = 0;

  constructor(
    readonly nodeId: string,
    private readonly token: string,
    private readonly wsBase: string,
    private readonly httpBase: string,
    readonly slots: number,
    private readonly shards: number,
    private readonly delayMs: number,
    private readonly observer: FleetObserver,
  ) {
    this.unacked = Array.from({ length: shards }, () => new Map());
    this.sockets = Array.from({ length: shards }, () => undefined);
  }

  /** Connects to every shard; resolves once each has welcomed this node. */
  async start(): Promise<void> {
    await Promise.all(this.sockets.map((_, s) => this.connect(s)));
  }

  /** Still running work, or holding a report the dispatcher has not acknowledged. */
  busy(): boolean {
    return this.inflight.size > 0 || this.unacked.some((u) => u.size > 0);
  }

  /** Drops every connection the hard way (no close handshake), as a network fault would; the agent reconnects. */
  drop(): void {
    for (const ws of this.sockets) ws?.terminate();
  }

  stop(): void {
    this.stopped = true;
    for (const ws of this.sockets) ws?.terminate();
  }

  private connect(shard: number): Promise<void> {
    return new Promise((resolve) => {
      const ws = new WebSocket(`${this.wsBase}/v1/agent/connect?shard=${shard}`, { headers: { authorization: `Bearer ${this.token}` } });
      this.sockets[shard] = ws;
      const retry = () => {
        if (this.sockets[shard] !== ws || this.stopped) return;
        this.sockets[shard] = undefined;
        // Like the real agent: back off a little, then try again until the Worker answers.
        setTimeout(() => void this.connect(shard).then(resolve), 200 + Math.random() * 300);
      };
      ws.on("open", () => this.send(ws, this.hello(shard)));
      ws.on("message", (data) => {
        const msg = dispatcherMessage.parse(JSON.parse(String(data)));
        if (msg.type === "welcome") {
          for (const r of this.unacked[shard]!.values()) this.send(ws, r);
          resolve();
        } else this.onMessage(shard, ws, msg);
      });
      ws.on("close", retry);
      ws.on("error", () => undefined); // the close that follows reconnects
    });
  }

  private hello(shard: number): AgentMessage {
    const running = [...this.inflight].filter(([, s]) => s === shard).map(([id]) => ({ kind: "task" as const, id }));
    for (const r of this.unacked[shard]!.values()) if (r.type === "task.done") running.push({ kind: "task", id: r.taskId });
    return {
      type: "hello", version: PROTOCOL_VERSION, nodeId: this.nodeId, cpus: 2, memMiB: 4096, privileged: false,
      langs: ["py"], slots: slotShare(this.slots, this.shards, shard), slotsShared: true, running, warm: [], agentVersion: "fleet-sim",
    };
  }

  private onMessage(shard: number, ws: WebSocket, msg: DispatcherMessage): void {
    if (msg.type === "ping") this.send(ws, { type: "pong", t: msg.t });
    else if (msg.type === "ack") this.unacked[shard]!.delete(`${msg.of}:${msg.id}`);
    else if (msg.type === "task.assign") this.runTask(shard, msg);
    else if (msg.type === "build.assign") void this.runBuild(shard, msg);
  }

  private runTask(shard: number, msg: TaskAssign): void {
    if (this.inflight.has(msg.taskId)) return; // re-sent after a reconnect: already running
    this.inflight.set(msg.taskId, shard);
    this.peak = Math.max(this.peak, this.inflight.size);
    this.observer.assigned(msg.taskId, this.nodeId);
    setTimeout(() => {
      this.inflight.delete(msg.taskId);
      this.tasksDone++;
      this.report(shard, `task.done:${msg.taskId}`, {
        type: "task.done", taskId: msg.taskId, status: 200, headers: { "content-type": "text/plain" },
        body: Buffer.from(`${msg.taskId} by ${this.nodeId}`).toString("base64"), bodyUploaded: false, log: [], logUploaded: false, durationMs: this.delayMs,
      });
    }, this.delayMs);
  }

  /** A build "succeeds" with a token artifact: tasks need a function with a successful build. */
  private async runBuild(shard: number, msg: BuildAssign): Promise<void> {
    const artifact = Buffer.from("fleet-sim artifact");
    const res = await fetch(`${this.httpBase}${msg.artifactPath}`, { method: "PUT", headers: { authorization: `Bearer ${this.token}` }, body: artifact });
    await res.body?.cancel();
    const ok = res.status === 204;
    this.report(shard, `build.done:${msg.buildId}`, { type: "build.done", buildId: msg.buildId, ok, ...(ok ? { artifactSize: artifact.length } : { reason: `upload ${res.status}` }) });
  }

  /** Kept until acknowledged, and sent again after a reconnect. */
  private report(shard: number, key: string, m: AgentMessage): void {
    this.unacked[shard]!.set(key, m);
    const ws = this.sockets[shard];
    if (ws?.readyState === WebSocket.OPEN) this.send(ws, m);
  }

  private send(ws: WebSocket, m: AgentMessage): void {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(m));
  }
}
