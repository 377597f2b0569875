import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../..");
const TOKEN = `gca_${"7".repeat(64)}`;
let dir: string;
let engine: net.Server;
const held: net.Socket[] = [];
let agent: ChildProcess | undefined;

// A Docker engine that takes every connection and answers nothing: what a wedged dockerd is to the calls it no longer serves.
beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-wedged-engine-"));
  engine = net.createServer((socket) => held.push(socket));
  await new Promise<void>((resolve) => engine.listen(path.join(dir, "docker.sock"), resolve));
});

afterAll(async () => {
  agent?.kill("SIGKILL");
  for (const s of held) s.destroy();
  await new Promise((resolve) => engine.close(resolve));
  await fs.rm(dir, { recursive: true, force: true });
});

describe("starting against a Docker engine that does not answer", () => {
  it("keeps waiting, and says in its log which step waits on the engine", async () => {
    agent = spawn(
      process.execPath,
      ["--import", "tsx", path.join(ROOT, "agent/main.ts"), "--url", "http://127.0.0.1:9", "--node-id", "wedged", "--state-dir", path.join(dir, "state"), "--no-build-images"],
      { cwd: ROOT, env: { ...process.env, DOCKER_HOST: `unix://${path.join(dir, "docker.sock")}`, GCFAAS_AGENT_TOKEN: TOKEN }, stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    agent.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    agent.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const line = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no line about the engine in 30 s; the agent printed:\n${out}`)), 30_000);
      const look = () => {
        const found = out.split("\n").find((l) => l.includes("still waiting for the Docker engine"));
        if (found) {
          clearTimeout(timer);
          resolve(JSON.parse(found) as Record<string, unknown>);
        }
      };
      agent!.stdout!.on("data", look);
      agent!.once("exit", (code) => reject(new Error(`the agent exited (${code}):\n${out}`)));
    });
    expect(line).toMatchObject({ level: "warn", msg: "still waiting for the Docker engine: its runtimes (docker info)" });
    expect(line.seconds).toBeGreaterThanOrEqual(10);
    // It asked the engine and is still waiting for it, not stopped.
    expect(held.length).toBeGreaterThan(0);
    expect(agent.exitCode).toBeNull();
  }, 60_000);
});
