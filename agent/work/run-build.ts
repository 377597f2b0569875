import fs from "node:fs/promises";
import path from "node:path";
import type { AgentMessage, DispatcherMessage } from "../../shared/protocol/messages.js";
import type { WorkContext } from "./work-context.js";
import type { AgentConfig } from "../config.js";
import { buildFunction, type BuildLimits } from "../builder/index.js";
import type { SandboxRuntime } from "../docker/sandbox-runtime.js";
import { log } from "../log.js";
import { putFile } from "./upload-file.js";
import { BoundedBuildLog } from "./bounded-build-log.js";

type BuildAssign = Extract<DispatcherMessage, { type: "build.assign" }>;

/** Lines that make a batch go at once rather than at the next tick. */
const FLUSH_LINES = 500;
const FLUSH_MS = 250;

/** The operator's build settings of this node. */
export function buildLimitsOf(config: AgentConfig, sandbox: SandboxRuntime = "runc"): Partial<BuildLimits> {
  return {
    diskMiB: config.buildDiskMiB, memoryMiB: config.buildMemoryMiB, pids: config.buildPids, maxArtifactMiB: config.maxArtifactMiB,
    runtime: sandbox === "runsc" ? "runsc" : undefined,
  };
}

/**
 * Runs one build: wait for a build slot of this node, fetch the zip, build it in a throwaway
 * container, stream the log in batches (bounded: bounded-build-log.ts), upload the artifact and the
 * whole log, report the outcome. The uploads happen before `build.done`, so a SUCCESS build always
 * has an artifact any node can fetch.
 */
export async function runBuild(agent: WorkContext, msg: BuildAssign, report: (m: AgentMessage) => void): Promise<void> {
  const release = await agent.buildSlots.take();
  try {
    await buildIn(agent, msg, report);
  } finally {
    release();
  }
}

/** Longest failure reason a build.done frame carries. */
const MAX_REASON_CHARS = 4096;

async function buildIn(agent: WorkContext, msg: BuildAssign, report: (m: AgentMessage) => void): Promise<void> {
  report({ type: "build.started", buildId: msg.buildId });
  const dir = await agent.scratch(`build-${msg.buildId}`);
  const buildLog = new BoundedBuildLog();
  const flush = () => {
    for (let batch = buildLog.take(1000); batch; batch = buildLog.take(1000)) report({ type: "build.log", buildId: msg.buildId, ...batch });
  };
  const timer = setInterval(flush, FLUSH_MS);
  let ended = false;
  const end = async (failure?: string) => {
    ended = true;
    buildLog.end();
    flush();
    await uploadLog(agent, msg, buildLog.text(failure));
  };
  try {
    const zip = path.join(dir, "source.zip");
    await agent.control.download(msg.sourcePath, zip);
    let unflushed = 0;
    const result = await buildFunction({
      lang: msg.lang,
      zip,
      workDir: path.join(dir, "build"),
      agentId: agent.config.nodeId,
      limits: buildLimitsOf(agent.config, agent.sandbox),
      onLog: (line) => {
        buildLog.add(line);
        if (++unflushed >= FLUSH_LINES) {
          unflushed = 0;
          flush();
        }
      },
    });
    if (!result.ok) {
      const reason = result.reason.slice(0, MAX_REASON_CHARS);
      await end(reason);
      report({ type: "build.done", buildId: msg.buildId, ok: false, reason });
      return;
    }
    const size = await putFile(agent.control, msg.artifactPath, result.artifactPath);
    await agent.artifacts.adopt(msg.buildId, result.artifactPath);
    await end();
    report({ type: "build.done", buildId: msg.buildId, ok: true, artifactSize: size });
    log("info", "build finished", { buildId: msg.buildId, lang: msg.lang, ms: result.durationMs, bytes: size, logLines: buildLog.printed });
  } finally {
    clearInterval(timer);
    if (!ended) {
      buildLog.end();
      flush();
    }
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/**
 * The whole log (bounded) goes over HTTP before build.done, as the artifact does; a log that could
 * not be stored leaves the build as it is (its record still has its first and last lines).
 */
async function uploadLog(agent: WorkContext, msg: BuildAssign, text: Buffer): Promise<void> {
  if (!msg.logPath) return;
  try {
    await agent.control.put(msg.logPath, text, "text/plain; charset=utf-8");
  } catch (e) {
    log("warn", "build log upload failed", { buildId: msg.buildId, error: String(e) });
  }
}
