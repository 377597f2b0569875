import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type Docker from "dockerode";
import { dockerClient, forceRemove, LABEL_AGENT, LABEL_MANAGED, LABEL_ROLE } from "../docker/client.js";
import { attachOutput, LineSplitter } from "../docker/output.js";
import { sandboxHostConfig } from "../docker/sandbox.js";
import { FUNCTION_UID, offlineImages, type Lang, type RuntimeImages } from "../runtimes/languages.js";
import { packArtifact } from "./artifact.js";
import { DEFAULT_UNZIP_LIMITS, unzipSafely, ZipRefusedError, type UnzipLimits } from "./unzip.js";
import { chownTree } from "./chown-tree.js";

export interface BuildLimits extends UnzipLimits {
  cpus: number;
  memoryMiB: number;
  timeoutSeconds: number;
  pids: number;
}

export const DEFAULT_BUILD_LIMITS: BuildLimits = {
  ...DEFAULT_UNZIP_LIMITS,
  cpus: 2,
  memoryMiB: 2048,
  timeoutSeconds: 600,
  pids: 1024,
};

export interface BuildRequest {
  lang: Lang;
  /** The uploaded zip, in memory or as a file path. */
  zip: Buffer | string;
  /** A directory owned by this build; created if missing, must be empty. The artifact stays in it. */
  workDir: string;
  onLog: (line: string) => void;
  limits?: Partial<BuildLimits>;
  images?: RuntimeImages;
  docker?: Docker;
  /** Label value that lets a restarted agent remove a build container it left behind. */
  agentId?: string;
}

export type BuildResult =
  | { ok: true; artifactPath: string; artifactBytes: number; durationMs: number }
  | { ok: false; reason: string; durationMs: number };

const BUILD_LOG_PREFIX = "[build] ";

/**
 * Turns an uploaded zip into an artifact: unpack with every safety check, then run the language's
 * /opt/gcfaas/build.sh in a throwaway, network-less, capped container, then tar its /out.
 * Never throws for problems of the user's making; those come back as `{ ok: false, reason }` with the
 * reason also written to the log.
 */
export async function buildFunction(request: BuildRequest): Promise<BuildResult> {
  const started = Date.now();
  const merged = { ...DEFAULT_BUILD_LIMITS, ...request.limits };
  // Docker refuses more CPUs than the host has.
  const limits = { ...merged, cpus: Math.min(merged.cpus, os.cpus().length) };
  const say = (line: string) => request.onLog(BUILD_LOG_PREFIX + line);
  const fail = (reason: string): BuildResult => {
    say(`failed: ${reason}`);
    return { ok: false, reason, durationMs: Date.now() - started };
  };
  const workDir = path.resolve(request.workDir);
  const src = path.join(workDir, "src");
  const out = path.join(workDir, "out");
  const scratch = path.join(workDir, "scratch");
  try {
    await fs.mkdir(workDir, { recursive: true });
    if ((await fs.readdir(workDir)).length > 0) throw new Error(`build directory ${workDir} is not empty`);
    await Promise.all([src, out, scratch].map((d) => fs.mkdir(d, { mode: 0o755 })));

    say("unpacking zip");
    try {
      const { entries, bytes } = await unzipSafely(request.zip, src, limits);
      say(`unpacked ${entries} entries, ${bytes} bytes`);
    } catch (err) {
      if (err instanceof ZipRefusedError) return fail(`zip refused: ${err.message}`);
      throw err;
    }
    // The build step runs unprivileged; it owns exactly these three folders and nothing else.
    await chownTree(workDir, FUNCTION_UID);

    const image = (request.images ?? offlineImages())[request.lang].build;
    say(`building in ${image} (cpus ${limits.cpus}, memory ${limits.memoryMiB} MiB, timeout ${limits.timeoutSeconds} s, no network)`);
    const outcome = await runBuildContainer(request.docker ?? dockerClient(), image, { src, out, scratch }, limits, request);
    if (outcome !== "ok") return fail(outcome);

    const artifactPath = path.join(workDir, "artifact.tar");
    const artifactBytes = await packArtifact(out, artifactPath);
    say(`artifact ready (${artifactBytes} bytes)`);
    return { ok: true, artifactPath, artifactBytes, durationMs: Date.now() - started };
  } catch (err) {
    return fail(`internal error: ${err instanceof Error ? err.message : String(err)}`);
  } finally {
    await Promise.all([src, out, scratch].map((d) => fs.rm(d, { recursive: true, force: true }).catch(() => undefined)));
  }
}

async function runBuildContainer(
  docker: Docker,
  image: string,
  dirs: { src: string; out: string; scratch: string },
  limits: BuildLimits,
  request: BuildRequest,
): Promise<"ok" | string> {
  const container = await docker.createContainer({
    name: `gcfaas-build-${randomBytes(6).toString("hex")}`,
    Image: image,
    Cmd: ["sh", "/opt/gcfaas/build.sh"],
    User: `${FUNCTION_UID}:${FUNCTION_UID}`,
    WorkingDir: "/src",
    Env: ["HOME=/scratch", "GCFAAS_SCRATCH=/scratch"],
    Labels: { [LABEL_MANAGED]: "true", [LABEL_ROLE]: "build", [LABEL_AGENT]: request.agentId ?? "default" },
    HostConfig: sandboxHostConfig(
      { cpus: limits.cpus, memoryMiB: limits.memoryMiB, pids: limits.pids, tmpfsMiB: 256, privileged: false },
      [
        { host: dirs.src, container: "/src", readOnly: false },
        { host: dirs.out, container: "/out", readOnly: false },
        { host: dirs.scratch, container: "/scratch", readOnly: false },
      ],
    ),
  });
  try {
    const splitters = {
      stdout: new LineSplitter(request.onLog),
      stderr: new LineSplitter(request.onLog),
    };
    let ended!: () => void;
    const outputEnded = new Promise<void>((resolve) => (ended = resolve));
    await attachOutput(docker, container, (stream, chunk) => splitters[stream].push(chunk), () => ended());
    const exited = container.wait({ condition: "next-exit" }) as Promise<{ StatusCode: number }>;
    await container.start();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), limits.timeoutSeconds * 1000);
    });
    const result = await Promise.race([exited, timedOut]);
    clearTimeout(timer);
    if (result === "timeout") {
      await container.kill().catch(() => undefined);
      return `build timed out after ${limits.timeoutSeconds} s`;
    }
    // Output may trail the exit by a moment; the attach stream closing marks its true end.
    await Promise.race([outputEnded, new Promise((r) => setTimeout(r, 2000))]);
    splitters.stdout.end();
    splitters.stderr.end();
    const state = (await container.inspect()).State;
    if (state.OOMKilled) return `build ran out of memory (limit ${limits.memoryMiB} MiB)`;
    if (result.StatusCode !== 0) return `build step exited with code ${result.StatusCode}`;
    return "ok";
  } finally {
    await forceRemove(docker, container.id);
  }
}
