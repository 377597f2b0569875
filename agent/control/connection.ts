import WebSocket from "ws";
import { dispatcherMessage, parseFrame, type AgentMessage, type DispatcherMessage } from "../../shared/protocol/messages.js";
import { log } from "../log.js";

export interface ConnectionHooks {
  /** The hello frame, built fresh for every (re)connect. */
  hello(): AgentMessage;
  heartbeat(): AgentMessage;
  onMessage(msg: DispatcherMessage, conn: DispatcherConnection): void;
}

const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;

/**
 * One WebSocket to one dispatcher shard. It reconnects with exponential backoff and jitter (a
 * deploy drops every socket at once; jitter keeps the fleet from reconnecting in lockstep), says
 * hello again, and sends reports queued while it was down, so no outcome is lost to a reconnect.
 */
export class DispatcherConnection {
  private ws?: WebSocket;
  private outbox: AgentMessage[] = [];
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

  /** Sends now, or after the next hello if the socket is down. */
  send(msg: AgentMessage): void {
    if (this.ready && this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
    else this.outbox.push(msg);
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
    const pending = this.outbox.splice(0);
    for (const m of pending) this.send(m);
    clearInterval(this.heartbeatTimer);
    this.heartbeatTimer = setInterval(() => this.sendHeartbeat(), heartbeatMs);
  }
}
