import type Docker from "dockerode";
import type { EgressAttachment } from "../egress/index.js";

export interface SandboxLimits {
  /** CPUs, fractions allowed. */
  cpus: number;
  memoryMiB: number;
  pids: number;
  tmpfsMiB: number;
  /** Keep Docker's default capabilities and allow privilege gain; still no network nor host files. */
  privileged: boolean;
  /** The OCI runtime: "runsc" (gVisor) where the node has it, else Docker's default (runc). */
  runtime?: string | undefined;
  /**
   * Set: the container joins the node's egress network (agent/egress/), whose policy outside the
   * sandbox decides what it reaches. Absent: no network at all, only loopback.
   */
  egress?: EgressAttachment | undefined;
}

export interface Mount {
  host: string;
  container: string;
  readOnly: boolean;
}

/**
 * No Docker log: the agent reads a container's output through its attach stream, and a log file
 * (json-file, the default driver) would keep every byte a function or build ever printed on the
 * node's disk for as long as the container lives, warm containers included.
 */
export const NO_DOCKER_LOG: Docker.HostConfig["LogConfig"] = { Type: "none", Config: {} };

/** Host threads gVisor's sandbox (its kernel and file gofer) needs beside the function's processes. */
export const RUNSC_PIDS_OVERHEAD = 64;

/**
 * The confinement every function and build container gets: no network (or the egress network, for
 * a function that asked for it on a node that offers it), read-only root with a small
 * /tmp, capped memory (no swap), CPUs and pids, an init that reaps zombies, and only the bind mounts
 * given (never the Docker socket), and no Docker log on the node's disk. Unprivileged containers also lose every capability and may not
 * gain privileges through setuid binaries.
 */
export function sandboxHostConfig(limits: SandboxLimits, mounts: Mount[]): Docker.HostConfig {
  const memory = Math.round(limits.memoryMiB * 1024 * 1024);
  // Under gVisor the host's pids limit holds the whole sandbox, gVisor's own threads included.
  const pids = limits.runtime?.startsWith("runsc") ? limits.pids + RUNSC_PIDS_OVERHEAD : limits.pids;
  const binds = limits.egress ? [...mounts, { host: limits.egress.resolvConf, container: "/etc/resolv.conf", readOnly: true }] : mounts;
  return {
    NetworkMode: limits.egress?.network ?? "none",
    Binds: binds.map((m) => `${m.host}:${m.container}:${m.readOnly ? "ro" : "rw"}`),
    ReadonlyRootfs: true,
    Tmpfs: { "/tmp": `rw,nosuid,nodev,size=${limits.tmpfsMiB}m,mode=1777` },
    Memory: memory,
    MemorySwap: memory,
    NanoCpus: Math.round(limits.cpus * 1e9),
    PidsLimit: pids,
    Init: true,
    IpcMode: "private",
    LogConfig: NO_DOCKER_LOG,
    Ulimits: [{ Name: "nofile", Soft: 1024, Hard: 1024 }],
    ...(limits.runtime ? { Runtime: limits.runtime } : {}),
    // A privileged function with a network still may not forge packets or change its interface.
    ...(limits.privileged ? (limits.egress ? { CapDrop: ["NET_RAW", "NET_ADMIN"] } : {}) : { CapDrop: ["ALL"], SecurityOpt: ["no-new-privileges"] }),
  };
}
