/**
 * D1 trouble benchmark (issue 26, item 5): what a far D1 primary and a D1 outage do to the service.
 *
 * 1. Synchronous calls (`Prefer: wait`, one request a task) of the warm echo function, with every
 *    D1 round trip delayed by each of `--delays` ms (GCFAAS_D1_DELAY_MS), one local Worker each, in
 *    the same run: p50 and p95, and the D1 round trips a call costs (the Worker's cost counters),
 *    which is what the delay multiplies. Each through `POST /v1/task` and through `/gc`.
 * 2. With `--outage S` (0 skips it): on the first Worker, clients keep creating tasks while D1
 *    fails for S seconds by the clock (the test control), with tasks of a slow function queued
 *    and running across it; afterwards every accepted task must finish once: lost = 0 and
 *    double-counted = 0 (usage rows against finished tasks).
 *
 * Local only: the delay and the failure control are vars of the Worker it starts. For a deployed
 * Worker, deploy with `--var D1_DELAY_MS:25` and run bench/dispatch.ts --url against it.
 * Run: npx tsx bench/d1-trouble.ts [--calls 200] [--delays 0,25] [--outage 60] [--clients 4]
 */
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { zipSources } from "../test/support/zip.js";
import { deploy } from "../test/e2e/deploy.js";
import { d1Control } from "../scripts/lib/local-service.js";
import type { Api } from "../test/e2e/harness.js";
import { startEchoService } from "./echo-service.js";
import { ms, percentile, printTable, timed } from "./stats.js";

const { values } = parseArgs({ options: { calls: { type: "string", default: "200" }, delays: { type: "string", default: "0,25" }, outage: { type: "string", default: "60" }, clients: { type: "string", default: "4" } } });
const CALLS = Number(values.calls);
const DELAYS = values.delays!.split(",").map(Number);
const OUTAGE_S = Number(values.outage);
const CLIENTS = Number(values.clients);
const SLOW = { "handler.py": "import time\ndef handle(event, context):\n    time.sleep(5)\n    return 'slow'\n" };

// The cost counters of the Worker it starts (worker/diagnostics/cost-counters.ts): D1 round trips a call.
process.env.GCFAAS_COST_COUNTERS = "1";

interface Counts { [name: string]: number }

async function counted(base: string, adminToken: string, path: string, method = "GET"): Promise<Counts> {
  const res = await fetch(`${base}/__cost/${path}`, { method, headers: { authorization: `Bearer ${adminToken}` } });
  if (!res.ok) throw new Error(`/__cost/${path}: ${res.status}`);
  return res.status === 204 ? {} : ((await res.json()) as Counts);
}

async function outage(base: string, adminToken: string, user: Api, echoId: string) {
  const { functionId: slowId } = await deploy(user, "py", await zipSources(SLOW), "slow");
  const usedBefore = (await user.json("GET", "/v1/usage", 200)).invocations as number;
  const accepted: string[] = [];
  let refused = 0;
  const unexpected: string[] = [];
  // Slow tasks queued just before: some run across the outage, the rest wait in the shard for it.
  for (let i = 0; i < 8; i++) accepted.push((await user.json("POST", `/v1/task/${slowId}`, 201, {})).id);
  const window = await d1Control(base, adminToken, "POST", `?failForMs=${OUTAGE_S * 1000}`);
  const end = window.until! + 5_000;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (Date.now() < end) {
        const res = await user("POST", `/v1/task/${echoId}`, { json: { outage: true } });
        const body = await res.text();
        if (res.status === 201) accepted.push((JSON.parse(body) as { id: string }).id);
        else if (res.status === 503 && body.includes("storage_unavailable") && res.headers.get("retry-after")) refused++;
        else unexpected.push(`${res.status} ${body.slice(0, 120)}`);
        await sleep(100);
      }
    }),
  );
  // Every accepted task finishes (polled; nothing is timed here).
  const finished = new Map<string, { status: number; finished: string | null }>();
  const deadline = Date.now() + 300_000;
  while (finished.size < accepted.length && Date.now() < deadline) {
    for (const id of accepted)
      if (!finished.has(id)) {
        const t = (await user.json("GET", `/v1/task/${id}`, 200)) as { status: number; finished: string | null };
        if (t.status !== 0) finished.set(id, t);
      }
    await sleep(500);
  }
  const usedAfter = (await user.json("GET", "/v1/usage", 200)).invocations as number;
  const during = [...finished.values()].filter((t) => t.finished && Number(t.finished) * 1000 < window.until!).length;
  printTable(`D1 failing for ${OUTAGE_S} s (refuse), ${CLIENTS} clients creating tasks`, ["accepted", "finished", "finished while D1 was down", "503 storage_unavailable", "other answers", "lost", "usage counted", "double-counted"], [
    [accepted.length, finished.size, during, refused, unexpected.length, accepted.length - [...finished.values()].filter((t) => t.status === 200).length, usedAfter - usedBefore, usedAfter - usedBefore - finished.size],
  ]);
  if (unexpected.length) console.log(`other answers: ${[...new Set(unexpected)].slice(0, 5).join(" | ")}`);
}

async function main() {
  const rows: (string | number)[][] = [];
  const p50At0: Record<string, number> = {};
  for (const [i, delay] of DELAYS.entries()) {
    const withOutage = i === 0 && OUTAGE_S > 0;
    const svc = await startEchoService("4", undefined, { d1DelayMs: delay, testD1Failures: withOutage });
    try {
      for (const [door, call] of [["POST /v1/task", svc.sync], ["/gc", svc.publicSync]] as const) {
        for (let j = 0; j < 30; j++) await call(j); // warm containers, the Durable Objects, the JIT
        await counted(svc.worker.url, svc.worker.adminToken, "reset", "POST");
        const lat: number[] = [];
        for (let j = 0; j < CALLS; j++) lat.push((await timed(() => call(j)))[0]);
        const c = await counted(svc.worker.url, svc.worker.adminToken, "counts");
        const trips = (c["d1 round trips"] ?? 0) / CALLS;
        const p50 = percentile(lat, 50);
        const base = (p50At0[door] ??= p50);
        rows.push([door, `${delay} ms`, ms(p50), ms(percentile(lat, 95)), trips.toFixed(1), delay ? `${ms(p50 - base)} = ${((p50 - base) / delay).toFixed(1)} × delay` : "-"]);
      }
      if (withOutage) await outage(svc.worker.url, svc.worker.adminToken, svc.user, svc.functionId);
    } finally {
      await svc.stop();
    }
  }
  printTable(`Synchronous calls (Prefer: wait), ${CALLS} each, D1 round trips delayed by GCFAAS_D1_DELAY_MS`, ["door", "D1 delay", "p50", "p95", "D1 round trips a call", "p50 gap"], rows);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
