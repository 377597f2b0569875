import fs from "node:fs/promises";
import path from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildFunction } from "../../agent/builder/index.js";
import { fitTaskDone } from "../../agent/control/frame-budget.js";
import { LABEL_AGENT, LABEL_ROLE } from "../../agent/docker/client.js";
import { Runner } from "../../agent/runner/index.js";
import { MAX_CALL_LOG_BYTES } from "../../agent/runner/invocation-log.js";
import { zipItems } from "../support/zip.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { BUILD_AGENT_ID, buildFiles, call, removeTempDirs, tempDir, type Built } from "./helpers/functions.js";

// What a function's (or a build's) output may cost the node: Docker's disk and the agent's memory.
const docker = new Docker();
const AGENT_ID = "test-output-limits";
/** 20,000 lines of 999 bytes: about 20 MB, ten times what a call's log keeps. */
const FLOOD_LINES = 20_000;
const FLOOD_LINE_BYTES = 999;
const FLOOD = [
  "import sys",
  "",
  "def handle(event, context):",
  `    line = 'x' * ${FLOOD_LINE_BYTES} + '\\n'`,
  `    for _ in range(${FLOOD_LINES}):`,
  "        sys.stdout.write(line)",
  "    sys.stdout.flush()",
  "    return 'printed'",
  "",
].join("\n");
/** 30,000 short lines, numbered from 0: three times the lines a call's log keeps. */
const MANY_LINES = 30_000;
const MANY = `def handle(event, context):\n    for i in range(${MANY_LINES}):\n        print(i)\n    return 'printed'\n`;

let runner: Runner;
let flood: Built;
let many: Built;

async function python(source: string): Promise<Built> {
  const built = await buildFiles("py", [{ name: "handler.py", data: source }]);
  if (!built.result.ok) throw new Error(built.log.join("\n"));
  return built;
}

/** The Docker log a container has: its driver and, for a file driver, the file's size. */
async function dockerLogOf(id: string): Promise<{ driver: string; path: string; bytes: number | null }> {
  const info = await docker.getContainer(id).inspect();
  const bytes = info.LogPath ? (await fs.stat(info.LogPath).catch(() => null))?.size ?? null : null;
  // Whatever the driver, json-file would write here: nothing may be there.
  const jsonFile = path.join((await docker.info()).DockerRootDir as string, "containers", info.Id, `${info.Id}-json.log`);
  expect(await fs.stat(jsonFile).catch(() => null)).toBeNull();
  return { driver: info.HostConfig.LogConfig?.Type ?? "", path: info.LogPath, bytes };
}

beforeAll(async () => {
  await ensureEnvironment(["py"]);
  runner = await Runner.create({ stateDir: path.join(await tempDir("state-output"), "state"), agentId: AGENT_ID });
  [flood, many] = await Promise.all([python(FLOOD), python(MANY)]);
});

afterAll(async () => {
  await runner?.shutdown();
  await removeTempDirs();
});

