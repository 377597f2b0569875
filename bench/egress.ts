/**
 * What network egress costs a call, in the same run as its baseline (no network):
 *   cold none      first call of a function without egress (--network none, the node's sandbox)
 *   cold egress    the same with egress: a container on the egress bridge (under gVisor: its
 *                  host-network runtime), with the resolv.conf bind; the pool never serves these
 *   warm none / warm egress   a call served by a warm container of each
 *   warm fetch     a warm egress call that opens a TCP connection to a test host and reads its
 *                  answer (the NAT and the policy's rules on every new connection)
 * The test host lives on a network this benchmark makes on the machine (test/support/test-lan.ts):
 * nothing leaves the machine.
 * Usage: npx tsx bench/egress.ts [--cold N] [--warm N] [--langs py,go]
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { buildFunction } from "../agent/builder/index.js";
import { Runner } from "../agent/runner/index.js";
import { ensureOfflineImages } from "../agent/runtimes/images.js";
import { parseLang } from "../agent/runtimes/languages.js";
import { dockerClient } from "../agent/docker/client.js";
import { resolveSandbox } from "../agent/docker/sandbox-runtime.js";
import { bridgeOf, prepareEgress, removePolicy } from "../agent/egress/index.js";
import type { InvokeRequest } from "../agent/runner/index.js";
import { zipItems } from "../test/support/zip.js";
import { probeHandlers } from "../test/agent/helpers/egress-probes.js";
import { startTestLan } from "../test/support/test-lan.js";
import { percentile, printTable } from "./stats.js";

const { values } = parseArgs({ options: { cold: { type: "string", default: "5" }, warm: { type: "string", default: "100" }, langs: { type: "string", default: "py,go" } } });
const COLD = Number(values.cold);
const WARM = Number(values.warm);
const langs = values.langs!.split(",").map(parseLang);

async function main() {
  await ensureOfflineImages(langs, (line) => console.error(line));
  const docker = dockerClient();
  const sandbox = await resolveSandbox(docker, "auto");
  const lan = await startTestLan();
  const tag = randomBytes(2).toString("hex");
  const network = `gcfaas-egress-bench-${tag}`;
  const subnet = `10.217.${parseInt(tag, 16) % 250}.0/24`;
  const stateDir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-bench-egress-"));
  const egress = await prepareEgress({ docker, network, subnet, allow: [], dns: [], stateDir, sandbox });
  const runner = await Runner.create({ stateDir, agentId: `bench-egress-${tag}`, runtime: sandbox === "runsc" ? "runsc" : "", egress });
  const rows: string[][] = [];
  try {
    for (const lang of langs) {
      const built = await buildFunction({ lang, zip: await zipItems(probeHandlers[lang]!), workDir: path.join(stateDir, `build-${lang}`), onLog: () => undefined, limits: { runtime: sandbox === "runsc" ? "runsc" : undefined } });
      if (!built.ok) throw new Error(`${lang}: build failed: ${built.reason}`);
      const target = `${lan.hosts.public}:${lan.port}`;
      const request = (functionId: string, on: boolean, body: string[] = []): InvokeRequest => ({
        functionId,
        buildId: `bench${lang}`,
        lang,
        artifactPath: built.artifactPath,
        capabilities: { timeout: 30, cpuCount: 0, memSize: 0, privileged: false, egress: on },
        request: { method: "POST", query: { mode: "probe" }, headers: { "content-type": "application/json" }, body: JSON.stringify(body) },
      });
      const once = async (r: InvokeRequest, want: "cold" | "warm") => {
        const res = await runner.invoke(r);
        if (res.status !== 200 || res.container !== want) throw new Error(`${lang}: ${want} call answered ${res.status} (${res.container}): ${res.body.toString()}`);
        if (r.request.body !== "[]" && !res.body.toString().includes('"ok test host')) throw new Error(`${lang}: the test host was not reached: ${res.body.toString()}`);
        return res.durationMs;
      };
      const cold: Record<string, number[]> = { none: [], egress: [] };
      // Interleaved, so that both see the same machine state.
      for (let i = 0; i < COLD; i++) {
        for (const on of [false, true]) {
          const id = `cold-${on}-${i}`;
          cold[on ? "egress" : "none"]!.push(await once(request(id, on), "cold"));
          await runner.evictFunction(id);
        }
      }
      const warm: Record<string, number[]> = { none: [], egress: [], fetch: [] };
      await once(request("warm-none", false), "cold");
      await once(request("warm-egress", true), "cold");
      await once(request("warm-fetch", true, [target]), "cold");
      for (let i = 0; i < WARM; i++) {
        warm.none!.push(await once(request("warm-none", false), "warm"));
        warm.egress!.push(await once(request("warm-egress", true), "warm"));
        warm.fetch!.push(await once(request("warm-fetch", true, [target]), "warm"));
      }
      const p = (xs: number[]) => `${percentile(xs, 50).toFixed(1)} / ${percentile(xs, 95).toFixed(1)}`;
      rows.push([lang, sandbox, p(cold.none!), p(cold.egress!), (percentile(cold.egress!, 50) - percentile(cold.none!, 50)).toFixed(0), p(warm.none!), p(warm.egress!), p(warm.fetch!)]);
    }
  } finally {
    await runner.shutdown();
    egress.stop();
    await removePolicy({ bridge: bridgeOf(network), subnet });
    await docker.getNetwork(network).remove().catch(() => undefined);
    await lan.close();
    await fs.rm(stateDir, { recursive: true, force: true });
  }
  printTable(`Egress: ms p50 / p95 (cold ${COLD}, warm ${WARM})`, ["lang", "sandbox", "cold none", "cold egress", "cold +p50", "warm none", "warm egress", "warm fetch"], rows);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
