import { SELF, env } from "cloudflare:test";
import { ADMIN, callJson } from "./helpers.js";
import { shardStub } from "../../worker/dispatch/client.js";
import type { FleetEntry } from "../../worker/dispatch/fleet.js";
import { PROTOCOL_VERSION, type AgentMessage, type DispatcherMessage } from "../../shared/protocol/messages.js";

type Msg<T extends DispatcherMessage["type"]> = Extract<DispatcherMessage, { type: T }>;

interface HelloOptions {
  privileged?: boolean;
  /** Started with --egress: runs functions that reach the network (absent from the hello when not given). */
  egress?: boolean;
  /** Languages served (lowercase); all six by default. */
  langs?: string[];
  slots?: number;
  builds?: number;
  running?: { kind: "task" | "build"; id: string }[];
  agentVersion?: string;
  runtime?: string;
  /** An agent from before slot shares: its hello offers every shard the node's whole slot count. */
  beforeShares?: boolean;
  /** An agent from before function configuration: its hello does not say `configs`. */
  beforeConfigs?: boolean;
  /** An agent that streams followed tasks' output (hello `liveLogs`). */
  liveLogs?: boolean;
}

/** Which shard to connect to, and through which fetch (a Worker with more shards than the test pool's). */
export interface Via {
  shard: number;
  fetch: (req: Request) => Promise<Response>;
}

/** An agent that speaks the wire protocol from inside the test, to drive the dispatcher directly. */
export class FakeAgent {
  /** Agents still connected: a test that failed halfway must not leave one to take the next test's work. */
  private static open = new Set<FakeAgent>();
  private inbox: DispatcherMessage[] = [];
  private waiters: (() => void)[] = [];
  closed = false;
  /** How the dispatcher closed the socket, once it has. */
  closedWith?: { code: number; reason: string };

