/**
 * Serves the Worker locally on workerd through Miniflare's programmatic API: the bundle
 * `wrangler deploy` would upload (built with `--dry-run`), the bindings of wrangler.toml, and local
 * D1, R2 and Durable Objects persisted under `<state dir>/v3` — the layout `wrangler dev
 * --persist-to` and `wrangler d1 migrations apply --local --persist-to` use, so either tool sees the
 * same data.
 *
 * Not `wrangler dev`: it puts a second workerd in front (a proxy worker that buffers requests
 * across reloads) and a DevTools inspector that turns every subrequest — each D1 query, each
 * Durable Object call — into an event wrangler formats and appends to its debug log. Together
 * they cost more CPU and latency per task than the service itself. Production has neither.
 *
 * workerd listens on a loopback port of its own; the public port is a small Node proxy
 * (client-address-proxy.ts) that sets `CF-Connecting-IP` from the connection, as Cloudflare does,
 * instead of believing the client. GCFAAS_TRUSTED_PROXIES (comma-separated addresses) names
 * proxies in front whose `X-Forwarded-For` is believed.
 *
 * GCFAAS_DISPATCH_SHARDS overrides wrangler.toml's DISPATCH_SHARDS (bench/fleet.ts compares counts);
 * GCFAAS_COST_COUNTERS=1 turns on the Worker's cost counters (bench/cost.ts);
 * GCFAAS_INSPECTOR_PORT opens workerd's inspector there (bench/cost.ts --profile samples it).
 * GCFAAS_D1_DELAY_MS adds that many milliseconds before every D1 round trip (a far primary);
 * GCFAAS_TEST_D1_FAILURES=1 opens the test control of D1 failures, POST /__test/d1 (tests only).
 * The Cron Triggers of wrangler.toml fire at their times (local-crons.ts), unless GCFAAS_CRONS=off
 * (tests and benchmarks fire them when they choose, through GCFAAS_TEST_SCHEDULED).
 * SECRETS_KEY (function secrets at rest) is drawn once and kept in `<state dir>/secrets-key`.
 *
 * Usage: GCFAAS_ADMIN_TOKEN=… node --import tsx scripts/lib/serve-worker.ts <port> <state dir> [info|warn]
 * The admin token comes from the environment, never the command line, which every user of the
 * host can read (ps); it is taken out of this process's environment so that no child inherits it.
 */
import { spawn } from "node:child_process";
import type { IncomingMessage, ServerResponse } from "node:http";
import path from "node:path";
import type { Readable } from "node:stream";
import { Log, LogLevel, Miniflare } from "miniflare";
import { unstable_getMiniflareWorkerOptions, unstable_readConfig } from "wrangler";
import { startFrontDoor, trustedProxiesFrom } from "./client-address-proxy.js";
import { localSecretsKey } from "./local-secrets-key.js";
import { quietDisconnects } from "./quiet-disconnects.js";
import { d1DelayBinding, d1DelayFrom } from "./d1-delay.js";
import { scheduleCrons } from "./local-crons.js";
import { shardLayouts } from "../../worker/dispatch/shard-layouts.js";

const ROOT = path.resolve(import.meta.dirname, "../..");
const [port, stateDir, logLevel = "warn"] = process.argv.slice(2);
const adminToken = process.env.GCFAAS_ADMIN_TOKEN;
delete process.env.GCFAAS_ADMIN_TOKEN;
if (!port || !stateDir || !adminToken) {
  console.error("usage: GCFAAS_ADMIN_TOKEN=<admin token> serve-worker.ts <port> <state dir> [info|warn]");
  process.exit(2);
}

function bundle(outdir: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const c = spawn(path.join(ROOT, "node_modules/.bin/wrangler"), ["deploy", "--dry-run", "--outdir", outdir], {
      cwd: ROOT,
      env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    c.stdout.on("data", (d) => (out += d));
    c.stderr.on("data", (d) => (out += d));
    c.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`bundling the Worker failed:\n${out}`))));
  });
}

function shardsOverride(v: string | undefined): { DISPATCH_SHARDS?: string } {
  if (v === undefined || v === "") return {};
  // Refused here, at start, rather than on every task route of the Worker.
  shardLayouts(v);
  return { DISPATCH_SHARDS: v };
}

let d1Delay: number;
try {
  d1Delay = d1DelayFrom(process.env.GCFAAS_D1_DELAY_MS);
} catch (e) {
  console.error((e as Error).message);
  process.exit(2);
}

