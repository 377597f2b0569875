import fs from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Agent } from "../../agent/agent.js";
import { loadConfig, type AgentConfig } from "../../agent/config.js";
import type { Runner } from "../../agent/runner/index.js";
import { runBuild } from "../../agent/work/run-build.js";
import { BoundedBuildLog, BUILD_LOG_STREAM_BYTES, BUILD_LOG_STREAM_LINES } from "../../agent/work/bounded-build-log.js";
import { appendToEnds, BUILD_LOG_TAIL_LINES, BUILD_LOG_TEXT_BYTES, BUILD_LOG_TRAILER_BYTES, emptyEnds, endsAsLog } from "../../shared/build-log.js";
import { agentMessage, FRAME_BUDGET_BYTES, MAX_LOG_LINE_CHARS, type AgentMessage } from "../../shared/protocol/messages.js";
import { zipSources } from "../support/zip.js";
import { splitBuildLog } from "../../agent/control/frame-budget.js";

type BuildLog = Extract<AgentMessage, { type: "build.log" }>;

/** The control plane's HTTP side for one build: serves the zip, takes the artifact and the log. */
async function controlPlane(zip: Buffer) {
  const uploads = new Map<string, Buffer>();
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.method === "GET" && req.url!.endsWith("/source")) return res.end(zip);
    if (req.method === "PUT") uploads.set(req.url!, Buffer.concat(chunks));
    res.statusCode = 204;
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, uploads, close: () => server.close() };
}

/** No function containers: the build is the only one, and it needs no room from the runner. */
const idleRunner = { containers: () => [], shutdown: async () => undefined, holdForBuild: async () => () => undefined } as unknown as Runner;

/** A Node.js function whose preinstall script prints what `script` prints: npm shows it, line by line. */
const printingFunction = (script: string) =>
  zipSources({
    "handler.js": 'module.exports = async () => "hi";\n',
    "package.json": JSON.stringify({ name: "loud", version: "1.0.0", scripts: { preinstall: script } }),
  });

/** Builds `zip` through the agent's own build path and returns every frame it reported and what it uploaded. */
async function build(dir: string, zip: Buffer) {
  const cp = await controlPlane(zip);
  const config = loadConfig(["--url", cp.url, "--token", `gca_${"0".repeat(64)}`, "--node-id", "loud-node", "--state-dir", dir]) as AgentConfig;
  const agent = new Agent(config, idleRunner);
  const frames: AgentMessage[] = [];
  try {
    const paths = { sourcePath: "/v1/agent/builds/b1/source", artifactPath: "/v1/agent/builds/b1/artifact", logPath: "/v1/agent/builds/b1/log" };
    await runBuild(agent, { type: "build.assign", buildId: "b1", functionId: "f1", lang: "js", ...paths }, (m) => frames.push(agentMessage.parse(m)));
    const logs = frames.filter((m): m is BuildLog => m.type === "build.log");
    return { frames, logs, text: cp.uploads.get(paths.logPath)?.toString() ?? "" };
  } finally {
    cp.close();
  }
}

const sentBytes = (logs: BuildLog[]) => logs.reduce((n, m) => n + Buffer.byteLength(JSON.stringify(m)), 0);

