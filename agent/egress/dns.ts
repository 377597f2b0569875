import fs from "node:fs/promises";
import net from "node:net";
import path from "node:path";

/**
 * The resolvers functions with egress use. Docker's embedded resolver (127.0.0.11) needs the NAT
 * rules dockerd writes only when it manages iptables, and a resolver on the node's loopback (such
 * as systemd-resolved's 127.0.0.53) is the node itself, which functions never reach. So functions
 * get the node's upstream resolvers, or the operator's `--egress-dns`, written into a resolv.conf
 * of their own.
 */
export async function nodeResolvers(): Promise<string[]> {
  for (const file of ["/run/systemd/resolve/resolv.conf", "/etc/resolv.conf"]) {
    const text = await fs.readFile(file, "utf8").catch(() => "");
    const found = [...text.matchAll(/^\s*nameserver\s+(\S+)/gm)].map((m) => m[1]!).filter((ip) => net.isIPv4(ip) && !ip.startsWith("127."));
    if (found.length > 0) return found.slice(0, 3);
  }
  return [];
}

export function parseResolvers(text: string): string[] {
  return text.split(",").map((s) => s.trim()).filter(Boolean).map((ip) => {
    if (!net.isIPv4(ip)) throw new Error(`${JSON.stringify(ip)} is not an IPv4 address`);
    if (ip.startsWith("127.")) throw new Error(`${ip} is the node's loopback, which functions never reach; give an address they can`);
    return ip;
  });
}

/** Writes the resolv.conf bound read-only into every egress container; returns its path. */
export async function writeResolvConf(dir: string, resolvers: string[]): Promise<string> {
  const file = path.join(dir, "resolv.conf");
  const lines = resolvers.length > 0 ? resolvers.map((ip) => `nameserver ${ip}`) : ["# no resolver: this node's functions reach addresses, not names (agent --egress-dns)"];
  await fs.mkdir(dir, { recursive: true });
  await fs.writeFile(file, [...lines, "options ndots:0 timeout:2 attempts:2", ""].join("\n"), { mode: 0o644 });
  return file;
}
