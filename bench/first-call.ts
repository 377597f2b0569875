/**
 * "Build finished → first result" through the whole service (API → dispatcher → agent → container):
 * for each language, a new function is deployed and, the moment its build reads SUCCESS, called
 * once synchronously (Prefer: wait). Measured with the agent's runtime pool off (--pool-size 0,
 * every first call starts a container) and on (--pool-size 1), in the same run, on the same Worker.
 * Run: npx tsx bench/first-call.ts [--reps 3] [--langs py,js,go,rb,rs,cs]
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { ensureOfflineImages } from "../agent/runtimes/images.js";
import { LANGS, RUNTIME_DIR, parseLang, type Lang } from "../agent/runtimes/languages.js";
import { ADMIN_TOKEN, AgentProcess, api, freePort, LocalWorker, ROOT } from "../test/e2e/harness.js";
import { deploy } from "../test/e2e/deploy.js";
import { zipFolder } from "../test/support/zip.js";
import { ms, percentile, printTable } from "./stats.js";

const { values } = parseArgs({ options: { reps: { type: "string", default: "3" }, langs: { type: "string", default: LANGS.join(",") } } });
const REPS = Number(values.reps);
const langs = values.langs!.split(",").map(parseLang);

/** The agent's ready pooled containers of `lang`, read from its metrics. */
async function pooled(metricsPort: number, lang: Lang): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`gcfaas_agent_pooled_containers{lang="${lang}"} `));
  return line ? Number(line.split(" ")[1]) : 0;
}

async function main() {
  await ensureOfflineImages(langs);
  const worker = await LocalWorker.create();
  const admin = api(worker.url, ADMIN_TOKEN);
  const user = api(worker.url, (await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "first-call" } })).token);
  const zips = Object.fromEntries(await Promise.all(langs.map(async (l) => [l, await zipFolder(path.join(ROOT, "examples", RUNTIME_DIR[l], "hello"))] as const)));
  const samples: Record<string, number[]> = {};
  try {
    for (const poolSize of [0, 1]) {
      const metricsPort = await freePort();
      const nodeId = `first-call-pool-${poolSize}`;
      const agent = await AgentProcess.start(worker, await worker.agentToken(nodeId), nodeId, ["--slots", "4", "--idle-timeout", "2000", "--pool-size", String(poolSize), "--metrics", `127.0.0.1:${metricsPort}`, "--langs", langs.join(",")]);
      try {
        for (const lang of langs) {
          for (let rep = 0; rep < REPS; rep++) {
            const { functionId, build } = await deploy(user, lang, zips[lang]!, `${lang}p${poolSize}r${rep}`);
            if (build.status !== "SUCCESS") throw new Error(`${lang}: build ${build.status}`);
            // Pool on: measure from a full pool, as a node between bursts has it (the build itself
            // gives the pool several seconds to refill).
            for (let i = 0; poolSize > 0 && (await pooled(metricsPort, lang)) < 1; i++) {
              if (i > 600) throw new Error(`${lang}: the pool did not fill`);
              await new Promise((r) => setTimeout(r, 100));
            }
            const started = performance.now();
            const res = await user("POST", `/v1/task/${functionId}?name=bench`, { json: {}, headers: { prefer: "wait=30" } });
            const body = await res.text();
            if (res.status !== 200 || res.headers.get("preference-applied") !== "wait") throw new Error(`${lang}: first call answered ${res.status}: ${body}`);
            (samples[`${lang}|${poolSize}`] ??= []).push(performance.now() - started);
          }
        }
      } finally {
        await agent.stop();
      }
    }
  } finally {
    await worker.dispose();
  }
  const rows = langs.map((lang) => {
    const off = samples[`${lang}|0`]!;
    const on = samples[`${lang}|1`]!;
    return [lang, ms(percentile(off, 50)), ms(percentile(off, 95)), ms(percentile(on, 50)), ms(percentile(on, 95)), (percentile(on, 50) / percentile(off, 50)).toFixed(2)];
  });
  printTable(`build SUCCESS → first result, through the service (ms; ${REPS} functions per language and setting)`, ["lang", "no pool p50", "p95", "pool p50", "p95", "pool ÷ no pool"], rows);
}

await main();
