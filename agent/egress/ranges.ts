import net from "node:net";

/** An IPv4 range in CIDR form, e.g. 10.0.0.0/8. */
export interface Cidr {
  address: string;
  prefix: number;
}

/**
 * What a function with egress never reaches, whatever the operator allows beside it: the IANA
 * special-purpose ranges (RFC 6890 and successors). Public addresses are everything else.
 * IPv6 is not offered at all (agent/egress/rules.ts rejects every IPv6 packet from the bridge),
 * which covers `::1`, `fc00::/7` and `fe80::/10` and every other IPv6 range at once.
 */
export const DENIED_V4: readonly { cidr: string; what: string }[] = [
  { cidr: "0.0.0.0/8", what: "this network" },
  { cidr: "10.0.0.0/8", what: "private (RFC 1918)" },
  { cidr: "100.64.0.0/10", what: "shared address space (carrier-grade NAT)" },
  { cidr: "127.0.0.0/8", what: "loopback" },
  { cidr: "169.254.0.0/16", what: "link-local, the cloud metadata address 169.254.169.254" },
  { cidr: "172.16.0.0/12", what: "private (RFC 1918)" },
  { cidr: "192.0.0.0/24", what: "IETF protocol assignments" },
  { cidr: "192.0.2.0/24", what: "documentation (TEST-NET-1)" },
  { cidr: "192.88.99.0/24", what: "6to4 relay anycast (deprecated)" },
  { cidr: "192.168.0.0/16", what: "private (RFC 1918)" },
  { cidr: "198.18.0.0/15", what: "benchmarking" },
  { cidr: "198.51.100.0/24", what: "documentation (TEST-NET-2)" },
  { cidr: "203.0.113.0/24", what: "documentation (TEST-NET-3)" },
  { cidr: "224.0.0.0/4", what: "multicast" },
  { cidr: "240.0.0.0/4", what: "reserved, and the broadcast address" },
];

/** Parses "a.b.c.d/n" (IPv4 only), normalized to its network address; throws a sentence otherwise. */
export function parseCidr(text: string): Cidr {
  const m = /^(\d{1,3}(?:\.\d{1,3}){3})\/(\d{1,2})$/.exec(text.trim());
  if (!m || !net.isIPv4(m[1]!)) throw new Error(`${JSON.stringify(text)} is not an IPv4 range such as 10.0.5.0/24`);
  const prefix = Number(m[2]);
  if (prefix > 32) throw new Error(`${JSON.stringify(text)}: the prefix length must be 0-32`);
  const value = (toInt(m[1]!) & maskOf(prefix)) >>> 0;
  return { address: fromInt(value), prefix };
}

export const formatCidr = (c: Cidr) => `${c.address}/${c.prefix}`;

/** Whether `inner` lies entirely inside `outer`. */
export function within(inner: Cidr, outer: Cidr): boolean {
  return inner.prefix >= outer.prefix && ((toInt(inner.address) & maskOf(outer.prefix)) >>> 0) === toInt(outer.address);
}

/**
 * The operator's `--egress-allow` list: named private ranges a node's functions may reach (a
 * database on the LAN). Only ranges inside the denied ones make sense (public addresses are
 * allowed anyway), and never loopback or link-local: the first is the node itself, the second holds
 * the cloud metadata service, whose credentials belong to the host.
 */
export function parseAllowList(text: string | undefined): Cidr[] {
  if (!text || !text.trim()) return [];
  return text.split(",").map((part) => {
    const cidr = parseCidr(part);
    const denied = DENIED_V4.map((d) => ({ ...d, range: parseCidr(d.cidr) }));
    const inside = denied.find((d) => within(cidr, d.range));
    if (!inside) throw new Error(`${formatCidr(cidr)} is not a private or reserved range: public addresses need no allowance`);
    if (inside.cidr === "127.0.0.0/8" || inside.cidr === "169.254.0.0/16" || inside.cidr === "0.0.0.0/8") {
      throw new Error(`${formatCidr(cidr)} (${inside.what}) can never be allowed`);
    }
    return cidr;
  });
}

function toInt(address: string): number {
  return address.split(".").reduce((n, octet) => (n << 8) | Number(octet), 0) >>> 0;
}

function fromInt(n: number): string {
  return [24, 16, 8, 0].map((s) => (n >>> s) & 255).join(".");
}

function maskOf(prefix: number): number {
  return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}