describe("an agent building a function whose install script floods the log", () => {
  let dir: string;
  beforeAll(async () => (dir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-build-log-"))));
  afterAll(() => fs.rm(dir, { recursive: true, force: true }));

  it("streams its first lines and its last 500, numbered so the rest count as cut, and uploads the whole text", async () => {
    const { frames, logs, text } = await build(path.join(dir, "short"), await printingFunction("seq 1 20000"));
    expect(frames.at(-1)).toMatchObject({ type: "build.done", ok: true });
    const sent = logs.flatMap((m) => m.lines.map((line, k) => ({ n: m.first + k, line })));
    expect(sent.length).toBeLessThanOrEqual(BUILD_LOG_STREAM_LINES + BUILD_LOG_TAIL_LINES);
    // Live lines 0, 1, 2… then one jump to the last 500.
    const jumps = sent.filter((s, i) => i > 0 && s.n !== sent[i - 1]!.n + 1);
    expect(jumps).toHaveLength(1);
    const printed = text.trimEnd().split("\n");
    expect(sent.at(-1)!.n).toBe(printed.length - 1);
    expect(sent.slice(-BUILD_LOG_TAIL_LINES).map((s) => s.line)).toEqual(printed.slice(-BUILD_LOG_TAIL_LINES));
    expect(printed.filter((l) => /^\d+$/.test(l))).toEqual(Array.from({ length: 20_000 }, (_, i) => String(i + 1)));
    // What the dispatcher makes of it: the first 500 lines, the marker, the last 500.
    let ends = emptyEnds();
    for (const m of logs) ends = appendToEnds(ends, m.first, m.lines);
    const record = endsAsLog(ends);
    expect(record).toEqual([...printed.slice(0, 500), `… ${printed.length - 1000} lines cut …`, ...printed.slice(-500)]);
  }, 120_000);

  it("sends a bounded amount when it prints 16 MB of 8 KiB lines, and cuts the whole text at 4 MiB with a note", async () => {
    const { frames, logs, text } = await build(path.join(dir, "long"), await printingFunction("for i in $(seq 1 2000); do printf \"%08d%08000d\\n\" $i 0; done"));
    expect(frames.at(-1)).toMatchObject({ type: "build.done", ok: true });
    // The connection splits a batch into frames within the budget (frame-budget.ts).
    for (const m of logs.flatMap((m) => splitBuildLog(m))) expect(Buffer.byteLength(JSON.stringify(m))).toBeLessThanOrEqual(FRAME_BUDGET_BYTES);
    expect(sentBytes(logs)).toBeLessThan(BUILD_LOG_STREAM_BYTES + BUILD_LOG_TAIL_LINES * (MAX_LOG_LINE_CHARS + 100));
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(BUILD_LOG_TEXT_BYTES + BUILD_LOG_TRAILER_BYTES);
    const lines = text.trimEnd().split("\n");
    expect(lines.at(-1)).toMatch(/^… \d+ lines cut: the whole log keeps its first 4194304 bytes/);
    expect(lines.slice(0, -1).join("\n").length).toBeLessThanOrEqual(BUILD_LOG_TEXT_BYTES);
    // The script's last line went in the final tail, with the builder's own lines after it.
    expect(logs.flatMap((m) => m.lines).some((l) => l.startsWith("00002000"))).toBe(true);
  }, 120_000);

  it("ends the uploaded text with the failure reason", async () => {
    const { frames, text } = await build(path.join(dir, "fail"), await printingFunction("seq 1 3; exit 3"));
    const done = frames.at(-1) as Extract<AgentMessage, { type: "build.done" }>;
    expect(done).toMatchObject({ type: "build.done", ok: false });
    expect(text.trimEnd().split("\n").at(-1)).toBe(`build failed: ${done.reason}`);
  }, 120_000);
});

describe("the agent's bounded build log", () => {
  it("numbers the final tail from its own first line, even when live lines still wait to be sent", () => {
    const log = new BoundedBuildLog();
    for (let i = 0; i < 20_000; i++) log.add(`line ${i}`);
    log.end();
    const batches: { first: number; lines: string[] }[] = [];
    for (let b = log.take(1000); b; b = log.take(1000)) batches.push(b);
    const sent = batches.flatMap((b) => b.lines.map((line, k) => [b.first + k, line] as const));
    expect(sent.every(([n, line]) => line === `line ${n}`)).toBe(true);
    expect(sent.map(([n]) => n)).toEqual([...Array.from({ length: BUILD_LOG_STREAM_LINES }, (_, i) => i), ...Array.from({ length: 500 }, (_, i) => 19_500 + i)]);
  });
});
