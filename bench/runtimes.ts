/**
 * Cold start and warm call latency per language, next to baselines measured in the same run:
 *   bare run   `docker run --rm --network none <image> <runtime no-op>`: the container start plus the
 *              interpreter's own start where there is one (python3 -c pass, node -e 0, ruby -e 0),
 *              else `true` (Go and Rust are native; Mono has no cheap no-op)
 *   cold       Runner.invoke of a function no container is warm for (create, start, load, call)
 *   pooled     the same first call on a runner whose runtime pool holds a started container of the
 *              language (claim, link the files, init, load, call); the pool refills between runs
 *   bare HTTP  one HTTP exchange straight with a warm container's shim over its channel (no runner)
 *   warm       Runner.invoke served by that warm container
 * Each is measured under runc and, where Docker has it, under gVisor's runsc (both in the same run,
 * so their figures compare): the bare run with `--runtime=runsc`, the rest with a Runner whose
 * unprivileged functions run under runsc.
 * Usage: npx tsx bench/runtimes.ts [--cold N] [--warm N] [--runtimes runc,runsc] [py js go rb rs cs]
 */
import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { buildFunction } from "../agent/builder/index.js";
import { Runner } from "../agent/runner/index.js";
import { ensureOfflineImages } from "../agent/runtimes/images.js";
import { isLang, LANGS, offlineImages, RUNTIME_DIR, type Lang } from "../agent/runtimes/languages.js";
import { zipFolder } from "../test/support/zip.js";
import { dockerClient } from "../agent/docker/client.js";
import { resolveSandbox } from "../agent/docker/sandbox-runtime.js";

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "..");

function parseArgs(argv: string[]) {
  let cold = 7;
  let warm = 300;
  let runtimes: string[] | undefined;
  const langs: Lang[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? "";
    if (arg === "--cold") cold = Number(argv[++i]);
    else if (arg === "--warm") warm = Number(argv[++i]);
    else if (arg === "--runtimes") runtimes = (argv[++i] ?? "").split(",");
    else if (isLang(arg)) langs.push(arg);
    else throw new Error(`unknown argument ${arg}`);
  }
  return { cold, warm, runtimes, langs: langs.length ? langs : [...LANGS] };
}

function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