const outdir = path.join(stateDir, "bundle");
await bundle(outdir);
const { workerOptions } = unstable_getMiniflareWorkerOptions(path.join(ROOT, "wrangler.toml"));
const mf = new Miniflare({
  ...workerOptions,
  name: "gc-faas",
  modules: true,
  scriptPath: path.join(outdir, "index.js"),
  modulesRoot: outdir,
  bindings: { ...workerOptions.bindings, ADMIN_TOKEN: adminToken, SECRETS_KEY: await localSecretsKey(stateDir), ...shardsOverride(process.env.GCFAAS_DISPATCH_SHARDS), ...(process.env.GCFAAS_COST_COUNTERS === "1" ? { COST_COUNTERS: "1" } : {}),
    ...d1DelayBinding(d1Delay), ...(process.env.GCFAAS_TEST_D1_FAILURES === "1" ? { D1_TEST_FAILURES: "1" } : {}) },
  host: "127.0.0.1",
  port: 0,
  defaultPersistRoot: path.join(stateDir, "v3"),
  // The request.cf object would be fetched from Cloudflare; there is no network here.
  cf: false,
  log: new Log(logLevel === "info" ? LogLevel.INFO : LogLevel.WARN),
  logRequests: false,
  // Miniflare's own piping, minus the stack trace workerd prints whenever a client hangs up.
  handleRuntimeStdio(stdout: Readable, stderr: Readable) {
    quietDisconnects(stdout, (line) => console.log(line));
    quietDisconnects(stderr, (line) => console.error(line));
  },
  ...(process.env.GCFAAS_INSPECTOR_PORT ? { inspectorPort: Number(process.env.GCFAAS_INSPECTOR_PORT) } : {}),
});
const upstream = await mf.ready;
const door = await startFrontDoor({
  host: "127.0.0.1",
  port: Number(port),
  upstream,
  trustedProxies: trustedProxiesFrom(process.env.GCFAAS_TRUSTED_PROXIES),
  ...(process.env.GCFAAS_TEST_SCHEDULED === "1" ? { control: cronControl } : {}),
});

/**
 * Tests fire the Worker's Cron Triggers with `POST /__test/scheduled?cron=…[&time=ms]` (LocalWorker.triggerCron),
 * as `wrangler dev --test-scheduled` would; only when GCFAAS_TEST_SCHEDULED=1. Miniflare's own
 * /cdn-cgi/handler/scheduled reaches the static-assets router in front of the Worker, which has no
 * scheduled handler, so the Worker is called directly.
 */
function cronControl(req: IncomingMessage, res: ServerResponse): boolean {
  const url = new URL(req.url ?? "/", "http://local");
  if (url.pathname !== "/__test/scheduled" || req.method !== "POST") return false;
  const cron = url.searchParams.get("cron") ?? "";
  // `time` (Unix ms) fires it as if at another moment: a benchmark runs the archive's move on records it just wrote.
  const time = Number(url.searchParams.get("time") ?? Date.now());
  mf.getWorker("gc-faas")
    .then((w) => w.scheduled({ cron, scheduledTime: new Date(Number.isFinite(time) ? time : Date.now()) }))
    .then(
      (r) => res.writeHead(r.outcome === "ok" ? 200 : 500, { "content-type": "application/json" }).end(JSON.stringify(r)),
      (err: Error) => res.writeHead(500).end(err.message),
    );
  return true;
}
const stopCrons =
  process.env.GCFAAS_CRONS === "off"
    ? () => undefined
    : scheduleCrons(unstable_readConfig({ config: path.join(ROOT, "wrangler.toml") }).triggers.crons ?? [], async (cron, at) => {
        const r = await mf
          .getWorker("gc-faas")
          .then((w) => w.scheduled({ cron, scheduledTime: new Date(at) }))
          .catch((e: Error) => ({ outcome: e.message }));
        if (r.outcome !== "ok") console.error(JSON.stringify({ level: "error", msg: "a Cron Trigger's run failed", cron, outcome: r.outcome }));
      });
console.log(`Ready on http://127.0.0.1:${port}`);

for (const signal of ["SIGTERM", "SIGINT"] as const)
  process.once(signal, () => {
    stopCrons();
    void door
      .close()
      .then(() => mf.dispose())
      .finally(() => process.exit(0));
  });
