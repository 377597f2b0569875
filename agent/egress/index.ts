import path from "node:path";
import type Docker from "dockerode";
import { log } from "../log.js";
import type { SandboxRuntime } from "../docker/sandbox-runtime.js";
import { ensureNetwork } from "./bridge.js";
import { nodeResolvers, writeResolvConf } from "./dns.js";
import { applyPolicy, kernelSettings, reassertJumps } from "./iptables.js";
import type { Cidr } from "./ranges.js";
import type { EgressPolicy } from "./rules.js";

export { parseAllowList, parseCidr, DENIED_V4 } from "./ranges.js";
export { parseResolvers } from "./dns.js";
export { removePolicy } from "./iptables.js";
export { bridgeOf } from "./bridge.js";

/** The Docker runtime gVisor runs egress functions under (scripts/images/register-runsc.sh). */
export const RUNSC_EGRESS = "runsc-egress";

export interface EgressOptions {
  docker: Docker;
  /** The Docker network egress functions join. */
  network: string;
  subnet: string;
  allow: Cidr[];
  /** Resolvers; absent: the node's own upstream ones. */
  dns?: string[];
  /** Where the agent keeps files of its own (the functions' resolv.conf goes there). */
  stateDir: string;
  /** The node's sandbox for unprivileged functions. */
  sandbox: SandboxRuntime;
}

/** What a container with egress is created with (agent/docker/sandbox.ts). */
export interface EgressAttachment {
  network: string;
  resolvConf: string;
}

export interface EgressSandbox extends EgressAttachment {
  /** The runtime unprivileged egress functions run under: gVisor in host-network mode, or runc. */
  runtime: string;
  policy: EgressPolicy;
  stop(): void;
}

/** How often the agent checks that its jumps still come first (a dockerd restart moves them). */
const RECHECK_MS = 30_000;

/**
 * Sets up a node for egress (agent `--egress`): kernel settings, the network, the iptables policy
 * outside every sandbox, the functions' resolv.conf. Anything missing stops the agent at start:
 * a node that says it allows egress must enforce its policy, or not offer egress at all.
 */
export async function prepareEgress(o: EgressOptions): Promise<EgressSandbox> {
  let runtime: string = "runc";
  if (o.sandbox === "runsc") {
    const info = (await o.docker.info()) as { Runtimes?: Record<string, unknown> };
    if (!Object.keys(info.Runtimes ?? {}).includes(RUNSC_EGRESS)) {
      throw new Error(`--egress under gVisor needs Docker's ${RUNSC_EGRESS} runtime (runsc --network=host); run scripts/images/register-runsc.sh and reload dockerd (kill -HUP), see docs/agents.md`);
    }
    runtime = RUNSC_EGRESS;
  }
  await kernelSettings();
  const { bridge } = await ensureNetwork(o.docker, o.network, o.subnet);
  const dns = o.dns ?? (await nodeResolvers());
  if (dns.length === 0) log("warn", "egress: no resolver found; functions reach addresses, not names (set --egress-dns)");
  const policy: EgressPolicy = { bridge, subnet: o.subnet, allow: o.allow, dns };
  await applyPolicy(policy);
  const resolvConf = await writeResolvConf(path.join(o.stateDir, "egress"), dns);
  const timer = setInterval(() => {
    reassertJumps(policy).then(
      (moved) => moved && log("warn", "egress: the policy's jumps were moved (dockerd restarted?); put back first", { bridge }),
      (err: Error) => log("error", "egress: checking the policy failed", { error: err.message }),
    );
  }, RECHECK_MS);
  timer.unref();
  log("info", "egress ready", { network: o.network, bridge, subnet: o.subnet, runtime, allow: o.allow.length, resolvers: dns.join(",") });
  return { network: o.network, resolvConf, runtime, policy, stop: () => clearInterval(timer) };
}
