import type { z } from "zod";
import type { Db } from "../db/client.js";
import { ackFor, agentMessage, FRAME_BUDGET_BYTES, type hello as helloSchema, parseFrame, type AgentMessage } from "../../shared/protocol/messages.js";
import { slotShare } from "../../shared/protocol/slot-shares.js";
import { MAX_WARM_REMEMBERED, type AgentState, type Attachment } from "./agents.js";
import type { AgentSockets } from "./agent-sockets.js";
import type { BuildReports } from "./build-reports.js";
import { log } from "./dispatcher-log.js";
import { nodeLeft, setDraining, type NodeFlags } from "./fleet.js";
import type { GroupCommit } from "./group-commit.js";
import type { LogFollows } from "./log-follows.js";
import { admitHello, boundSockets, boundTo, CLOSE, connectRefused, DISABLED, reportsOwnWork, REVOKED, shardOfConnect, type RevokedTokens } from "./nodes.js";
import type { OutcomeLog, TaskDone } from "./outcomes.js";
import type { Pump } from "./pump.js";
import type { WorkQueue } from "./queue.js";
import type { Refusals } from "./refusals.js";
import type { WorkEndings } from "./work-endings.js";
import type { Retries } from "../retries/retries.js";

/** Agents heartbeat this often; one silent for SILENT_AFTER_MS loses its work to the queue. */
export const HEARTBEAT_MS = 5_000;
const SILENT_AFTER_MS = 3 * HEARTBEAT_MS;
const HELLO_WITHIN_MS = 10_000;

type Hello = z.infer<typeof helloSchema>;

/** What the agents' protocol uses of its shard. */
export interface ProtocolParts {
  ctx: Pick<DurableObjectState, "acceptWebSocket" | "getWebSockets" | "id">;
  /** Read at each use, as the shard's own `db` was: tests point the shard at a troubled D1. */
  db(): Db;
  revoked: RevokedTokens;
  sockets: AgentSockets;
  queue: WorkQueue;
  refusals: Refusals;
  follows: LogFollows;
  builds: BuildReports;
  endings: WorkEndings;
  pump: Pump;
  commits: GroupCommit;
  retries: Retries;
  outcomes: OutcomeLog;
  scheduleAlarm(): Promise<void>;
}

/**
 * The shard's side of the agents' WebSocket protocol: connecting, hello, reports, liveness, and
 * an agent's leaving. The Durable Object's handlers hand their events here.
 */
export class AgentProtocol {
  constructor(private readonly parts: ProtocolParts) {}

  /** An agent's connection request: accepted as a socket that must say hello, or refused. */
  async connect(request: Request): Promise<Response> {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") return new Response("expected a WebSocket upgrade", { status: 426 });
    const bound = boundTo(request);
    if (!bound || this.parts.revoked.has(bound.tokenId)) return connectRefused();
    const [client, server] = Object.values(new WebSocketPair()) as [WebSocket, WebSocket];
    this.parts.ctx.acceptWebSocket(server);
    server.serializeAttachment({ hello: false, connectedAt: Date.now(), bound, place: shardOfConnect(request) } satisfies Attachment);
    await this.parts.scheduleAlarm();
    return new Response(null, { status: 101, webSocket: client });
  }