describe("Docker's log of the agent's containers (issue 22, item 1)", () => {
  it("is off for a function container: a call printing 20 MB leaves no log file, and its output still reaches the call's log", async () => {
    const res = await runner.invoke(call(flood, "py", {}));
    expect(res.status).toBe(200);
    expect(res.log[0]).toBe("x".repeat(FLOOD_LINE_BYTES));
    // The container stays warm: a log file would live and grow with it.
    expect(runner.containers().map((c) => c.id)).toContain(res.containerId);
    expect(await dockerLogOf(res.containerId)).toEqual({ driver: "none", path: "", bytes: null });
  });

  it("is off for pooled runtime containers", async () => {
    const pooled = await Runner.create({
      stateDir: path.join(await tempDir("state-output-pool"), "state"),
      agentId: `${AGENT_ID}-pool`,
      pool: { size: 1, max: 1, idleMs: 60_000, languages: ["py"] },
    });
    try {
      while ((pooled.pooledContainers().py ?? 0) < 1) await new Promise((r) => setTimeout(r, 100));
      const list = await docker.listContainers({ all: true, filters: { label: [`${LABEL_AGENT}=${AGENT_ID}-pool`, `${LABEL_ROLE}=pool`] } });
      expect(list.length).toBe(1);
      expect(await dockerLogOf(list[0]!.Id)).toEqual({ driver: "none", path: "", bytes: null });
    } finally {
      await pooled.shutdown();
    }
  });

  it("is off for build containers, whose output still reaches the build log", async () => {
    const events = await docker.getEvents({ filters: { type: ["container"], event: ["create"], label: [`${LABEL_AGENT}=${BUILD_AGENT_ID}`, `${LABEL_ROLE}=build`] } });
    const seen: Promise<Awaited<ReturnType<typeof dockerLogOf>>>[] = [];
    // The build runs for a while after its container is created (start, compile): time to look at it.
    events.on("data", (chunk: Buffer) => seen.push(dockerLogOf((JSON.parse(chunk.toString()) as { id: string }).id)));
    const log: string[] = [];
    const zip = await zipItems([{ name: "handler.py", data: "def handle(event, context):\n    return 1\n" }]);
    try {
      const result = await buildFunction({ lang: "py", zip, workDir: path.join(await tempDir("build-output"), "work"), onLog: (l) => log.push(l), agentId: BUILD_AGENT_ID });
      expect(result.ok).toBe(true);
    } finally {
      (events as unknown as { destroy(): void }).destroy();
    }
    expect(log).toContain("checking handler.py");
    expect(seen).toHaveLength(1);
    expect(await seen[0]).toEqual({ driver: "none", path: "", bytes: null });
  });
});

describe("a call's output in the agent's memory (issue 22, item 4)", () => {
  it("holds at most 2 MiB of a call printing 20 MB, counts the lines and bytes it cut, and hands the counts to the report", async () => {
    const res = await runner.invoke(call(flood, "py", {}));
    expect(res.status).toBe(200);
    const kept = Math.floor(MAX_CALL_LOG_BYTES / FLOOD_LINE_BYTES);
    const cut = { lines: FLOOD_LINES - kept, bytes: (FLOOD_LINES - kept) * FLOOD_LINE_BYTES };
    expect(res.logCut).toEqual(cut);
    expect(res.log).toHaveLength(kept + 1);
    expect(res.log.at(-1)).toBe(`[runtime] … ${cut.lines} lines (${cut.bytes} bytes) cut … (a call's log keeps at most 10000 lines and ${MAX_CALL_LOG_BYTES} bytes)`);
    const held = runner.containers().find((c) => c.id === res.containerId)!.logBytes;
    expect(held.peak).toBeLessThanOrEqual(MAX_CALL_LOG_BYTES);
    expect(held.peak).toBe(kept * FLOOD_LINE_BYTES);
    expect(held.retained).toBe(0);

    // The report: the kept log is uploaded whole, and the counts travel in the frame.
    let uploaded: string[] = [];
    const frame = await fitTaskDone(
      { taskId: "t1", status: res.status, headers: res.headers, body: res.body, log: res.log, logCut: res.logCut, durationMs: res.durationMs },
      { body: async () => undefined, log: async (json) => void (uploaded = JSON.parse(json.toString()) as string[]) },
    );
    expect(frame.logUploaded).toBe(true);
    expect(uploaded).toEqual(res.log);
    expect(frame.logCut).toEqual(cut);
  });

  it("keeps at most 10,000 lines, the note among them, of a call printing 30,000", async () => {
    const res = await runner.invoke(call(many, "py", {}));
    expect(res.status).toBe(200);
    expect(res.log).toHaveLength(10_000);
    expect(res.log.slice(0, 3)).toEqual(["0", "1", "2"]);
    const cutLines = Array.from({ length: MANY_LINES - 9_999 }, (_, i) => String(9_999 + i));
    const cut = { lines: cutLines.length, bytes: cutLines.reduce((n, l) => n + l.length, 0) };
    expect(res.logCut).toEqual(cut);
    expect(res.log.at(-1)).toBe(`[runtime] … ${cut.lines} lines (${cut.bytes} bytes) cut … (a call's log keeps at most 10000 lines and ${MAX_CALL_LOG_BYTES} bytes)`);
  });
});
