/**
 * What the task-history benchmarks share (bench/task-history.ts: D1's rows and archive;
 * bench/shard-archive-reads.ts: a shard's archive): a fresh local Worker's state with its tenants,
 * the reads people rely on, and their latencies on two sizes of history sampled in turns.
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { LocalWorker, api, type Api } from "../../test/e2e/harness.js";
import { percentile, timed } from "../stats.js";

/** The options both benchmarks take: the sizes of history, the samples of each read, the accounts. */
export const sizeOptions = {
  records: { type: "string", default: "5000000" },
  small: { type: "string", default: "10000" },
  samples: { type: "string", default: "200" },
  accounts: { type: "string", default: "10" },
} as const;

export interface Tenant {
  token: string;
  accountId: string;
  functionIds: string[];
}

/** The local D1 database's file in a stopped Worker's state. */
export async function d1File(stateDir: string): Promise<string> {
  return onlyFile(path.join(stateDir, "v3", "d1", "miniflare-D1DatabaseObject"));
}

/** The one `.sqlite` file of a directory of local D1 or Durable Object storage (its metadata aside). */
export async function onlyFile(dir: string): Promise<string> {
  const files = (await fs.readdir(dir)).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
  if (files.length !== 1) throw new Error(`expected one database file in ${dir}, found ${files.join(", ") || "none"}`);
  return path.join(dir, files[0]!);
}

/** A fresh local Worker's state with `accounts` accounts of `functionsEach` functions, stopped: ready to fill. */
export async function freshState(accounts: number, functionsEach: number): Promise<{ stateDir: string; tenants: Tenant[] }> {
  const stateDir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-history-"));
  const worker = await LocalWorker.create({ stateDir });
  try {
    const admin = api(worker.url, worker.adminToken);
    const tenants: Tenant[] = [];
    for (let a = 0; a < accounts; a++) {
      const acct = await admin.json<{ token: string; accountId: string }>("POST", "/v1/admin/accounts", 201, { json: { name: `history${a}` } });
      const user = api(worker.url, acct.token);
      const functionIds: string[] = [];
      for (let f = 0; f < functionsEach; f++)
        functionIds.push((await user.json<{ id: string }>("POST", "/v1/function", 201, { json: { name: `fn${f}`, lang: "PY", type: "DOCKER" } })).id);
      tenants.push({ token: acct.token, accountId: acct.accountId, functionIds });
    }
    // A list asks every dispatcher shard, which so has its storage on disk for a fill to open.
    await ok(api(worker.url, tenants[0]!.token), "GET", "/v1/task/list");
    return { stateDir, tenants };
  } finally {
    await worker.stop();
  }
}

export async function ok(user: Api, method: string, p: string, headers?: Record<string, string>): Promise<void> {
  const res = await user(method, p, headers ? { headers } : undefined);
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${p}: ${res.status} ${text.slice(0, 200)}`);
}

/** A read of the benchmark, by name; `i` picks the sample's task id. */
export type Read = [string, (i: number) => Promise<unknown>];

/** The reads people rely on, against one Worker, as one tenant; `ids` are the task gets' ids. */
export function readsOf(worker: LocalWorker, tenant: Tenant, ids: string[]): Read[] {
  const user = api(worker.url, tenant.token);
  const cookie = { cookie: `gc_console=${tenant.token}` };
  return [
    ["bare /healthz (baseline)", () => fetch(`${worker.url}/healthz`).then((r) => r.text())],
    ["task get", (i) => ok(user, "GET", `/v1/task/${ids[i % ids.length]}`)],
    ["a function's task list (first page)", () => ok(user, "GET", `/v1/task/list?functionId=${tenant.functionIds[0]}`)],
    ["the account's usage", () => ok(user, "GET", "/v1/usage")],
    ["function get (with its task metrics)", () => ok(user, "GET", `/v1/function/${tenant.functionIds[0]}`)],
    ["the account's metrics", () => ok(user, "GET", "/v1/metrics")],
    ["the console's runs page", () => ok(user, "GET", "/console/tasks", cookie)],
  ];
}

/**
 * The reads' latencies on each side, sampled in turns: each call on one side is followed by the
 * same call on the other (which goes first alternates), so the machine's load moves both sides'
 * figures alike and their ratio keeps only what the sizes make. Each read is warmed 10 times a side.
 */
export async function readLatencies(reads: Read[][], samples: number): Promise<Map<string, { p50: number; p95: number }>[]> {
  const out = reads.map(() => new Map<string, { p50: number; p95: number }>());
  for (const [r, [name]] of reads[0]!.entries()) {
    for (const side of reads) for (let i = 0; i < 10; i++) await side[r]![1](i);
    const lat: number[][] = reads.map(() => []);
    for (let i = 0; i < samples; i++) {
      const order = i % 2 === 0 ? reads.map((_, k) => k) : reads.map((_, k) => reads.length - 1 - k);
      for (const k of order) lat[k]!.push((await timed(() => reads[k]![r]![1](i)))[0]);
    }
    lat.forEach((l, k) => out[k]!.set(name, { p50: percentile(l, 50), p95: percentile(l, 95) }));
  }
  return out;
}
