import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { expect } from "vitest";
import fs from "node:fs/promises";
import { ADMIN_TOKEN, ROOT, type AgentProcess, type LocalWorker } from "../e2e/harness.js";

export const BIN = path.join(ROOT, "cli/bin.js");

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout parsed as JSON (throws with the run's output when it is not JSON). */
  json<T = any>(): T;
}

export interface CliOptions {
  cwd?: string;
  env?: Record<string, string | undefined>;
  input?: string;
  timeoutMs?: number;
}

/**
 * Runs `gcfaas <args>` as a real child process (the same launcher `npx gcfaas` runs), with an
 * environment built from `env` only plus PATH and HOME: no GCFAAS_* leaks in from the test runner.
 */
export function runCli(args: string[], o: CliOptions = {}): Promise<CliRun> {
  const env: Record<string, string> = { PATH: pathWithoutGcfaas(), HOME: process.env.HOME ?? "/tmp" };
  for (const [k, v] of Object.entries(o.env ?? {})) if (v !== undefined) env[k] = v;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: o.cwd ?? ROOT, env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`gcfaas ${args.join(" ")} did not finish in time:\n${stdout}\n${stderr}`));
    }, o.timeoutMs ?? 120_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({
        code,
        stdout,
        stderr,
        json() {
          try {
            return JSON.parse(stdout);
          } catch {
            throw new Error(`gcfaas ${args.join(" ")} printed no JSON (exit ${code}):\nstdout: ${stdout}\nstderr: ${stderr}`);
          }
        },
      });
    });
    child.stdin.end(o.input ?? "");
  });
}

/**
 * The runner's PATH without folders holding a `gcfaas` (one installed on this machine): the tool's
 * hints say `npx gcfaas` when it is not on the PATH, and the tests expect the same words everywhere.
 */
export function pathWithoutGcfaas(): string {
  return (process.env.PATH ?? "")
    .split(path.delimiter)
    .filter((d) => d && !existsSync(path.join(d, "gcfaas")))
    .join(path.delimiter);
}

/** A readable summary for assertion messages. */
export function show(r: CliRun): string {
  return `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
}

/**
 * `gcfaas` as an account (its token in the environment, no login file), run from `cwd()`: `gc` runs a
 * command, `ok` runs one that must succeed. The getters are read at each call, after `beforeAll`.
 */
export function asUser(url: () => string, token: () => string, cwd: () => string) {
  const gc = (args: string[], o: CliOptions = {}) =>
    runCli(args, { cwd: cwd(), ...o, env: { GCFAAS_URL: url(), GCFAAS_TOKEN: token(), GCFAAS_CONFIG: "/nonexistent/gcfaas.json", ...o.env } });
  const ok = async (args: string[], o: CliOptions = {}) => {
    const r = await gc(args, o);
    expect(r.code, `gcfaas ${args.join(" ")}\n${show(r)}`).toBe(0);
    return r;
  };
  return { gc, ok };
}

/**
 * `gcfaas` as the operator of the Worker at `url()` (its ADMIN_TOKEN, no login file): `gc` runs a
 * command, `ok` runs one that must succeed.
 */
export function asOperator(url: () => string) {
  const gc = (args: string[]) => runCli(args, { env: { GCFAAS_URL: url(), GCFAAS_TOKEN: ADMIN_TOKEN, GCFAAS_CONFIG: "/nonexistent/gcfaas.json" } });
  const ok = async (args: string[]) => {
    const r = await gc(args);
    expect(r.code, `gcfaas ${args.join(" ")}\n${show(r)}`).toBe(0);
    return r;
  };
  return { gc, ok };
}

/** The end of a suite with one agent, one Worker and a temporary folder (each may be missing after a failed start). */
export async function stopSuite(agent: AgentProcess | undefined, worker: LocalWorker | undefined, tmp: string | undefined): Promise<void> {
  await agent?.stop();
  await worker?.dispose();
  if (tmp) await fs.rm(tmp, { recursive: true, force: true });
}
