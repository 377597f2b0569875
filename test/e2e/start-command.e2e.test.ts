import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { commandLine, descendants } from "../support/process-tree.js";
import { zipSources } from "../support/zip.js";
import { api, freePort, ROOT } from "./harness.js";
import { deploy, invoke } from "./deploy.js";

let stateDir: string;
let port: number;
const started: ChildProcess[] = [];

/** Runs the README's start command and waits for its banner; returns the URL and token it printed. */
async function start(): Promise<{ child: ChildProcess; url: string; token: string; adminToken: string }> {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "scripts/start.ts")], {
    cwd: ROOT,
    env: { ...process.env, GCFAAS_PORT: String(port), GCFAAS_STATE_DIR: stateDir },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.push(child);
  let out = "";
  const banner = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no banner:\n${out}`)), 600_000);
    const onData = (d: Buffer) => {
      out += d.toString();
      if (/Ctrl-C stops everything/.test(out)) {
        clearTimeout(timer);
        resolve(out);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("exit", (code) => reject(new Error(`start exited with ${code}:\n${out}`)));
  });
  return { child, url: /URL\s+(\S+)/.exec(banner)![1]!, token: /token\s+(gc_\S+)/.exec(banner)![1]!, adminToken: /admin token\s+(\S+)/.exec(banner)![1]! };
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  child.kill("SIGINT");
  return exited;
}

afterAll(async () => {
  for (const c of started) if (c.exitCode === null) c.kill("SIGKILL");
  if (stateDir) await fs.rm(stateDir, { recursive: true, force: true });
});

describe("the start command (scripts/start.sh → scripts/start.ts)", () => {
  it("comes up, serves a deployed function, shuts down cleanly, and keeps its state for the next start", async () => {
    stateDir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-start-"));
    port = await freePort();
    const first = await start();
    expect(first.url).toBe(`http://127.0.0.1:${port}`);
    const user = api(first.url, first.token);
    const { functionId, build } = await deploy(user, "py", await zipSources({ "handler.py": "def handle(e, c):\n    return {'up': True}\n" }), "startcheck");
    expect(build.status).toBe("SUCCESS");
    expect(JSON.parse((await invoke(user, functionId)).res.body)).toEqual({ up: true });

    // Command lines are readable by every user of the host (ps): no token on any of them.
    const lines = descendants(first.child.pid!).map(commandLine).filter(Boolean);
    expect(lines.some((l) => l.includes("agent/main.ts"))).toBe(true);
    for (const line of lines) {
      expect(line).not.toContain(first.adminToken);
      expect(line).not.toMatch(/gca_[0-9a-f]{64}/);
    }

    expect(await stop(first.child)).toBe(0);
    await expect(fetch(`${first.url}/healthz`)).rejects.toThrow();

    const second = await start();
    expect(second.token).toBe(first.token);
    expect(JSON.parse((await invoke(api(second.url, second.token), functionId)).res.body)).toEqual({ up: true });
    expect(await stop(second.child)).toBe(0);
  });
});
