import type { EgressSandbox } from "../egress/index.js";
import type Docker from "dockerode";
import type { Lang, RuntimeImages } from "../runtimes/languages.js";
import type { LogCut } from "../../shared/protocol/messages.js";
import type { LineFeed } from "./invocation-log.js";

/** Takes a call's output while it runs (agent/work/live-log.ts): attached once the call has its container. */
export interface LiveOutput {
  attach(feed: LineFeed): void;
  /** The call is over (before its result is returned): pending lines go out now. */
  detach(): void;
}

export interface Capabilities {
  /** Seconds; covers the whole invocation, cold start included. */
  timeout: number;
  /** CPUs, fractions allowed; 0 = the node's default. */
  cpuCount: number;
  /** MiB; 0 = the node's default. */
  memSize: number;
  privileged: boolean;
  /** The function reaches public addresses through the node's egress network; absent: no network. */
  egress?: boolean;
}

export interface FunctionRequest {
  method: string;
  /** Path handed to the function; "/" when absent. */
  path?: string;
  query: Record<string, string | string[]>;
  headers: Record<string, string>;
  body: string | Buffer;
}

export interface InvokeRequest {
  functionId: string;
  buildId: string;
  lang: Lang;
  /** Tar produced by buildFunction; unpacked once per node and build, mounted read-only. */
  artifactPath: string;
  capabilities: Capabilities;
  request: FunctionRequest;
  /**
   * The function's environment variables and secrets for this call. They reach the shim with the
   * call (never the container's environment, never the disk), and a container only ever serves one
   * configuration: a call with another one gets another container.
   */
  env?: Record<string, string>;
  /** Aborting stops the call at once: its container is killed and the call answers 410. */
  signal?: AbortSignal;
  /** Where the call's output goes while it runs, for a live follower. */
  live?: LiveOutput;
}

export interface InvokeResult {
  /** The function's status; 504 on timeout, 500 on crash or out of memory. */
  status: number;
  /** Lowercase names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  body: Buffer;
  /** The function's stdout and stderr lines for this call, plus `[runtime] ...` lines from the runner. */
  log: string[];
  /** Output lines (and their bytes) past the log's bounds, not kept; the log's note says the same. */
  logCut: LogCut;
  durationMs: number;
  container: "cold" | "warm";
  /** A cold call served by a container taken from the runtime pool. */
  pooled: boolean;
  containerId: string;
  /** The OCI runtime the call ran under: "runsc" (gVisor) or "runc". */
  runtime: string;
}

export interface RunnerOptions {
  /** Host directory for unpacked artifacts and the shims' channel sockets (created if missing). */
  stateDir: string;
  /** Labels this agent's containers so that a restart removes only its own leftovers. */
  agentId?: string;
  images?: RuntimeImages;
  docker?: Docker;
  /** An idle warm container is removed after this long. Default 5 minutes. */
  idleTimeoutMs?: number;
  /** Containers (busy and idle) this node runs at most. Default 16. */
  maxContainers?: number;
  /** Used when a function asks for cpuCount 0. Default 1. */
  defaultCpus?: number;
  /** Used when a function asks for memSize 0. Default 256. */
  defaultMemoryMiB?: number;
  /** Processes and threads per container. Default 128. */
  pidsLimit?: number;
  /** Size of the writable /tmp. Default 64 MiB. */
  tmpfsMiB?: number;
  /** Whether this node's operator allows privileged functions. Default false. */
  allowPrivileged?: boolean;
  /** Responses larger than this become a 500. Default 10 MiB. */
  maxResponseBytes?: number;
  /** Log lines kept per invocation, the cut note included. Default 10,000. */
  maxLogLines?: number;
  /** Output bytes (UTF-8) a container's log holds at once. Default MAX_CALL_LOG_BYTES (2 MiB). */
  maxLogBytes?: number;
  /**
   * The OCI runtime of unprivileged functions: "runsc" runs them under gVisor. Privileged functions
   * always run under runc (gVisor cannot give them what they ask for). Default "" (Docker's default).
   */
  runtime?: string;
  /**
   * The node's egress network (agent/egress/, `--egress`). Absent: a call whose capabilities ask
   * for egress is refused, and every container runs without a network.
   */
  egress?: EgressSandbox | null;
  /** Pre-started runtime containers (see agent/pool/). Absent or size 0: no pool, cold starts as before. */
  pool?: PoolSettings;
}

export interface ContainerInfo {
  id: string;
  functionId: string;
  buildId: string;
  busy: boolean;
  /** Output bytes its log holds now, and the most it ever held. */
  logBytes: { retained: number; peak: number };
  /** One request straight to the idle container's shim, bypassing the runner: a benchmark baseline. */
  bareExchange: (request: FunctionRequest) => Promise<ShimResponse>;
}

/** How the runner keeps started containers ready (agent/pool/runtime-pool.ts). */
export interface PoolSettings {
  /** Started containers kept per language served, holding no function. 0 turns the pool off. */
  size: number;
  /** Containers one key may grow to under recent demand. */
  max: number;
  /** Demand is counted over this window; containers above what it asks for go after idling as long. */
  idleMs: number;
  languages: readonly Lang[];
}

/** A function's answer as its shim gave it (agent/runner/shim-client.ts). */
export interface ShimResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}
