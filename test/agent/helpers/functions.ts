import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import Docker from "dockerode";
import { buildFunction, type BuildResult } from "../../../agent/builder/index.js";
import { LABEL_AGENT, LABEL_ROLE } from "../../../agent/docker/client.js";
import { RUNTIME_DIR, type Lang } from "../../../agent/runtimes/languages.js";
import type { FunctionRequest, InvokeRequest } from "../../../agent/runner/index.js";
import { zipFolder, zipItems, type ZipItem } from "../../support/zip.js";

export const EXAMPLES_DIR = path.resolve(import.meta.dirname, "../../../examples");

export interface Built {
  result: BuildResult;
  log: string[];
  buildId: string;
  /** The build's folder on the host: after the build it holds the artifact and nothing else. */
  workDir: string;
}

let counter = 0;

/**
 * The agent id this test process builds under: its own, so a container left by an earlier,
 * interrupted run on the same Docker engine is not counted as this run's.
 */
export const BUILD_AGENT_ID = `test-${randomBytes(4).toString("hex")}`;

/** Build containers of this test process still on the engine, running or not. */
export async function buildContainersLeft(): Promise<number> {
  const list = await new Docker().listContainers({ all: true, filters: { label: [`${LABEL_AGENT}=${BUILD_AGENT_ID}`, `${LABEL_ROLE}=build`] } });
  return list.length;
}
const tempDirs: string[] = [];

export async function tempDir(prefix: string): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), `gcfaas-${prefix}-`));
  tempDirs.push(dir);
  return dir;
}

/** Deletes every folder tempDir made in this test file (call after the runner is shut down). */
export async function removeTempDirs(): Promise<void> {
  await Promise.all(tempDirs.splice(0).map((d) => fs.rm(d, { recursive: true, force: true })));
}

export async function buildZip(lang: Lang, zip: Buffer, limits?: Parameters<typeof buildFunction>[0]["limits"]): Promise<Built> {
  const log: string[] = [];
  const workDir = path.join(await tempDir("build"), "work");
  const result = await buildFunction({ lang, zip, workDir, onLog: (line) => log.push(line), limits, agentId: BUILD_AGENT_ID });
  counter += 1;
  return { result, log, buildId: `b${Date.now().toString(36)}${counter}`, workDir };
}

export async function buildExample(lang: Lang, example: string): Promise<Built> {
  return buildZip(lang, await zipFolder(path.join(EXAMPLES_DIR, RUNTIME_DIR[lang], example)));
}

export async function buildFiles(lang: Lang, files: ZipItem[], limits?: Parameters<typeof buildFunction>[0]["limits"]): Promise<Built> {
  return buildZip(lang, await zipItems(files), limits);
}

export function artifactOf(built: Built): string {
  if (!built.result.ok) throw new Error(`build failed: ${built.result.reason}\n${built.log.join("\n")}`);
  return built.result.artifactPath;
}

export function call(
  built: Built,
  lang: Lang,
  request: Partial<FunctionRequest>,
  capabilities: Partial<InvokeRequest["capabilities"]> = {},
  functionId = `fn-${built.buildId}`,
): InvokeRequest {
  return {
    functionId,
    buildId: built.buildId,
    lang,
    artifactPath: artifactOf(built),
    capabilities: { timeout: 30, cpuCount: 0, memSize: 0, privileged: false, ...capabilities },
    request: { method: "GET", query: {}, headers: {}, body: "", ...request },
  };
}
