/**
 * /gc benchmark: latency of an accepted public call (until its 201), of a synchronous one
 * (`Prefer: wait`, until the function's own answer) and calls per second, next to a bare route of
 * the same Worker (/healthz) measured in the same run. `--url` drives a Worker already running
 * (bench/target.ts) instead of starting one on local workerd.
 * Run: npx tsx bench/public-door.ts [--calls 500] [--clients 1,16] [--url https://… with GCFAAS_ADMIN_TOKEN]
 */
import { parseArgs } from "node:util";
import { ensureOfflineImages } from "../agent/runtimes/images.js";
import { AgentProcess, api } from "../test/e2e/harness.js";
import { deploy } from "../test/e2e/deploy.js";
import { zipSources } from "../test/support/zip.js";
import { ms, percentile, printTable, underLoad } from "./stats.js";
import { benchWorker } from "./target.js";

const { values } = parseArgs({ options: { calls: { type: "string", default: "500" }, clients: { type: "string", default: "1,16" }, url: { type: "string" } } });
const N = Number(values.calls);

async function main() {
  await ensureOfflineImages(["py"]);
  const worker = await benchWorker(values.url);
  const admin = api(worker.url, worker.adminToken);
  const user = api(worker.url, (await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "bench" } })).token);
  const agent = await AgentProcess.start(worker, await worker.agentToken("gc-bench"), "gc-bench");
  try {
    const { functionId } = await deploy(user, "py", await zipSources({ "handler.py": "def handle(e, c):\n    return 'ok'\n" }), "gc");
    // A daily limit and a time window, so that the counter and the checks are on the measured path.
    const { id: ep } = await user.json("POST", `/v1/endpoint/${functionId}`, 201, { json: { dailyLimit: 1_000_000, timeLimit: { from: "00:00", to: "00:00", timezone: "Europe/Paris" } } });
    const bare = async () => {
      const r = await fetch(`${worker.url}/healthz`);
      await r.text();
    };
    const gc = async () => {
      const r = await fetch(`${worker.url}/gc/${ep}`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"x":1}' });
      if (r.status !== 201) throw new Error(`gc: ${r.status} ${await r.text()}`);
      await r.text();
    };
    // The function's own answer in one request, or a 201 had it not finished in time.
    const gcSync = async () => {
      const r = await fetch(`${worker.url}/gc/${ep}`, { method: "POST", headers: { "content-type": "application/json", prefer: "wait=30" }, body: '{"x":1}' });
      if (r.status !== 200 || r.headers.get("preference-applied") !== "wait") throw new Error(`gc, Prefer: wait: ${r.status} ${await r.text()}`);
      await r.text();
    };
    for (let i = 0; i < 30; i++) await Promise.all([bare(), gc(), gcSync()]);
    const rows: (string | number)[][] = [];
    for (const c of values.clients!.split(",").map(Number))
      for (const [route, fn] of [["bare /healthz (baseline)", bare], ["accepted /gc call (until the 201)", gc], ["synchronous /gc call, Prefer: wait (the function's answer)", gcSync]] as const) {
        const r = await underLoad(N, c, fn);
        rows.push([route, c, ms(percentile(r.lat, 50)), ms(percentile(r.lat, 95)), r.rate.toFixed(0)]);
      }
    printTable(`Public door at ${worker.url} (${N} calls per row)`, ["route", "clients", "p50", "p95", "calls/s"], rows);
  } finally {
    await agent.stop();
    await worker.dispose();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