  async message(ws: WebSocket, data: string | ArrayBuffer): Promise<void> {
    // An agent keeps every frame within the budget (a larger body or log goes by HTTP): one over
    // it is not parsed at all, whatever it says (its length in UTF-16 units is at most its bytes).
    if (typeof data === "string" && data.length > FRAME_BUDGET_BYTES) {
      log("warn", "frame over budget dropped", { chars: data.length });
      return;
    }
    const msg = parseFrame(agentMessage, data);
    if (!msg) {
      log("warn", "unparseable frame dropped", { frame: typeof data === "string" ? data.slice(0, 200) : "binary" });
      return;
    }
    const att = ws.deserializeAttachment() as Attachment;
    if (msg.type === "hello") return this.onHello(ws, att, msg);
    if (!att.hello) return; // nothing but hello counts before hello
    const now = Date.now();
    att.lastSeen = now;
    if (msg.type === "pong") att.rttMs = Math.max(0, now - msg.t);
    if (msg.type === "heartbeat") {
      att.warm = [...new Set(msg.warm.map((w) => w.functionId))].slice(0, MAX_WARM_REMEMBERED);
      setDraining(att, { agent: msg.draining });
    }
    ws.serializeAttachment(att);
    // Reports count only from the node the work is assigned to; another's (or one whose work is
    // gone: a duplicate, a late report) is moot, and acknowledged so the agent forgets it.
    if (reportsOwnWork(this.parts.queue, att.nodeId, msg)) await this.onReport(att, msg, now, typeof data === "string" ? data : undefined);
    // Taken for good (or moot): the agent may forget it. A report that failed is not acknowledged,
    // and the agent sends it again after its next reconnect.
    const ack = ackFor(msg);
    if (ack) this.parts.sockets.send(ws, ack);
  }

