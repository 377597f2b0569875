import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type Docker from "dockerode";
import { dockerClient } from "../docker/client.js";
import { FUNCTION_UID, offlineImages, type Lang, type RuntimeImages } from "../runtimes/languages.js";
import { ArtifactTooLargeError, packArtifact } from "./artifact.js";
import { runBuildContainer, type BuildDirs } from "./build-container.js";
import { BuildSpace } from "./build-space.js";
import { DEFAULT_UNZIP_LIMITS, unzipSafely, ZipRefusedError, type UnzipLimits } from "./unzip.js";
import { chownTree } from "./chown-tree.js";
import { log } from "../log.js";

export interface BuildLimits extends UnzipLimits {
  /** The OCI runtime of the build container ("runsc" for gVisor); Docker's default when absent. */
  runtime?: string | undefined;
  cpus: number;
  memoryMiB: number;
  timeoutSeconds: number;
  pids: number;
  /** The build's writable space: source, output, caches and /tmp together. */
  diskMiB: number;
  /** The largest artifact (the tar of /out) a build may produce. */
  maxArtifactMiB: number;
}

/**
 * Every example builds in under 128 MiB of space; 4 GiB leaves room for the largest common case, a
 * Rust release build with many vendored crates. The space is a sparse file: unused room costs nothing.
 */
export const DEFAULT_BUILD_LIMITS: BuildLimits = {
  ...DEFAULT_UNZIP_LIMITS,
  cpus: 2,
  memoryMiB: 2048,
  timeoutSeconds: 600,
  pids: 1024,
  diskMiB: 4096,
  maxArtifactMiB: 256,
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
const MiB = 1024 * 1024;
/** What a build tool prints when a write meets the end of the space (shell, Node, Rust, Go, Python). */
const NO_SPACE = /No space left on device|ENOSPC|Disk quota exceeded/;

/**
 * Turns an uploaded zip into an artifact: unpack with every safety check into a size-limited build
 * space, run the language's /opt/gcfaas/build.sh in a throwaway, network-less, capped container,
 * then tar its /out under the artifact cap. The space, and everything the build wrote, is gone
 * when this returns; only the artifact stays in `workDir`.
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
  const outOfSpace = `build ran out of space: source, output, caches and /tmp may hold at most ${limits.diskMiB} MiB together`;
  const workDir = path.resolve(request.workDir);
  let space: BuildSpace | undefined;
  try {
    await fs.mkdir(workDir, { recursive: true });
    if ((await fs.readdir(workDir)).length > 0) throw new Error(`build directory ${workDir} is not empty`);
    space = await BuildSpace.create(workDir, limits.diskMiB, FUNCTION_UID);
    const dirs: BuildDirs = {
      src: path.join(space.root, "src"),
      out: path.join(space.root, "out"),
      scratch: path.join(space.root, "scratch"),
      tmp: path.join(space.root, "tmp"),
    };
    await Promise.all(Object.values(dirs).map((d) => fs.mkdir(d, { mode: 0o755 })));

    say("unpacking zip");
    try {
      // The zip cannot be bigger than the space it is unpacked into.
      const unzipLimits = { ...limits, maxUncompressedBytes: Math.min(limits.maxUncompressedBytes, limits.diskMiB * MiB) };
      const { entries, bytes } = await unzipSafely(request.zip, dirs.src, unzipLimits);
      say(`unpacked ${entries} entries, ${bytes} bytes`);
    } catch (err) {
      if (err instanceof ZipRefusedError) return fail((await space.isFull()) ? outOfSpace : `zip refused: ${err.message}`);
      throw err;
    }
    // The build step runs unprivileged; it owns its space and nothing else.
    await chownTree(space.root, FUNCTION_UID);

    const image = (request.images ?? offlineImages())[request.lang].build;
    say(`building in ${image} (cpus ${limits.cpus}, memory ${limits.memoryMiB} MiB, disk ${limits.diskMiB} MiB, timeout ${limits.timeoutSeconds} s, no network)`);
    let sawNoSpace = false;
    const onLog = (line: string) => {
      if (NO_SPACE.test(line)) sawNoSpace = true;
      request.onLog(line);
    };
    const outcome = await runBuildContainer(request.docker ?? dockerClient(), image, dirs, limits, onLog, request.agentId ?? "default");
    if (outcome !== "ok") {
      // A build that died writing into a full space fails for that, whatever its tool made of the ENOSPC.
      const full = outcome.cause === "exit" && (sawNoSpace || (await space.isFull()));
      return fail(full ? outOfSpace : outcome.reason);
    }

    const artifactPath = path.join(workDir, "artifact.tar");
    let artifactBytes: number;
    try {
      artifactBytes = await packArtifact(dirs.out, artifactPath, limits.maxArtifactMiB * MiB);
    } catch (err) {
      if (err instanceof ArtifactTooLargeError) return fail(`${err.message}: make /out smaller (the artifact cap of this node)`);
      throw err;
    }
    say(`artifact ready (${artifactBytes} bytes)`);
    return { ok: true, artifactPath, artifactBytes, durationMs: Date.now() - started };
  } catch (err) {
    // The cause names host paths and errno codes: it is the operator's to read, not the tenant's.
    log("error", "build failed on the node", { workDir, error: errorText(err) });
    return fail("internal error on the build node; the operator's log has the cause");
  } finally {
    await space?.dispose().catch((err: unknown) => log("warn", "build space not removed", { workDir, error: errorText(err) }));
  }
}

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));
