import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocketServer, type WebSocket } from "ws";
import { DispatcherConnection } from "../../agent/control/connection.js";
import { PROTOCOL_VERSION, type AgentMessage, type DispatcherMessage } from "../../shared/protocol/messages.js";

/**
 * A stand-in dispatcher on a real WebSocket: it welcomes every hello and hands each frame after it
 * to the test, one connection at a time, so the test decides what to acknowledge and when to drop.
 */
class Dispatcher {
  readonly server = new WebSocketServer({ port: 0 });
  private readonly sockets: WebSocket[] = [];
  private readonly waiting: ((ws: WebSocket) => void)[] = [];

  constructor() {
    this.server.on("connection", (ws) => {
      const frames: AgentMessage[] = [];
      const listeners: (() => void)[] = [];
      const hellos: AgentMessage[] = [];
      Object.assign(ws, { frames, listeners, hellos });
      ws.on("message", (data) => {
        const msg = JSON.parse(data.toString()) as AgentMessage;
        if (msg.type === "hello") hellos.push(msg);
        if (msg.type === "hello") return ws.send(JSON.stringify({ type: "welcome", heartbeatMs: 60_000, shard: "test" } satisfies DispatcherMessage));
        frames.push(msg);
        for (const l of listeners.splice(0)) l();
      });
      const waiter = this.waiting.shift();
      if (waiter) waiter(ws);
      else this.sockets.push(ws);
    });
  }

  get url() {
    return `ws://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The next connection the agent opens. */
  connection(): Promise<WebSocket> {
    const ws = this.sockets.shift();
    return ws ? Promise.resolve(ws) : new Promise((r) => this.waiting.push(r));
  }

  /** The next frame (after hello) on a connection. */
  static async frame(ws: WebSocket): Promise<AgentMessage> {
    const s = ws as WebSocket & { frames: AgentMessage[]; listeners: (() => void)[] };
    while (!s.frames.length) await new Promise<void>((r) => s.listeners.push(r));
    return s.frames.shift()!;
  }

  static hello(ws: WebSocket): AgentMessage | undefined {
    return (ws as WebSocket & { hellos: AgentMessage[] }).hellos[0];
  }

  static send(ws: WebSocket, msg: DispatcherMessage) {
    ws.send(JSON.stringify(msg));
  }
}

const done = (taskId: string): AgentMessage => ({
  type: "task.done", taskId, status: 200, headers: {}, body: null, bodyUploaded: false, log: [], logUploaded: false, durationMs: 1,
});

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});

function connect(dispatcher: Dispatcher) {
  // As the agent's hello does: work whose outcome awaits its ack counts as running (agent.ts).
  const conn: DispatcherConnection = new DispatcherConnection(dispatcher.url, {}, {
    hello: () => ({ type: "hello", version: PROTOCOL_VERSION, nodeId: "n1", cpus: 1, memMiB: 512, privileged: false, langs: ["py"], slots: 1, running: conn.outbox.finishing(), warm: [] }),
    heartbeat: () => ({ type: "heartbeat", free: 1, warm: [], draining: false }),
    draining: () => false,
    onMessage: () => undefined,
  }, 0);
  conn.start();
  cleanup.push(() => conn.stop());
  return conn;
}

describe("reports after a reconnect", () => {
  it("sends a report again after the socket it went out on dropped unacknowledged, and not after its ack", async () => {
    const dispatcher = new Dispatcher();
    cleanup.push(async () => void dispatcher.server.close());
    await once(dispatcher.server, "listening");
    const conn = connect(dispatcher);
    const first = await dispatcher.connection();
    await eventuallyConnected(conn);
    conn.send(done("t1"));
    expect(await Dispatcher.frame(first)).toEqual(done("t1"));
    first.terminate(); // the report may or may not have been taken: no ack came

    const second = await dispatcher.connection();
    expect(await Dispatcher.frame(second)).toEqual(done("t1"));
    expect(Dispatcher.hello(second)).toMatchObject({ running: [{ kind: "task", id: "t1" }] });
    Dispatcher.send(second, { type: "ack", of: "task.done", id: "t1" });
    await eventuallyEmpty(conn);
    conn.send(done("t2"));
    expect(await Dispatcher.frame(second)).toEqual(done("t2"));
    second.terminate();

    // Only the unacknowledged t2 comes again.
    const third = await dispatcher.connection();
    expect(await Dispatcher.frame(third)).toEqual(done("t2"));
    expect(Dispatcher.hello(third)).toMatchObject({ running: [{ kind: "task", id: "t2" }] });
    Dispatcher.send(third, { type: "ack", of: "task.done", id: "t2" });
    await eventuallyEmpty(conn);
  });

  it("sends a report made while disconnected after the next hello, build log parts in order", async () => {
    const dispatcher = new Dispatcher();
    cleanup.push(async () => void dispatcher.server.close());
    await once(dispatcher.server, "listening");
    const conn = connect(dispatcher);
    const first = await dispatcher.connection();
    await eventuallyConnected(conn);
    first.terminate();
    await until(() => !conn.connected);
    const lines = Array.from({ length: 100 }, (_, i) => `${i} `.padEnd(8000, "l"));
    conn.send({ type: "build.log", buildId: "b1", first: 0, lines });
    conn.send({ type: "build.done", buildId: "b1", ok: true, artifactSize: 1 });
    const second = await dispatcher.connection();
    const logParts: string[] = [];
    for (;;) {
      const f = await Dispatcher.frame(second);
      if (f.type === "build.done") break;
      expect(f).toMatchObject({ type: "build.log", first: logParts.length });
      if (f.type === "build.log") logParts.push(...f.lines);
    }
    expect(logParts).toEqual(lines);
  });
});

async function until(check: () => boolean) {
  while (!check()) await new Promise((r) => setTimeout(r, 10));
}
const eventuallyConnected = (conn: DispatcherConnection) => until(() => conn.connected);
const eventuallyEmpty = (conn: DispatcherConnection) => until(() => conn.outbox.size === 0);
