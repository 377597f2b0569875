import { createHash } from "node:crypto";
import { DENIED_V4, formatCidr, type Cidr } from "./ranges.js";

/** One node's egress network, as the policy needs it. */
export interface EgressPolicy {
  /** The Linux bridge Docker made for the agent's egress network. */
  bridge: string;
  /** The network's IPv4 subnet (functions' addresses). */
  subnet: string;
  /** Private ranges the operator allows (`--egress-allow`). */
  allow: Cidr[];
  /** Resolvers the functions use: only their port 53 is open, wherever they are. */
  dns: string[];
}

/** The chains one egress network's policy lives in, named after its bridge so that two networks never share one. */
export function chainsOf(bridge: string): { out: string; input: string; back: string } {
  const tag = createHash("sha256").update(bridge).digest("hex").slice(0, 8).toUpperCase();
  return { out: `GCFEG-${tag}-OUT`, input: `GCFEG-${tag}-IN`, back: `GCFEG-${tag}-BACK` };
}

/**
 * The policy as `iptables-restore --noflush` input: declaring a chain there empties it, so applying
 * it again replaces the policy whole, never appends to it.
 *
 * - OUT (FORWARD, packets from the bridge): replies pass; another function's container (the same
 *   bridge: br_netfilter makes bridged frames cross FORWARD) is refused; the resolvers' port 53 and
 *   the operator's ranges pass; every special-purpose range is refused; the rest (public) passes.
 * - IN (INPUT, packets from the bridge to the node itself, any of its addresses): refused, but
 *   replies to what the node opened. The agent's, dockerd's and the control plane's ports are there.
 * - BACK (FORWARD, packets into the bridge): only replies. Nothing outside opens a connection to a
 *   function.
 *
 * Refusals answer at once (a TCP reset, an ICMP "administratively prohibited"), so a function sees
 * "connection refused" instead of waiting for its timeout.
 */
export function restoreInput(p: EgressPolicy): string {
  const c = chainsOf(p.bridge);
  const reject = (match: string) => [`-A ${c.out} ${match} -p tcp -j REJECT --reject-with tcp-reset`, `-A ${c.out} ${match} -j REJECT --reject-with icmp-admin-prohibited`];
  const lines = [
    "*filter",
    `:${c.out} - [0:0]`,
    `:${c.input} - [0:0]`,
    `:${c.back} - [0:0]`,
    `-A ${c.out} -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT`,
    ...reject(`-o ${p.bridge}`),
    ...p.dns.flatMap((ip) => [`-A ${c.out} -d ${ip}/32 -p udp --dport 53 -j ACCEPT`, `-A ${c.out} -d ${ip}/32 -p tcp --dport 53 -j ACCEPT`]),
    ...p.allow.map((r) => `-A ${c.out} -d ${formatCidr(r)} -j ACCEPT`),
    ...DENIED_V4.flatMap((d) => reject(`-d ${d.cidr}`)),
    `-A ${c.out} -j ACCEPT`,
    `-A ${c.input} -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT`,
    `-A ${c.input} -p tcp -j REJECT --reject-with tcp-reset`,
    `-A ${c.input} -j REJECT --reject-with icmp-admin-prohibited`,
    `-A ${c.back} -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT`,
    `-A ${c.back} -j DROP`,
    "COMMIT",
    "",
  ];
  return lines.join("\n");
}

/** IPv6 is not offered: every IPv6 packet from the bridge is dropped, to the node and beyond. */
export function restoreInput6(bridge: string): string {
  const c = chainsOf(bridge);
  return ["*filter", `:${c.out} - [0:0]`, `-A ${c.out} -j DROP`, "COMMIT", ""].join("\n");
}

/** The jumps into the chains: [table, chain, rule…], each checked with -C and inserted first with -I. */
export function jumps(p: Pick<EgressPolicy, "bridge" | "subnet">): { v4: string[][]; v6: string[][] } {
  const c = chainsOf(p.bridge);
  return {
    v4: [
      ["filter", "FORWARD", "-i", p.bridge, "-j", c.out],
      ["filter", "FORWARD", "-o", p.bridge, "-j", c.back],
      ["filter", "INPUT", "-i", p.bridge, "-j", c.input],
      // dockerd runs here with --iptables=false and so masquerades nothing itself.
      ["nat", "POSTROUTING", "-s", p.subnet, "!", "-o", p.bridge, "-j", "MASQUERADE"],
    ],
    v6: [
      ["filter", "FORWARD", "-i", p.bridge, "-j", c.out],
      ["filter", "INPUT", "-i", p.bridge, "-j", c.out],
    ],
  };
}