async function time(fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const BARE_COMMAND: Record<Lang, string[]> = {
  py: ["python3", "-c", "pass"],
  js: ["node", "-e", "0"],
  rb: ["ruby", "-e", "0"],
  go: ["true"],
  rs: ["true"],
  cs: ["true"],
};

const REQUEST = { method: "POST", query: { name: "bench" }, headers: { "content-type": "application/json" }, body: '{"n":1}' };

/** Waits until the pool holds a ready container of `lang`, so each pooled sample starts from a full pool. */
async function poolReady(runner: Runner, lang: Lang): Promise<void> {
  for (let i = 0; (runner.pooledContainers()[lang] ?? 0) < 1; i++) {
    if (i > 600) throw new Error(`${lang}: the pool did not refill`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function benchLanguage(lang: Lang, runner: Runner, pooledRunner: Runner, sandbox: string, coldRuns: number, warmRuns: number) {
  const work = await fs.mkdtemp(path.join(os.tmpdir(), `gcfaas-bench-${lang}-`));
  const zip = await zipFolder(path.join(ROOT, "examples", RUNTIME_DIR[lang], "hello"));
  const built = await buildFunction({ lang, zip, workDir: path.join(work, "build"), onLog: () => undefined, limits: { runtime: sandbox === "runsc" ? "runsc" : undefined } });
  if (!built.ok) throw new Error(`${lang}: build failed: ${built.reason}`);
  const image = offlineImages()[lang].run;
  const caps = { timeout: 30, cpuCount: 0, memSize: 0, privileged: false };
  const buildId = `bench${lang}${Date.now()}`;

  const bareRun: number[] = [];
  for (let i = 0; i < coldRuns; i++) {
    const [entrypoint = "true", ...args] = BARE_COMMAND[lang];
    bareRun.push(await time(() => run("docker", ["run", "--rm", `--runtime=${sandbox}`, "--network", "none", "--entrypoint", entrypoint, image, ...args])));
  }

  const cold: number[] = [];
  for (let i = 0; i < coldRuns; i++) {
    const functionId = `cold${i}`;
    const res = await runner.invoke({ functionId, buildId, lang, artifactPath: built.artifactPath, capabilities: caps, request: REQUEST });
    if (res.status !== 200 || res.container !== "cold") throw new Error(`${lang}: cold call answered ${res.status} (${res.container})`);
    cold.push(res.durationMs);
    await runner.evictFunction(functionId);
  }

  const pooled: number[] = [];
  for (let i = 0; i < coldRuns; i++) {
    const functionId = `pooled${i}`;
    await poolReady(pooledRunner, lang);
    const res = await pooledRunner.invoke({ functionId, buildId, lang, artifactPath: built.artifactPath, capabilities: caps, request: REQUEST });
    if (res.status !== 200 || !res.pooled) throw new Error(`${lang}: pooled call answered ${res.status} (pooled: ${res.pooled})`);
    pooled.push(res.durationMs);
    await pooledRunner.evictFunction(functionId);
  }

  const warmCall = { functionId: "warm", buildId, lang, artifactPath: built.artifactPath, capabilities: caps, request: REQUEST };
  await runner.invoke(warmCall);
  const shim = runner.containers().find((c) => c.functionId === "warm");
  if (!shim) throw new Error(`${lang}: no warm container`);
  const warm: number[] = [];
  const bareHttp: number[] = [];
  // Interleaved, so that both see the same machine state.
  for (let i = 0; i < warmRuns; i++) {
    bareHttp.push(await time(() => shim.bareExchange(REQUEST)));
    warm.push(
      await time(async () => {
        const res = await runner.invoke(warmCall);
        if (res.container !== "warm" || res.status !== 200) throw new Error(`${lang}: warm call answered ${res.status} (${res.container})`);
      }),
    );
  }
  await runner.evictFunction("warm");
  await fs.rm(work, { recursive: true, force: true });
  return { bareRun, cold, pooled, bareHttp, warm };
}

const fmt = (n: number) => (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2)).padStart(7);

async function main() {
  const { cold, warm, langs, runtimes } = parseArgs(process.argv.slice(2));
  await ensureOfflineImages(langs, (line) => console.error(line));
  const available = (await resolveSandbox(dockerClient(), "auto")) === "runsc" ? ["runc", "runsc"] : ["runc"];
  const sandboxes = runtimes ?? available;
  const rows: string[] = [];
  for (const sandbox of sandboxes) {
    const stateDir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-bench-state-"));
    const runtime = sandbox === "runsc" ? "runsc" : "";
    const runner = await Runner.create({ stateDir, agentId: `bench-${sandbox}`, runtime });
    const pooledRunner = await Runner.create({ stateDir: path.join(stateDir, "pooled"), agentId: `bench-pool-${sandbox}`, runtime, pool: { size: 1, max: 1, idleMs: 600_000, languages: langs } });
    try {
      for (const lang of langs) {
        console.error(`benchmarking ${lang} under ${sandbox} (${cold} cold, ${warm} warm)`);
        const r = await benchLanguage(lang, runner, pooledRunner, sandbox, cold, warm);
        const p = (xs: number[]) => `${fmt(percentile(xs, 50))} ${fmt(percentile(xs, 95))}`;
        const overhead = percentile(r.warm, 50) - percentile(r.bareHttp, 50);
        const ratio = (xs: number[]) => (percentile(xs, 50) / percentile(r.bareRun, 50)).toFixed(2).padStart(5);
        rows.push(`${lang.padEnd(4)} | ${sandbox.padEnd(5)} | ${p(r.bareRun)} | ${p(r.cold)} | ${ratio(r.cold)} | ${p(r.pooled)} | ${ratio(r.pooled)} | ${p(r.bareHttp)} | ${p(r.warm)} | ${fmt(overhead)}`);
      }
    } finally {
      await runner.shutdown();
      await pooledRunner.shutdown();
      await fs.rm(stateDir, { recursive: true, force: true });
    }
  }
  console.log(`\nlatency in ms (p50 p95); ${os.cpus().length} CPUs, Docker ${(await run("docker", ["version", "-f", "{{.Server.Version}}"])).stdout.trim()}`);
  console.log("lang | sandbox |  bare docker run |   cold start     | cold/ |  cold from pool  | pool/ |    bare HTTP     |    warm call     | warm-bare");
  console.log("     |         |   p50     p95   |   p50     p95    | bare  |   p50     p95    | bare  |   p50     p95    |   p50     p95    |  p50");
  for (const row of rows) console.log(row);
}

await main();
