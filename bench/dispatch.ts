/**
 * Dispatch benchmark: a warm Python function behind the whole path (API → D1 → dispatcher DO →
 * WebSocket → agent → container → back), against a bare HTTP exchange with the shim of a twin warm
 * container (same handler, same image, run by an in-process runner: the agent's own containers only
 * talk to the agent), measured in the same run. `--url` drives a Worker already running (a deployed
 * one; bench/target.ts) instead of starting one; the host's CPU is then not measured here.
 * Run: npx tsx bench/dispatch.ts [--tasks 300] [--clients 1,8,32] [--slots 1] [--url https://… with GCFAAS_ADMIN_TOKEN]
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { buildFunction } from "../agent/builder/index.js";
import { Runner } from "../agent/runner/index.js";
import { zipSources } from "../test/support/zip.js";
import { ECHO_HANDLER, startEchoService } from "./echo-service.js";
import { ms, percentile, printTable, timed, treeCpuByProgram, underLoad } from "./stats.js";

const { values } = parseArgs({ options: { tasks: { type: "string", default: "300" }, clients: { type: "string", default: "1,8,32" }, slots: { type: "string", default: "1" }, url: { type: "string" } } });
const N = Number(values.tasks);
const CLIENTS = values.clients!.split(",").map(Number);


/** N bare exchanges with a warm container's shim, run by an in-process runner. */
async function bareBaseline(n: number): Promise<number[]> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-bench-bare-"));
  const runner = await Runner.create({ stateDir: path.join(dir, "state"), agentId: "bench-bare" });
  try {
    const built = await buildFunction({ lang: "py", zip: await zipSources(ECHO_HANDLER), workDir: path.join(dir, "build"), onLog: () => undefined });
    if (!built.ok) throw new Error(`baseline build failed: ${built.reason}`);
    const request = { method: "POST", query: {}, headers: { "content-type": "application/json" }, body: "{}" };
    const caps = { timeout: 30, cpuCount: 0, memSize: 0, privileged: false };
    await runner.invoke({ functionId: "bare", buildId: "bare", lang: "py", artifactPath: built.artifactPath, capabilities: caps, request });
    const shim = runner.containers()[0];
    if (!shim) throw new Error("no warm container for the baseline");
    const bare: number[] = [];
    for (let i = 0; i < n; i++) bare.push((await timed(() => shim.bareExchange({ ...request, body: JSON.stringify({ i }) })))[0]);
    return bare;
  } finally {
    await runner.shutdown();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

async function main() {
  // One slot by default: exactly one warm container, so the baseline and the service hit the same
  // one. More slots (--slots 8) show what the control plane sustains with several containers.
  const { worker, user, functionId, once, sync, followed, stop } = await startEchoService(values.slots!, values.url);
  try {
    for (let i = 0; i < 20; i++) await once(i); // warm the container, the DO and the JIT
    for (let i = 0; i < 20; i++) await sync(i);

    const bare = await bareBaseline(N);

    // The Worker host's CPU per task (workerd, D1, Durable Objects, HTTP): what bounds throughput
    // here, where one workerd thread serves them all.
    // Split: workerd (the Worker, D1, R2, the Durable Objects) and the rest (the local server's Node
    // side: Miniflare and the front door that proxies every request and WebSocket frame).
    const hostCpu = () => {
      if (!worker.child?.pid) return undefined; // a Worker at --url: its CPU is not on this machine
      const by = treeCpuByProgram(worker.child.pid);
      const workerd = by.get("workerd") ?? 0;
      return { total: [...by.values()].reduce((a, b) => a + b, 0), workerd };
    };
    const perTask = (before: { total: number; workerd: number } | undefined, n: number) => {
      const now = hostCpu();
      if (!before || !now) return "-";
      return `${ms((now.total - before.total) / n)} (workerd ${ms((now.workerd - before.workerd) / n)})`;
    };
    const full: number[] = [];
    const cpu0 = hostCpu();
    for (let i = 0; i < N; i++) full.push((await timed(() => once(i)))[0]);
    const seqCpu = perTask(cpu0, N);
    const single: number[] = [];
    const cpu1 = hostCpu();
    for (let i = 0; i < N; i++) single.push((await timed(() => sync(i)))[0]);
    const syncCpu = perTask(cpu1, N);
    // The same calls with a live log follower each (it opens before the task runs, reads to the end).
    const watched: number[] = [];
    const cpu2 = hostCpu();
    for (let i = 0; i < N; i++) watched.push((await timed(() => followed(i)))[0]);
    const watchedCpu = perTask(cpu2, N);

    console.log(`\nWorker host CPU per task, sequential: ${seqCpu} (create → result), ${syncCpu} (synchronous), ${watchedCpu} (create → result, log followed)`);
    printTable("Warm call latency, sequential", ["path", "n", "p50", "p95", "added at p50"], [
      ["bare HTTP to the warm container (baseline)", N, ms(percentile(bare, 50)), ms(percentile(bare, 95)), "-"],
      ["task create → result (API, DO, agent)", N, ms(percentile(full, 50)), ms(percentile(full, 95)), ms(percentile(full, 50) - percentile(bare, 50))],
      ["synchronous call, Prefer: wait (one request)", N, ms(percentile(single, 50)), ms(percentile(single, 95)), ms(percentile(single, 50) - percentile(bare, 50))],
      ["task create → result, its log followed live", N, ms(percentile(watched, 50)), ms(percentile(watched, 95)), ms(percentile(watched, 50) - percentile(bare, 50))],
    ]);

    // What a retry policy and a concurrency cap cost a task that succeeds (the usual case: the
    // policy is tracked, the cap counted), beside the same path without them, in this run; the
    // last row, with both removed again, shows the path without them did not change.
    const policyRows: (string | number)[][] = [];
    const measure = async (label: string) => {
      const lat: number[] = [];
      const before = hostCpu();
      for (let i = 0; i < N; i++) lat.push((await timed(() => once(i)))[0]);
      policyRows.push([label, N, ms(percentile(lat, 50)), ms(percentile(lat, 95)), ms(percentile(lat, 50) - percentile(full, 50)), perTask(before, N)]);
    };
    const setPolicy = async (retry: number, cap: number | null) => {
      await user.json("PUT", `/v1/function/${functionId}/retry`, 204, { json: { maxAttempts: retry, backoffSeconds: 10, deadLetterFunctionId: null } });
      await user.json("PUT", `/v1/function/${functionId}/concurrency`, 204, { json: { max: cap } });
    };
    await setPolicy(3, null);
    await measure("retry policy (3 attempts)");
    await setPolicy(3, 1000);
    await measure("retry policy and concurrency cap 1000");
    await setPolicy(1, null);
    await measure("neither, again");
    printTable("Retries and the concurrency cap, sequential create → result", ["path", "n", "p50", "p95", "vs no policy at p50", "host CPU/task"], policyRows);

    // "Warm" under load too: as many containers as the agent has slots are started before measuring
    // (otherwise the first row pays for up to --slots cold starts).
    await underLoad(Number(values.slots) * 8, Math.max(...CLIENTS), once);
    const rows: (string | number)[][] = [];
    for (const [label, fn] of [["create → result", once], ["Prefer: wait", sync]] as const)
      for (const c of CLIENTS) {
        const before = hostCpu();
        const { lat, rate } = await underLoad(N, c, fn);
        rows.push([label, c, N, rate.toFixed(1), ms(percentile(lat, 50)), ms(percentile(lat, 95)), perTask(before, N)]);
      }
    printTable(`Throughput through one agent (${values.slots} slot(s))`, ["calls", "clients", "tasks", "tasks/s", "p50", "p95", "host CPU/task"], rows);
  } finally {
    await stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
