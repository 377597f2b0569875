import type { ChildProcess } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { LocalWorker } from "../test/e2e/harness.js";
import type { WorkerOptions } from "../scripts/lib/local-service.js";
import { mintAgentToken } from "../scripts/lib/local-service.js";

/**
 * The Worker a benchmark drives: by default one it starts on local workerd; with `--url`, one
 * already running — a deployed Worker (`wrangler deploy`), or `npm start`'s — whose admin token is
 * in GCFAAS_ADMIN_TOKEN. The host's CPU is measured only for a local Worker (`child`); a deployed
 * one's is the dashboard's CPU time per invocation. Agents the benchmark starts run on this machine
 * either way and keep their state in `stateDir`.
 */
export interface BenchWorker {
  url: string;
  adminToken: string;
  stateDir: string;
  /** The local Worker's process (its tree holds workerd); absent for a Worker at --url. */
  child?: ChildProcess;
  agentToken(nodeId: string): Promise<string>;
  dispose(): Promise<void>;
}

/** `local`: how to start the local Worker (a D1 delay, the D1 failure control); unused with `url`. */
export async function benchWorker(url: string | undefined, local: WorkerOptions = {}): Promise<BenchWorker> {
  if (!url) return LocalWorker.create(local);
  const adminToken = process.env.GCFAAS_ADMIN_TOKEN;
  if (!adminToken) throw new Error("--url needs the Worker's admin token in GCFAAS_ADMIN_TOKEN");
  const base = url.replace(/\/+$/, "");
  const health = await fetch(`${base}/healthz`).catch((e: unknown) => {
    throw new Error(`no Worker answers at ${base}: ${String(e)}`);
  });
  if (!health.ok) throw new Error(`${base}/healthz answered ${health.status}`);
  await health.body?.cancel();
  const stateDir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-bench-"));
  return {
    url: base,
    adminToken,
    stateDir,
    agentToken: (nodeId) => mintAgentToken(base, adminToken, nodeId),
    dispose: () => fs.rm(stateDir, { recursive: true, force: true }),
  };
}
