import fs from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocketServer } from "ws";
import { Agent } from "../../agent/agent.js";
import { loadConfig, type AgentConfig } from "../../agent/config.js";
import type { Runner } from "../../agent/runner/index.js";
import { agentMessage, PROTOCOL_VERSION, type AgentMessage } from "../../shared/protocol/messages.js";
import { DispatcherConnection } from "../../agent/control/connection.js";

async function eventually<T>(check: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A control plane of `shards` dispatchers that records what the agent says on each connection:
 * the agent's own connection and hello code, no Worker, no Docker.
 */
async function controlPlane(shards: number, welcomeAfter: Promise<void> = Promise.resolve()) {
  const said: AgentMessage[][] = Array.from({ length: shards }, () => []);
  const wss = new WebSocketServer({ noServer: true });
  const server = http.createServer((req, res) => {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify({ shards, nodeId: "split-node" }));
  });
  server.on("upgrade", (req, socket, head) => {
    const shard = Number(new URL(req.url!, "http://x").searchParams.get("shard"));
    wss.handleUpgrade(req, socket, head, (ws) => {
      ws.on("message", (data) => {
        const m = agentMessage.parse(JSON.parse(String(data)));
        said[shard]!.push(m);
        if (m.type === "hello") {
          void welcomeAfter.then(() => {
            ws.send(JSON.stringify({ type: "welcome", heartbeatMs: 60_000, shard: String(shard) }));
            // The agent answers in order: its pong shows it has taken the welcome.
            ws.send(JSON.stringify({ type: "ping", t: 1 }));
          });
        }
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, said, close: () => { wss.close(); server.close(); } };
}

/** No containers: this test is about what the agent offers each shard, not what it runs. */
const idleRunner = { containers: () => [], shutdown: async () => undefined } as unknown as Runner;

async function agentWith(url: string, slots: number, stateDir: string): Promise<Agent> {
  const config = loadConfig(["--url", url, "--token", `gca_${"0".repeat(64)}`, "--node-id", "split-node", "--slots", String(slots), "--state-dir", stateDir]) as AgentConfig;
  const agent = new Agent(config, idleRunner);
  await agent.start();
  return agent;
}

describe("an agent's hello to each dispatcher shard", () => {
  let dir: string;
  beforeAll(async () => (dir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-shard-hello-"))));
  afterAll(() => fs.rm(dir, { recursive: true, force: true }));

  for (const [slots, shards, expected] of [[8, 1, [8]], [10, 4, [3, 3, 2, 2]], [2, 3, [1, 1, 1]]] as const) {
    it(`offers ${slots} slots over ${shards} shard(s) as ${expected.join(", ")}, and a heartbeat the same share as free`, async () => {
      const cp = await controlPlane(shards);
      const agent = await agentWith(cp.url, slots, path.join(dir, `${slots}-${shards}`));
      try {
        const first = <T extends AgentMessage["type"]>(type: T) =>
          eventually(() => {
            const got = cp.said.map((s) => s.find((m): m is Extract<AgentMessage, { type: T }> => m.type === type));
            return got.every(Boolean) ? got.map((m) => m!) : undefined;
          });
        expect((await first("hello")).map((h) => h.slots)).toEqual(expected);
        // Drained only once every shard has welcomed it: a drain before a welcome is told by the
        // heartbeat that follows the welcome (the test below), and this one is about the share.
        await first("pong");
        // Nothing runs: each shard's heartbeat counts its whole share free, never the node's slots.
        await agent.drain();
        expect((await first("heartbeat")).map((b) => [b.free, b.draining])).toEqual(expected.map((n) => [n, true]));
      } finally {
        await agent.kill();
        cp.close();
      }
    });
  }


  it("tells a shard whose welcome came after the drain began that it drains, without waiting for the next beat", async () => {
    let welcome!: () => void;
    const cp = await controlPlane(1, new Promise<void>((r) => (welcome = r)));
    let draining = false;
    const conn = new DispatcherConnection(`${cp.url.replace("http", "ws")}/v1/agent/connect?shard=0`, {}, {
      hello: () => ({ type: "hello", version: PROTOCOL_VERSION, nodeId: "split-node", cpus: 1, memMiB: 512, privileged: false, langs: ["py"], slots: 4, running: [], warm: [] }),
      heartbeat: () => ({ type: "heartbeat", free: 4, warm: [], draining }),
      draining: () => draining,
      onMessage: () => undefined,
    }, 0);
    conn.start();
    try {
      await eventually(() => cp.said[0]!.find((m) => m.type === "hello"));
      draining = true;
      conn.sendHeartbeat(); // what a drain does: the socket is not ready yet, so nothing goes
      welcome();
      // The next beat is a minute away: this one follows the welcome.
      expect(await eventually(() => cp.said[0]!.find((m) => m.type === "heartbeat"))).toMatchObject({ draining: true });
    } finally {
      await conn.stop();
      cp.close();
    }
  });
});
