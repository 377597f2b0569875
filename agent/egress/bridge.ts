import { createHash } from "node:crypto";
import type Docker from "dockerode";
import { LABEL_MANAGED } from "../docker/client.js";

/** The Linux name of a network's bridge: at most 15 characters, stable for the network's name. */
export const bridgeOf = (network: string) => `gcfeg-${createHash("sha256").update(network).digest("hex").slice(0, 8)}`;

/**
 * Makes sure the agent's egress network exists as asked: a user-defined bridge with its own Linux
 * name (the policy matches it), IPv4 only, no inter-container traffic. A network of that name with
 * another subnet or bridge is replaced when no container uses it, and refused otherwise.
 */
export async function ensureNetwork(docker: Docker, name: string, subnet: string): Promise<{ bridge: string; gateway: string }> {
  const bridge = bridgeOf(name);
  const existing = await docker.getNetwork(name).inspect().catch(() => null) as Docker.NetworkInspectInfo | null;
  if (existing) {
    const ok = existing.Driver === "bridge" && existing.Options?.["com.docker.network.bridge.name"] === bridge && existing.IPAM?.Config?.[0]?.Subnet === subnet;
    if (ok) return { bridge, gateway: existing.IPAM!.Config![0]!.Gateway ?? gatewayOf(subnet) };
    if (Object.keys(existing.Containers ?? {}).length > 0) {
      throw new Error(`the Docker network ${name} exists with other settings and containers use it; remove them or choose --egress-network`);
    }
    await docker.getNetwork(name).remove();
  }
  await docker.createNetwork({
    Name: name,
    Driver: "bridge",
    CheckDuplicate: true,
    EnableIPv6: false,
    IPAM: { Driver: "default", Config: [{ Subnet: subnet, Gateway: gatewayOf(subnet) }] },
    Options: {
      "com.docker.network.bridge.name": bridge,
      // Honoured when dockerd manages iptables; where it does not, the agent's policy refuses it too.
      "com.docker.network.bridge.enable_icc": "false",
      "com.docker.network.bridge.enable_ip_masquerade": "true",
    },
    Labels: { [LABEL_MANAGED]: "true" },
  });
  return { bridge, gateway: gatewayOf(subnet) };
}

/** The subnet's first address, the bridge's own. */
export function gatewayOf(subnet: string): string {
  const [address] = subnet.split("/");
  const octets = address!.split(".").map(Number);
  octets[3] = octets[3]! + 1;
  return octets.join(".");
}