  async closed(ws: WebSocket, code: number, reason: string): Promise<void> {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      /* already closed */
    }
    await this.drop(ws);
  }

  /** The alarm's liveness round: a socket silent too long closes, the others get a ping. */
  async checkLiveness(now: number): Promise<void> {
    for (const ws of this.parts.ctx.getWebSockets()) {
      const att = ws.deserializeAttachment() as Attachment;
      const seen = att.hello ? att.lastSeen : att.connectedAt;
      if (now - seen > (att.hello ? SILENT_AFTER_MS : HELLO_WITHIN_MS)) {
        log("warn", "agent silent, closing", { nodeId: att.hello ? att.nodeId : undefined });
        await this.refuse(ws, 4000, "silent");
      } else if (att.hello) this.parts.sockets.send(ws, { type: "ping", t: now });
    }
  }

  async closeToken(tokenId: string): Promise<void> {
    this.parts.revoked.add(tokenId, Date.now());
    for (const ws of boundSockets(this.parts.ctx.getWebSockets(), (b) => b.tokenId === tokenId)) await this.refuse(ws, CLOSE.revoked, REVOKED);
  }

  async nodeChanged(nodeId: string, flags: NodeFlags): Promise<void> {
    for (const ws of boundSockets(this.parts.ctx.getWebSockets(), (b) => b.nodeId === nodeId)) {
      const att = ws.deserializeAttachment() as Attachment;
      if (flags.disabled) await this.refuse(ws, CLOSE.disabled, DISABLED);
      else if (att.hello) ws.serializeAttachment(setDraining(att, { operator: flags.draining }));
    }
    await this.parts.pump.run();
  }

  private async onHello(ws: WebSocket, att: Attachment, h: Hello): Promise<void> {
    const { sockets, queue } = this.parts;
    const now = Date.now();
    const admitted = await admitHello(this.parts.db(), att, h, now);
    if (!("bound" in admitted)) {
      log("warn", "hello refused", { nodeId: h.nodeId, ...admitted });
      return this.refuse(ws, admitted.code, admitted.reason);
    }
    if (ws.readyState !== WebSocket.OPEN) return; // closed (revoked, disabled, gone) while D1 answered
    const { bound, flags } = admitted;
    // A reconnecting agent replaces its old socket; the old one's close must not requeue its work.
    for (const other of sockets.of(h.nodeId)) if (other !== ws) {
      other.serializeAttachment({ hello: false, connectedAt: 0 } satisfies Attachment);
      try {
        other.close(4001, "replaced by a new connection");
      } catch {
        /* gone */
      }
    }
    // An agent from before slot shares offers every shard all its slots; this shard takes its share.
    const place = (!att.hello && att.place) || { shard: 0, shards: 1 };
    const slots = h.slotsShared ? h.slots : slotShare(h.slots, place.shards, place.shard);
    const state: AgentState = {
      nodeId: h.nodeId, cpus: h.cpus, memMiB: h.memMiB, privileged: h.privileged, egress: h.egress === true, langs: h.langs, slots, builds: h.builds, configs: h.configs === true,
      warm: [...new Set(h.warm.map((w) => w.functionId))].slice(0, MAX_WARM_REMEMBERED), draining: flags.draining, lastSeen: now, rttMs: 0,
      liveLogs: h.liveLogs === true,
    };
    this.parts.refusals.saw(h.nodeId, state);
    const node = { tokenId: bound.tokenId, connectedAt: now, agentVersion: h.agentVersion, runtime: h.runtime, operatorDraining: flags.draining };
    ws.serializeAttachment({ hello: true, ...node, ...state } satisfies Attachment);
    // Work assigned to this node that it no longer runs (it restarted) goes back to the queue.
    const running = new Set(h.running.map((r) => r.id));
    const lost = queue.assignedTo(h.nodeId).filter((w) => !running.has(w.id));
    for (const w of lost) queue.requeueOne(w.id);
    sockets.send(ws, { type: "welcome", heartbeatMs: HEARTBEAT_MS, shard: this.parts.ctx.id.toString() });
    sockets.send(ws, { type: "ping", t: now });
    log("info", "agent connected", { nodeId: h.nodeId, slots, privileged: h.privileged, egress: state.egress, requeued: lost.length });
    await this.parts.pump.run();
    await this.parts.scheduleAlarm();
  }

  private async onReport(agent: AgentState, msg: AgentMessage, now: number, frame?: string): Promise<void> {
    const { builds, pump } = this.parts;
    switch (msg.type) {
      case "heartbeat":
      case "pong":
      case "hello":
        return pump.run();
      case "task.done":
        return this.onTaskDone(agent, msg, now, frame);
      case "task.log": {
        const w = this.parts.queue.get(msg.taskId);
        if (w) this.parts.follows.lines(w, msg);
        return;
      }
      case "build.started":
        return builds.started(msg, now);
      case "build.log":
        return builds.logged(msg);
      case "build.done":
        if (await builds.done(msg, now)) await pump.run();
        return;
    }
  }

  private async onTaskDone(agent: AgentState, msg: TaskDone, now: number, frame?: string) {
    const { endings, retries, outcomes } = this.parts;
    const w = this.parts.queue.get(msg.taskId);
    if (!w) return; // already accepted (a duplicate or a late report after a requeue)
    const retried = endings.retried(w, msg, now);
    if (!retried) endings.accept(w, msg, now, agent.rttMs, frame);
    // The freed slot takes new work now, before the outcome reaches D1.
    await this.parts.pump.run();
    if (retried) return this.parts.scheduleAlarm();
    // Accepted is durable: the agent's acknowledgement need not wait for D1's batch, nor its gap.
    void this.parts.commits.run().then(() => (retries.letters.size ? retries.letters.drain((id) => outcomes.has(id)) : undefined));
  }

  /** Closes a socket the dispatcher no longer serves; its node's work goes back unless another socket holds the node. */
  async refuse(ws: WebSocket, code: number, reason: string): Promise<void> {
    try {
      ws.close(code, reason);
    } catch {
      /* gone */
    }
    await this.drop(ws);
  }

  async drop(ws: WebSocket): Promise<void> {
    const att = ws.deserializeAttachment() as Attachment | null;
    if (!att?.hello) return;
    ws.serializeAttachment({ hello: false, connectedAt: 0 } satisfies Attachment);
    if (this.parts.sockets.of(att.nodeId).some((o) => o !== ws)) return;
    const back = this.parts.queue.requeueNode(att.nodeId);
    log("info", "agent disconnected", { nodeId: att.nodeId, requeued: back.length });
    await nodeLeft(this.parts.db(), att.nodeId, Date.now()).catch((e) => log("warn", "recording a node's last sight failed", { error: String(e) }));
    await this.parts.pump.run();
  }
}
