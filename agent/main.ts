import { Agent } from "./agent.js";
import { loadConfig, USAGE } from "./config.js";
import { log } from "./log.js";
import { Runner } from "./runner/index.js";
import { ensureOfflineImages } from "./runtimes/images.js";

/** config → images → runner → agent; SIGTERM/SIGINT drain, a second signal stops at once. */
async function main() {
  const config = loadConfig(process.argv.slice(2));
  if (config === "help") {
    process.stdout.write(USAGE);
    return;
  }
  if (config.buildImages) await ensureOfflineImages(config.langs, (line) => log("info", line, { component: "images" }));
  const runner = await Runner.create({
    stateDir: config.stateDir,
    agentId: config.nodeId,
    idleTimeoutMs: config.idleTimeoutMs,
    maxContainers: config.maxContainers,
    defaultCpus: config.defaultCpus,
    defaultMemoryMiB: config.defaultMemoryMiB,
    allowPrivileged: config.privileged,
  });
  const agent = new Agent(config, runner);
  await agent.start();
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

main().catch((e) => {
  log("error", "agent failed to start", { error: (e as Error).message });
  process.exit(1);
});
