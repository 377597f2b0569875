/**
 * Serves the Worker locally through wrangler's programmatic dev server: the same workerd, local D1,
 * R2 and Durable Objects (persisted under the given folder) as `wrangler dev`, with the DevTools
 * inspector off. `wrangler dev` cannot switch it off, and with it on every subrequest (each D1
 * query, each Durable Object call) becomes a DevTools event that wrangler formats and appends to
 * its debug log: more CPU per task than the service itself spends, and hundreds of MB of log.
 *
 * Usage: node --import tsx scripts/lib/serve-worker.ts <port> <state dir> <admin token> [info|warn]
 */
import { unstable_startWorker } from "wrangler";

const [port, stateDir, adminToken, logLevel = "warn"] = process.argv.slice(2);
if (!port || !stateDir || !adminToken) {
  console.error("usage: serve-worker.ts <port> <state dir> <admin token> [info|warn]");
  process.exit(2);
}

const worker = await unstable_startWorker({
  config: "wrangler.toml",
  bindings: { ADMIN_TOKEN: { type: "plain_text", value: adminToken } },
  dev: {
    inspector: false,
    watch: false,
    server: { hostname: "127.0.0.1", port: Number(port) },
    persist: stateDir,
    logLevel: logLevel === "info" ? "info" : "warn",
  },
});
await worker.ready;
console.log(`Ready on ${(await worker.url).origin}`);

for (const signal of ["SIGTERM", "SIGINT"] as const)
  process.once(signal, () => {
    void worker.dispose().finally(() => process.exit(0));
  });
