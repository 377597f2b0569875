/**
 * Cost per task: what one task (creation, dispatch, outcome, result read) costs the Worker's host,
 * counted by the Worker's cost counters (worker/diagnostics/cost-counters.ts, on through
 * GCFAAS_COST_COUNTERS=1): HTTP requests, D1 round trips and statements, Durable Object calls,
 * dispatcher storage statements, R2 operations, WebSocket frames and bytes. Then the host's CPU per
 * kind of operation, from probes that do n of one kind, each beside the probe that does none.
 * --profile then samples every isolate of the local host while tasks run (bench/isolate-profile.ts):
 * how the host's JavaScript time divides between the Worker and the local-only plumbing, and where
 * in the Worker's own files it goes.
 * --url counts on a Worker already running (deployed with the variable COST_COUNTERS = "1";
 * bench/target.ts); the CPU probes and the profile need the local host and are left out then.
 * Run: npx tsx bench/cost.ts [--tasks 500] [--clients 16] [--slots 16] [--probes 2000] [--profile] [--url …]
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { freePort } from "../test/e2e/harness.js";
import { startEchoService } from "./echo-service.js";
import { profileIsolates } from "./isolate-profile.js";
import { ms, printTable, treeCpuByProgram, underLoad } from "./stats.js";

const { values } = parseArgs({ options: { tasks: { type: "string", default: "500" }, clients: { type: "string", default: "16" }, slots: { type: "string", default: "16" }, probes: { type: "string", default: "2000" }, profile: { type: "boolean", default: false }, url: { type: "string" } } });
const N = Number(values.tasks);
const PROBES = Number(values.probes);
process.env.GCFAAS_COST_COUNTERS = "1";
if (values.profile && values.url) throw new Error("--profile samples the local host; it cannot profile a Worker at --url");
if (values.profile) process.env.GCFAAS_INSPECTOR_PORT = String(await freePort());

type Counts = Record<string, number>;

async function main() {
  const { worker, admin, user, once, sync, stop } = await startEchoService(values.slots!, values.url);
  const counts = async (): Promise<Counts> => {
    const res = await admin("GET", "/__cost/counts");
    if (res.status === 404) throw new Error(`${worker.url} does not count: deploy it with the variable COST_COUNTERS = "1" (never in production)`);
    return (await res.json()) as Counts;
  };
  const reset = async () => void (await admin("POST", "/__cost/reset"));
  try {
    await underLoad(Number(values.slots) * 8, Number(values.clients), once); // warm containers, objects, JIT

    // Counted over whole runs, after the last outcome is committed (a commit can trail the last result).
    const run = async (fn: () => Promise<unknown>) => {
      await reset();
      await fn();
      await new Promise((r) => setTimeout(r, 1500));
      return counts();
    };
    const columns = {
      "create → result, 1 client": await run(() => underLoad(N, 1, once)),
      "Prefer: wait, 1 client": await run(() => underLoad(N, 1, sync)),
      [`create → result, ${values.clients} clients`]: await run(() => underLoad(N, Number(values.clients), once)),
      [`Prefer: wait, ${values.clients} clients`]: await run(() => underLoad(N, Number(values.clients), sync)),
    };
    const names = [...new Set(Object.values(columns).flatMap((c) => Object.keys(c)))].sort();
    printTable(`Per task (${N} tasks a column; counts over the whole run ÷ tasks)`, ["what", ...Object.keys(columns)], names.map((name) => [name, ...Object.values(columns).map((c) => ((c[name] ?? 0) / N).toFixed(3))]));

    const pid = worker.child?.pid;
    if (!pid) return; // a Worker at --url: its CPU is the dashboard's, not this machine's
    // CPU per operation: n of one kind in one request (or n bare requests), minus the probe doing none.
    const cpu = () => treeCpuByProgram(pid);
    const measure = async (fn: () => Promise<unknown>) => {
      const before = cpu();
      await fn();
      const after = cpu();
      return { workerd: (after.get("workerd") ?? 0) - (before.get("workerd") ?? 0), node: [...after].filter(([k]) => k !== "workerd").reduce((a, [k, v]) => a + v - (before.get(k) ?? 0), 0) };
    };
    const probe = (op: string, n: number) => measure(() => admin("POST", `/__cost/probe?op=${op}&n=${n}`));
    const none = await probe("none", 1);
    const per = (r: { workerd: number; node: number }, n: number) => [ms((r.workerd - none.workerd) / n), ms((r.node - none.node) / n)];
    const http = await measure(() => underLoad(PROBES, 1, async () => (await fetch(`${worker.url}/healthz`)).text()));
    const bypass = await measure(() => underLoad(PROBES, 1, async () => (await admin("POST", "/__cost/probe?op=none&n=0")).text()));
    const authed = await measure(() => underLoad(PROBES, 1, async () => user("GET", "/v1/task/list?limit=1").then((r) => r.text())));
    printTable(`Host CPU per operation (${PROBES} each)`, ["operation", "workerd", "node (local front door, Miniflare)"], [
      ["HTTP request to /healthz (through the front door)", ms(http.workerd / PROBES), ms(http.node / PROBES)],
      ["HTTP request answered before the app (/__cost/probe?n=0)", ms(bypass.workerd / PROBES), ms(bypass.node / PROBES)],
      ["authenticated GET /v1/task/list?limit=1 (one D1 read)", ms(authed.workerd / PROBES), ms(authed.node / PROBES)],
      ["D1 statement (select ?, one round trip)", ...per(await probe("d1", PROBES), PROBES)],
      ["dispatcher RPC call that does nothing", ...per(await probe("rpc", PROBES), PROBES)],
      ["dispatcher RPC pair pausing and resuming (2 calls, 2 storage statements, 1 pump)", ...per(await probe("storage", PROBES / 2), PROBES / 2)],
    ]);

    if (values.profile) {
      // Last: the profiler slows the host several times over, so it must not touch the figures above.
      const isolates = await profileIsolates(Number(process.env.GCFAAS_INSPECTOR_PORT), path.join(worker.stateDir, "bundle"), /^(core:user:|core:entry|d1:db:)/, () => underLoad(N, Number(values.clients), once));
      const all = isolates.reduce((a, i) => a + i.busy, 0);
      const pct = (n: number, of: number) => `${((100 * n) / of).toFixed(1)} %`;
      printTable(`Busy samples by isolate, create → result, ${values.clients} clients (${N} tasks)`, ["isolate", "busy samples", "share"], isolates.map((i) => [i.isolate, i.busy, pct(i.busy, all)]));
      const own = isolates.find((i) => i.isolate.startsWith("core:user:"));
      if (own) {
        // The counters are on for the counts above; their frames are this run's overhead, not the Worker's.
        const places = [...own.bySelf].filter(([k]) => k !== "worker/diagnostics/cost-counters.ts").sort((a, b) => b[1] - a[1]);
        const busy = places.reduce((a, [, v]) => a + v, 0);
        printTable("The Worker's isolate: busy samples by innermost frame's file (native frames by name; the cost counters' own left out)", ["where", "samples", "share"], places.slice(0, 30).map(([k, v]) => [k, v, pct(v, busy)]));
      }
    }
  } finally {
    await stop();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});

