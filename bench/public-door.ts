/**
 * /gc benchmark: latency of an accepted public call (until its 201) and calls per second, next
 * to a bare route of the same Worker (/healthz) measured in the same run on local workerd.
 * Run: npx tsx bench/public-door.ts [--calls 500] [--clients 1,16]
 */
import { parseArgs } from "node:util";
import { ensureOfflineImages } from "../agent/runtimes/images.js";
import { ADMIN_TOKEN, AgentProcess, api, LocalWorker } from "../test/e2e/harness.js";
import { deploy } from "../test/e2e/deploy.js";
import { zipSources } from "../test/support/zip.js";
import { ms, percentile, printTable, underLoad } from "./stats.js";

const { values } = parseArgs({ options: { calls: { type: "string", default: "500" }, clients: { type: "string", default: "1,16" } } });
const N = Number(values.calls);

async function main() {
  await ensureOfflineImages(["py"]);
  const worker = await LocalWorker.create();
  const admin = api(worker.url, ADMIN_TOKEN);
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
    for (let i = 0; i < 30; i++) await Promise.all([bare(), gc()]);
    const rows: (string | number)[][] = [];
    for (const c of values.clients!.split(",").map(Number)) {
      const b = await underLoad(N, c, bare);
      const g = await underLoad(N, c, gc);
      rows.push([`bare /healthz (baseline)`, c, ms(percentile(b.lat, 50)), ms(percentile(b.lat, 95)), b.rate.toFixed(0)]);
      rows.push([`accepted /gc call`, c, ms(percentile(g.lat, 50)), ms(percentile(g.lat, 95)), g.rate.toFixed(0)]);
    }
    printTable(`Public door on local workerd (${N} calls per row)`, ["route", "clients", "p50", "p95", "calls/s"], rows);
  } finally {
    await agent.stop();
    await worker.dispose();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
