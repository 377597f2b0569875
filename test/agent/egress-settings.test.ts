import { describe, expect, it } from "vitest";
import { loadConfig, type AgentConfig } from "../../agent/config.js";
import { restoreInput } from "../../agent/egress/rules.js";
import { parseAllowList } from "../../agent/egress/ranges.js";

/** The agent's egress settings, read at start: a bad value stops it with a message naming it. */
const base = ["--url", "http://127.0.0.1:8787", "--node-id", "n1", "--token", `gca_${"a".repeat(64)}`];
const load = (args: string[], env: NodeJS.ProcessEnv = {}) => loadConfig([...base, ...args], env) as AgentConfig;

describe("agent --egress settings", () => {
  it("are off by default, on a network and subnet of their own", () => {
    const c = load([]);
    expect(c.egress).toBe(false);
    expect(c.egressAllow).toEqual([]);
    expect(c.egressNetwork).toBe("gcfaas-egress");
    expect(c.egressSubnet).toBe("10.213.0.0/22");
  });

  it("take private ranges to allow, from the flag or the environment", () => {
    expect(load(["--egress", "--egress-allow", "10.0.5.0/24,192.168.7.9/32"]).egressAllow).toEqual([
      { address: "10.0.5.0", prefix: 24 },
      { address: "192.168.7.9", prefix: 32 },
    ]);
    expect(load([], { GCFAAS_EGRESS: "1", GCFAAS_EGRESS_ALLOW: "172.20.0.0/16" }).egressAllow).toEqual([{ address: "172.20.0.0", prefix: 16 }]);
  });

  it("refuse ranges that can never be allowed, or need no allowance", () => {
    expect(() => load(["--egress-allow", "169.254.169.254/32"])).toThrow(/egressAllow: .*can never be allowed/);
    expect(() => load(["--egress-allow", "127.0.0.0/8"])).toThrow(/can never be allowed/);
    expect(() => load(["--egress-allow", "8.8.8.0/24"])).toThrow(/not a private or reserved range/);
    expect(() => load(["--egress-allow", "10.0.0.0/33"])).toThrow(/egressAllow/);
    expect(() => load(["--egress-allow", "10.0.0.0"])).toThrow(/not an IPv4 range/);
    expect(() => load(["--egress-allow", "fd00::/8"])).toThrow(/not an IPv4 range/);
  });

  it("refuse a loopback resolver and a public or oversized subnet", () => {
    expect(() => load(["--egress-dns", "127.0.0.53"])).toThrow(/egressDns: .*loopback/);
    expect(load(["--egress-dns", "10.0.0.2, 9.9.9.9"]).egressDns).toEqual(["10.0.0.2", "9.9.9.9"]);
    expect(() => load(["--egress-subnet", "11.0.0.0/24"])).toThrow(/egressSubnet: must be a private range/);
    expect(() => load(["--egress-subnet", "10.0.0.0/8"])).toThrow(/prefix length must be 16-28/);
  });
});

describe("the egress policy", () => {
  const rules = restoreInput({ bridge: "gcfeg-test", subnet: "10.213.0.0/22", allow: parseAllowList("10.0.5.0/24"), dns: ["10.0.0.2"] }).split("\n");
  const index = (pattern: RegExp) => rules.findIndex((r) => pattern.test(r));

  it("refuses another container on the bridge before anything it allows", () => {
    expect(index(/-o gcfeg-test .*REJECT/)).toBeLessThan(index(/-d 10\.0\.0\.2\/32 -p udp --dport 53 -j ACCEPT/));
    expect(index(/-o gcfeg-test .*REJECT/)).toBeLessThan(index(/-d 10\.0\.5\.0\/24 -j ACCEPT/));
  });

  it("lets the operator's ranges and the resolvers' port 53 through before the special ranges are refused, and accepts the rest last", () => {
    expect(index(/-d 10\.0\.5\.0\/24 -j ACCEPT/)).toBeLessThan(index(/-d 10\.0\.0\.0\/8 .*REJECT/));
    expect(index(/-d 169\.254\.0\.0\/16 .*REJECT/)).toBeGreaterThan(0);
    const out = rules.filter((r) => r.startsWith("-A GCFEG-") && r.includes("-OUT "));
    expect(out.at(-1)).toMatch(/-OUT -j ACCEPT$/);
  });

  it("refuses everything to the node itself but replies", () => {
    const input = rules.filter((r) => r.startsWith("-A ") && r.includes("-IN "));
    expect(input[0]).toMatch(/ESTABLISHED,RELATED -j ACCEPT/);
    expect(input.slice(1).every((r) => /REJECT/.test(r))).toBe(true);
  });
});
