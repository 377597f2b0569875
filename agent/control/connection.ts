import WebSocket from "ws";
import { dispatcherMessage, FRAME_BUDGET_BYTES, parseFrame, type AgentMessage, type DispatcherMessage } from "../../shared/protocol/messages.js";
import { log } from "../log.js";
import { splitBuildLog } from "./frame-budget.js";
import { Outbox } from "./outbox.js";

export interface ConnectionHooks {
  /** The hello frame, built fresh for every (re)connect. */
  hello(): AgentMessage;
  heartbeat(): AgentMessage;
  /** True once the agent drains: takes nothing new. */
  draining(): boolean;
  onMessage(msg: DispatcherMessage, conn: DispatcherConnection): void;
}

const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;

/**
 * One WebSocket to one dispatcher shard. It reconnects with exponential backoff and jitter (a
 * deploy drops every socket at once; jitter keeps the fleet from reconnecting in lockstep), says
 * hello again, and sends every report the dispatcher has not acknowledged (see Outbox), so no
 * outcome is lost to a reconnect, whether it was queued while down or sent on a socket that died.
 */
export class DispatcherConnection {
  private ws?: WebSocket;
  readonly outbox = new Outbox();
  private backoff = MIN_BACKOFF_MS;
  private heartbeatTimer?: NodeJS.Timeout;
  private reconnectTimer?: NodeJS.Timeout;
  private stopped = false;
  private ready = false;

  constructor(
    private readonly url: string,
    private readonly headers: Record<string, string>,
    private readonly hooks: ConnectionHooks,
    readonly shard: number,
  ) {}

  start(): void {
    this.stopped = false;
    this.connect();
  }

  get connected(): boolean {
    return this.ready;
  }

  /**
   * Sends now if the socket is up. A report is also kept until acknowledged (and so sent after the
   * next hello if the socket is down); other frames are moot after a reconnect and are dropped.
   */
  send(msg: AgentMessage): void {
    for (const part of msg.type === "build.log" ? splitBuildLog(msg) : [msg]) {
      const frame = JSON.stringify(part);
      const bytes = Buffer.byteLength(frame);
      if (bytes > FRAME_BUDGET_BYTES) {
        // The dispatcher's edge would close the socket over it, losing every report in flight.
        log("error", "frame over budget dropped", { shard: this.shard, type: part.type, bytes });
        continue;
      }
      this.outbox.keep(part);
      this.write(frame);
    }
  }

  private write(frame: string): void {
    if (this.ready && this.ws?.readyState === WebSocket.OPEN) this.ws.send(frame);
  }

  sendHeartbeat(): void {
    if (this.ready) this.send(this.hooks.heartbeat());
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.heartbeatTimer);
    clearTimeout(this.reconnectTimer);
    const ws = this.ws;
    if (!ws || ws.readyState === WebSocket.CLOSED) return;
    await new Promise<void>((resolve) => {
      ws.once("close", () => resolve());
      ws.close(1000, "agent stopping");
      setTimeout(resolve, 2000).unref();
    });
  }

  private connect(): void {
    const ws = new WebSocket(this.url, { headers: this.headers, handshakeTimeout: 10_000 });
    this.ws = ws;
    ws.on("open", () => {
      ws.send(JSON.stringify(this.hooks.hello()));
    });
    ws.on("message", (data, isBinary) => {
      const msg = isBinary ? undefined : parseFrame(dispatcherMessage, data.toString());
      if (!msg) {
        log("warn", "unparseable frame from dispatcher dropped", { shard: this.shard });
        return;
      }
      if (msg.type === "welcome") return this.onWelcome(msg.heartbeatMs);
      if (msg.type === "ping") return this.send({ type: "pong", t: msg.t });
      if (msg.type === "ack") return this.outbox.settle(msg);
      this.hooks.onMessage(msg, this);
    });
    ws.on("unexpected-response", (_req, res) => {
      log("error", "dispatcher refused the connection", { shard: this.shard, status: res.statusCode });
    });
    ws.on("error", (err) => log("warn", "connection error", { shard: this.shard, error: err.message }));
    ws.on("close", (code) => {
      this.ready = false;
      clearInterval(this.heartbeatTimer);
      if (this.stopped) return;
      const delay = Math.round(this.backoff * (0.5 + Math.random()));
      this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
      log("warn", "disconnected from dispatcher, reconnecting", { shard: this.shard, code, inMs: delay });
      this.reconnectTimer = setTimeout(() => this.connect(), delay);
    });
  }

  private onWelcome(heartbeatMs: number): void {
    this.ready = true;
    this.backoff = MIN_BACKOFF_MS;
    log("info", "connected to dispatcher", { shard: this.shard, heartbeatMs });
    for (const m of this.outbox.pending()) this.write(JSON.stringify(m));
    clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = setInterval(() => this.sendHeartbeat(), heartbeatMs);
    // A drain that began after the hello went out reached no heartbeat (the socket was not ready):
    // say it now, or the shard would go on assigning work until the next beat, a minute away.
    if (this.hooks.draining()) this.sendHeartbeat();
  }
}
