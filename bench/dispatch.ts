/**
 * Dispatch benchmark: a warm Python function behind the whole path (API → D1 → dispatcher DO →
 * WebSocket → agent → container → back), against the bare HTTP call to the same warm container's
 * shim, measured in the same run. Run: npx tsx bench/dispatch.ts [--tasks 300] [--clients 1,8,32] [--slots 1]
 */
import fs from "node:fs/promises";
import path from "node:path";
import { parseArgs } from "node:util";
import { ensureOfflineImages } from "../agent/runtimes/images.js";
import { sendToShim } from "../agent/runner/shim-client.js";
import { ADMIN_TOKEN, AgentProcess, api, LocalWorker } from "../test/e2e/harness.js";
import { deploy } from "../test/e2e/deploy.js";
import { zipSources } from "../test/support/zip.js";
import { ms, percentile, printTable, timed, treeCpuMs, underLoad } from "./stats.js";

const { values } = parseArgs({ options: { tasks: { type: "string", default: "300" }, clients: { type: "string", default: "1,8,32" }, slots: { type: "string", default: "1" } } });
const N = Number(values.tasks);
const CLIENTS = values.clients!.split(",").map(Number);

const HANDLER = { "handler.py": "def handle(event, context):\n    return {'echo': event.json}\n" };

async function findSocket(dir: string): Promise<string> {
  for (const e of await fs.readdir(dir, { withFileTypes: true, recursive: true })) if (e.isSocket()) return path.join(e.parentPath, e.name);
  throw new Error(`no shim socket under ${dir}`);
}

async function main() {
  await ensureOfflineImages(["py"]);
  const worker = await LocalWorker.create();
  const admin = api(worker.url, ADMIN_TOKEN);
  const user = api(worker.url, (await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "bench" } })).token);
  // One slot by default: exactly one warm container, so the baseline and the service hit the same
  // one. More slots (--slots 8) show what the control plane sustains with several containers.
  const agent = await AgentProcess.start(worker, await worker.agentToken("bench"), "bench", ["--slots", values.slots!]);
  try {
    const { functionId } = await deploy(user, "py", await zipSources(HANDLER), "bench");
    const once = async (i: number) => {
      const { id } = await user.json("POST", `/v1/task/${functionId}`, 201, { json: { i } });
      const res = await user("GET", `/v1/task/${id}/result?wait=30`);
      if (res.status !== 200) throw new Error(`task ${id}: ${res.status} ${await res.text()}`);
      await res.text();
    };
    for (let i = 0; i < 20; i++) await once(i); // warm the container, the DO and the JIT

    const socket = await findSocket(path.join(worker.stateDir, "agent-bench"));
    const bare: number[] = [];
    for (let i = 0; i < N; i++)
      bare.push((await timed(() => sendToShim(socket, { method: "POST", query: {}, headers: { "content-type": "application/json" }, body: JSON.stringify({ i }) }, `bench-${i}`, 1 << 20)))[0]);

    // The Worker host's CPU per task (workerd, D1, Durable Objects, HTTP): what bounds throughput
    // here, where one workerd thread serves them all.
    const hostCpu = () => treeCpuMs(worker.child!.pid!);
    const full: number[] = [];
    const cpu0 = hostCpu();
    for (let i = 0; i < N; i++) full.push((await timed(() => once(i)))[0]);
    const seqCpu = (hostCpu() - cpu0) / N;

    console.log(`\nWorker host CPU per task, sequential: ${ms(seqCpu)}`);
    printTable("Warm call latency, sequential", ["path", "n", "p50", "p95", "added at p50"], [
      ["bare HTTP to the warm container (baseline)", N, ms(percentile(bare, 50)), ms(percentile(bare, 95)), "-"],
      ["task create → result (API, DO, agent)", N, ms(percentile(full, 50)), ms(percentile(full, 95)), ms(percentile(full, 50) - percentile(bare, 50))],
    ]);

    // "Warm" under load too: as many containers as the agent has slots are started before measuring
    // (otherwise the first row pays for up to --slots cold starts).
    await underLoad(Number(values.slots) * 8, Math.max(...CLIENTS), once);
    const rows: (string | number)[][] = [];
    for (const c of CLIENTS) {
      const before = hostCpu();
      const { lat, rate } = await underLoad(N, c, once);
      rows.push([c, N, rate.toFixed(1), ms(percentile(lat, 50)), ms(percentile(lat, 95)), ms((hostCpu() - before) / N)]);
    }
    printTable(`Throughput through one agent (${values.slots} slot(s))`, ["clients", "tasks", "tasks/s", "p50", "p95", "host CPU/task"], rows);
  } finally {
    await agent.stop();
    await worker.dispose();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
