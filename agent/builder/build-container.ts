import { randomBytes } from "node:crypto";
import type Docker from "dockerode";
import { forceRemove, LABEL_AGENT, LABEL_MANAGED, LABEL_ROLE } from "../docker/client.js";
import { attachOutput, LineSplitter } from "../docker/output.js";
import { sandboxHostConfig } from "../docker/sandbox.js";
import { FUNCTION_UID } from "../runtimes/languages.js";

/** The folders of a build's space, on the host, bound at the same names inside the container. */
export interface BuildDirs {
  src: string;
  out: string;
  scratch: string;
  tmp: string;
}

export interface ContainerLimits {
  /** gVisor's runsc where the node has it: dependency installs run untrusted scripts. */
  runtime?: string | undefined;
  cpus: number;
  memoryMiB: number;
  pids: number;
  timeoutSeconds: number;
}

export type ContainerOutcome = "ok" | { reason: string; cause: "timeout" | "memory" | "exit" };

/**
 * The build step's confinement: the function sandbox (no network, read-only root, no capabilities,
 * memory without swap, CPUs, pids) whose only writable places are the four folders of the build's
 * size-limited space. /tmp is one of them rather than a tmpfs, so a build's temporary files count
 * against the same cap as the rest and cost no memory.
 */
export function buildHostConfig(limits: ContainerLimits, dirs: BuildDirs): Docker.HostConfig {
  const binds = (["src", "out", "scratch", "tmp"] as const).map((name) => ({ host: dirs[name], container: `/${name}`, readOnly: false }));
  const config = sandboxHostConfig({ cpus: limits.cpus, memoryMiB: limits.memoryMiB, pids: limits.pids, tmpfsMiB: 1, privileged: false, runtime: limits.runtime }, binds);
  // /dev/shm keeps Docker's 64 MiB tmpfs, charged to the container's memory limit.
  return { ...config, Tmpfs: {}, ShmSize: 64 * 1024 * 1024 };
}

/** Runs /opt/gcfaas/build.sh of `image` to its end, a timeout or an out-of-memory kill; never leaves the container. */
export async function runBuildContainer(
  docker: Docker,
  image: string,
  dirs: BuildDirs,
  limits: ContainerLimits,
  onLog: (line: string) => void,
  agentId: string,
): Promise<ContainerOutcome> {
  const container = await docker.createContainer({
    name: `gcfaas-build-${randomBytes(6).toString("hex")}`,
    Image: image,
    Cmd: ["sh", "/opt/gcfaas/build.sh"],
    User: `${FUNCTION_UID}:${FUNCTION_UID}`,
    WorkingDir: "/src",
    Env: ["HOME=/scratch", "GCFAAS_SCRATCH=/scratch", "TMPDIR=/tmp"],
    Labels: { [LABEL_MANAGED]: "true", [LABEL_ROLE]: "build", [LABEL_AGENT]: agentId },
    HostConfig: buildHostConfig(limits, dirs),
  });
  try {
    const splitters = { stdout: new LineSplitter(onLog), stderr: new LineSplitter(onLog) };
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
      return { cause: "timeout", reason: `build timed out after ${limits.timeoutSeconds} s` };
    }
    // Output may trail the exit by a moment; the attach stream closing marks its true end.
    await Promise.race([outputEnded, new Promise((r) => setTimeout(r, 2000))]);
    splitters.stdout.end();
    splitters.stderr.end();
    const state = (await container.inspect()).State;
    if (state.OOMKilled) return { cause: "memory", reason: `build ran out of memory (limit ${limits.memoryMiB} MiB)` };
    if (result.StatusCode !== 0) return { cause: "exit", reason: `build step exited with code ${result.StatusCode}` };
    return "ok";
  } finally {
    await forceRemove(docker, container.id);
  }
}