  private constructor(readonly ws: WebSocket, readonly nodeId: string, readonly token: string, readonly shard: number) {
    ws.addEventListener("message", (e) => {
      this.inbox.push(JSON.parse(e.data as string));
      for (const w of this.waiters.splice(0)) w();
    });
    ws.addEventListener("close", (e) => {
      this.closed = true;
      this.closedWith = { code: e.code, reason: e.reason };
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** A new agent token bound to the node (by default one that never connects: for status reads). */
  static async mint(nodeId = "observer"): Promise<{ tokenId: string; token: string; nodeId: string }> {
    return callJson("/v1/admin/agent-tokens", 201, { token: ADMIN, json: { nodeId, name: "test" } });
  }

  static async token(nodeId?: string): Promise<string> {
    return (await FakeAgent.mint(nodeId)).token;
  }

  /** Connects and says hello as `nodeId` (with a token of its own unless one is given) and waits for the welcome. */
  static async connect(nodeId: string, opts: HelloOptions & { token?: string; via?: Via } = {}) {
    const agent = await FakeAgent.socket(nodeId, opts.token ?? (await FakeAgent.token(nodeId)), opts.via);
    agent.hello(opts);
    await agent.next("welcome");
    return agent;
  }

  /** A socket that has not said hello yet. */
  static async socket(nodeId: string, token: string, via: Via = { shard: 0, fetch: (r) => SELF.fetch(r) }) {
    const res = await via.fetch(new Request(`https://api.test/v1/agent/connect?shard=${via.shard}`, { headers: { upgrade: "websocket", authorization: `Bearer ${token}` } }));
    if (!res.webSocket) throw new Error(`no websocket: ${res.status} ${await res.text()}`);
    res.webSocket.accept();
    const agent = new FakeAgent(res.webSocket, nodeId, token, via.shard);
    FakeAgent.open.add(agent);
    return agent;
  }

  hello(opts: HelloOptions = {}) {
    this.send({
      type: "hello", version: PROTOCOL_VERSION, nodeId: this.nodeId, cpus: 2, memMiB: 4096, privileged: opts.privileged ?? false,
      langs: opts.langs ?? ["go", "py", "js", "cs", "rb", "rs"], slots: opts.slots ?? 4, running: opts.running ?? [], warm: [],
      ...(opts.beforeShares ? {} : { slotsShared: true as const }),
      ...(opts.beforeConfigs ? {} : { configs: true as const }),
      ...(opts.liveLogs ? { liveLogs: true as const } : {}),
      ...(opts.agentVersion ? { agentVersion: opts.agentVersion } : {}), ...(opts.runtime ? { runtime: opts.runtime } : {}),
      ...(opts.builds === undefined ? {} : { builds: opts.builds }),
      ...(opts.egress === undefined ? {} : { egress: opts.egress }),
    });
  }

  /** Resolves once the dispatcher has closed the socket. */
  async whenClosed(timeoutMs = 3000): Promise<{ code: number; reason: string }> {
    await eventually(async () => this.closed, timeoutMs);
    FakeAgent.open.delete(this);
    return this.closedWith!;
  }

  send(msg: AgentMessage | Record<string, unknown>) {
    this.ws.send(JSON.stringify(msg));
  }

  /** The next message of a type (earlier ones of other types stay queued). */
  async next<T extends DispatcherMessage["type"]>(type: T, timeoutMs = 3000): Promise<Msg<T>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.inbox.findIndex((m) => m.type === type);
      if (i >= 0) return this.inbox.splice(i, 1)[0] as Msg<T>;
      if (this.closed || Date.now() > deadline) throw new Error(`${this.nodeId}: no ${type} message`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, Math.max(1, deadline - Date.now()));
      });
    }
  }

  /** True when no message of the type arrives within `ms`. */
  async none(type: DispatcherMessage["type"], ms = 300): Promise<boolean> {
    try {
      await this.next(type, ms);
      return false;
    } catch {
      return true;
    }
  }

  done(taskId: string, body: string, status = 200, extra: Partial<Record<string, unknown>> = {}) {
    this.send({
      type: "task.done", taskId, status, headers: { "content-type": "text/plain" }, body: btoa(body), bodyUploaded: false,
      log: [`ran ${taskId}`], durationMs: 3, ...extra,
    });
  }

  /** Closes whatever agents the last test left connected. */
  static async closeAll() {
    await Promise.all([...FakeAgent.open].map((a) => a.close()));
  }

  /**
   * Closes and waits until this connection's shard has let go of it (its work is requeued). Not
   * until the node leaves the fleet: a node connected to several shards stays connected until its
   * last socket closes, so waiting for that would wait out the timeout whenever a test closed its
   * sockets in another order than the fleet view lists them.
   */
  async close() {
    FakeAgent.open.delete(this);
    this.ws.close(1000, "bye");
    const shard = shardStub(env, this.shard);
    const stillOpen = () => [...FakeAgent.open].filter((a) => a.nodeId === this.nodeId && a.shard === this.shard).length;
    let listed: FleetEntry[] = [];
    // Whether a fleet() call was still unanswered when the time ran out: eventually() only looks at
    // its deadline between checks, so a shard that stops answering would otherwise hang until the
    // hook timeout again, with nothing said.
    let unanswered = false;
    const deadline = Date.now() + 8_000;
    try {
      // Shorter than the 10 s hook timeout, so a close the shard never takes fails here, saying what
      // the shard still lists and how the socket stands, not as a bare hook timeout.
      await eventually(async () => {
        unanswered = true;
        const fleet = await before(deadline, shard.fleet());
        unanswered = false;
        return (listed = fleet.filter((e) => e.nodeId === this.nodeId)).length <= stillOpen();
      }, 8_000);
    } catch (e) {
      const shardSays = unanswered ? `did not answer fleet() within 8 s (it last listed ${JSON.stringify(listed)})` : `still lists ${JSON.stringify(listed)}`;
      throw new Error(`${this.nodeId}: shard ${this.shard} ${shardSays} (${stillOpen()} other sockets of the node open); readyState ${this.ws.readyState}, closed by the dispatcher: ${JSON.stringify(this.closedWith ?? false)}`, { cause: e });
    }
  }
}

/** `p`, or a rejection once `deadline` (a Date.now() time) passes first. */
async function before<T>(deadline: number, p: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | null = null;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("no answer in time")), Math.max(1, deadline - Date.now()));
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls until `check` returns a truthy value (records are written after the socket frame). */
export async function eventually<T>(check: () => Promise<T | undefined | false>, timeoutMs = 3000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}
