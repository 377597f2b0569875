import fs from "node:fs/promises";
import path from "node:path";
import type { AgentMessage, DispatcherMessage } from "../../shared/protocol/messages.js";
import type { Agent } from "../agent.js";
import type { AgentConfig } from "../config.js";
import { buildFunction, type BuildLimits } from "../builder/index.js";
import type { SandboxRuntime } from "../docker/sandbox-runtime.js";
import { log } from "../log.js";
import { putFile } from "./upload-file.js";

type BuildAssign = Extract<DispatcherMessage, { type: "build.assign" }>;

const FLUSH_LINES = 50;
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
 * container, stream the log in batches, upload the artifact, report the outcome. The artifact
 * upload happens before `build.done`, so a SUCCESS build always has an artifact any node can fetch.
 */
export async function runBuild(agent: Agent, msg: BuildAssign, report: (m: AgentMessage) => void): Promise<void> {
  const release = await agent.buildSlots.take();
  try {
    await buildIn(agent, msg, report);
  } finally {
    release();
  }
}

async function buildIn(agent: Agent, msg: BuildAssign, report: (m: AgentMessage) => void): Promise<void> {
  report({ type: "build.started", buildId: msg.buildId });
  const dir = await agent.scratch(`build-${msg.buildId}`);
  const batch: string[] = [];
  let sent = 0;
  const flush = () => {
    if (!batch.length) return;
    const lines = batch.splice(0, 1000);
    report({ type: "build.log", buildId: msg.buildId, first: sent, lines });
    sent += lines.length;
  };
  const timer = setInterval(flush, FLUSH_MS);
  try {
    const zip = path.join(dir, "source.zip");
    await agent.control.download(msg.sourcePath, zip);
    const result = await buildFunction({
      lang: msg.lang,
      zip,
      workDir: path.join(dir, "build"),
      agentId: agent.config.nodeId,
      limits: buildLimitsOf(agent.config, agent.sandbox),
      onLog: (line) => {
        batch.push(line.slice(0, 8192));
        if (batch.length >= FLUSH_LINES) flush();
      },
    });
    flush();
    if (!result.ok) {
      report({ type: "build.done", buildId: msg.buildId, ok: false, reason: result.reason });
      return;
    }
    const size = await putFile(agent.control, msg.artifactPath, result.artifactPath);
    await agent.artifacts.adopt(msg.buildId, result.artifactPath);
    report({ type: "build.done", buildId: msg.buildId, ok: true, artifactSize: size });
    log("info", "build finished", { buildId: msg.buildId, lang: msg.lang, ms: result.durationMs, bytes: size });
  } finally {
    clearInterval(timer);
    flush();
    await fs.rm(dir, { recursive: true, force: true });
  }
}
