import { Agent } from "./agent.js";
import { loadConfig, USAGE } from "./config.js";
import { log } from "./log.js";
import { startMetricsServer } from "./metrics/server.js";
import { Runner } from "./runner/index.js";
import { ensureOfflineImages } from "./runtimes/images.js";
import { dockerClient } from "./docker/client.js";
import { awaitEngine } from "./docker/engine-patience.js";
import { resolveSandbox } from "./docker/sandbox-runtime.js";
import { prepareEgress } from "./egress/index.js";

/** config → images → runner → agent; SIGTERM/SIGINT drain, a second signal stops at once. */
async function main() {
  const config = loadConfig(process.argv.slice(2));
  if (config === "help") {
    process.stdout.write(USAGE);
    return;
  }
  // Builds and image builds run child processes; none of them needs the token.
  delete process.env.GCFAAS_AGENT_TOKEN;
  if (process.argv.some((a) => a === "--token" || a.startsWith("--token="))) log("warn", "--token shows in the process list (ps) to every user of this host; use --token-file or GCFAAS_AGENT_TOKEN");
  if (config.buildImages) await ensureOfflineImages(config.langs, (line) => log("info", line, { component: "images" }));
  const sandbox = await awaitEngine("its runtimes (docker info)", resolveSandbox(dockerClient(), config.sandbox));
  log("info", "sandbox runtime", { runtime: sandbox, asked: config.sandbox });
  const egress = config.egress
    ? await awaitEngine(
        "the egress network",
        prepareEgress({ docker: dockerClient(), network: config.egressNetwork, subnet: config.egressSubnet, allow: config.egressAllow, ...(config.egressDns ? { dns: config.egressDns } : {}), stateDir: config.stateDir, sandbox }),
      )
    : null;
  const runner = await awaitEngine("the containers an earlier agent left (docker ps)", Runner.create({
    runtime: sandbox === "runsc" ? "runsc" : "",
    stateDir: config.stateDir,
    agentId: config.nodeId,
    idleTimeoutMs: config.idleTimeoutMs,
    maxContainers: config.maxContainers,
    defaultCpus: config.defaultCpus,
    defaultMemoryMiB: config.defaultMemoryMiB,
    allowPrivileged: config.privileged,
    egress,
    pool: { size: config.poolSize, max: Math.max(config.poolSize, config.poolMax), idleMs: config.poolIdleMs, languages: config.poolLangs },
  }));
  const agent = new Agent(config, runner, sandbox);
  await agent.start();
  if (config.metrics) {
    // A taken port costs the metrics, not the work: a supervisor restarting the agent over it
    // would stop every task on the node for the sake of a scrape.
    const { host, port } = config.metrics;
    await startMetricsServer(agent.metrics.registry, host, port).then(
      ({ address }) => log("info", "metrics served", { url: `http://${address.family === "IPv6" ? `[${address.address}]` : address.address}:${address.port}/metrics` }),
      (e: unknown) => log("error", "metrics not served", { host, port, error: String(e) }),
    );
  }
  keepServing();
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      log("warn", "second signal, stopping now", { signal });
      process.exit(1);
    }
    stopping = true;
    agent.drain().then(() => process.exit(0), (e) => {
      log("error", "drain failed", { error: String(e) });
      process.exit(1);
    });
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
}

/**
 * Once serving, an exception escaping a callback (a stream or socket handler fed by one tenant's
 * output, a timer) is logged and the agent goes on: each task's state lives in its own promise chain,
 * which reports its own failures, so exiting would only drop every other tenant's running calls.
 * A burst of them means the process itself is broken: then it exits, and its supervisor restarts it
 * (a restarted agent removes the containers it left).
 */
function keepServing(): void {
  const BURST = 20;
  const WINDOW_MS = 60_000;
  let recent: number[] = [];
  const report = (kind: string, reason: unknown) => {
    log("error", `${kind}; the agent keeps serving`, { error: reason instanceof Error ? (reason.stack ?? reason.message) : String(reason) });
    const now = Date.now();
    recent = [...recent.filter((t) => now - t < WINDOW_MS), now];
    if (recent.length >= BURST) {
      log("error", `${BURST} unexpected errors within ${WINDOW_MS / 1000} s; exiting`);
      process.exit(1);
    }
  };
  process.on("uncaughtException", (err) => report("uncaught exception", err));
  process.on("unhandledRejection", (reason) => report("unhandled rejection", reason));
}

main().catch((e) => {
  log("error", "agent failed to start", { error: (e as Error).message });
  process.exit(1);
});
