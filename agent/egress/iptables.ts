import { execFile, spawn } from "node:child_process";
import fs from "node:fs/promises";
import { promisify } from "node:util";
import { chainsOf, jumps, restoreInput, restoreInput6, type EgressPolicy } from "./rules.js";

const run = promisify(execFile);

/** `-w`: wait for the xtables lock that dockerd or another agent may hold, instead of failing. */
const tool = (v6: boolean) => (v6 ? "ip6tables" : "iptables");

async function restore(v6: boolean, input: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn(`${tool(v6)}-restore`, ["-w", "--noflush"], { stdio: ["pipe", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`${tool(v6)}-restore failed (${code}): ${err.trim()}`))));
    child.stdin.end(input);
  });
}

async function rules(v6: boolean, table: string, chain: string): Promise<string[]> {
  const { stdout } = await run(tool(v6), ["-w", "-t", table, "-S", chain]);
  return stdout.split("\n").filter((l) => l.startsWith("-A "));
}

/**
 * Puts each jump first in its chain (once). Docker, when it manages iptables, inserts its own
 * jumps at the top of FORWARD when it starts; ours must come before them, or its "accept what
 * leaves a bridge" would pass what the policy refuses. Returns whether anything changed.
 */
async function jumpsFirst(v6: boolean, wanted: string[][]): Promise<boolean> {
  let changed = false;
  const byChain = new Map<string, string[][]>();
  for (const j of wanted) byChain.set(`${j[0]} ${j[1]}`, [...(byChain.get(`${j[0]} ${j[1]}`) ?? []), j]);
  for (const group of byChain.values()) {
    const [table, chain] = group[0] as [string, string];
    const texts = group.map((j) => `-A ${chain} ${j.slice(2).join(" ")}`);
    const present = await rules(v6, table, chain);
    const inPlace = texts.every((t, i) => present[i] === t) && present.filter((p) => texts.includes(p)).length === texts.length;
    if (inPlace) continue;
    changed = true;
    for (const j of group) {
      // Every copy goes (a crashed agent's, a half-applied start), then one goes back first.
      while (present.includes(`-A ${chain} ${j.slice(2).join(" ")}`)) {
        await run(tool(v6), ["-w", "-t", table, "-D", chain, ...j.slice(2)]);
        present.splice(present.indexOf(`-A ${chain} ${j.slice(2).join(" ")}`), 1);
      }
    }
    for (const j of [...group].reverse()) await run(tool(v6), ["-w", "-t", table, "-I", chain, "1", ...j.slice(2)]);
  }
  return changed;
}

/** What the kernel needs for the policy to hold: forwarding on, and bridged frames through iptables. */
export async function kernelSettings(): Promise<void> {
  try {
    await fs.access("/proc/sys/net/bridge/bridge-nf-call-iptables");
  } catch {
    await run("modprobe", ["br_netfilter"]).catch(() => undefined);
  }
  const settings: [string, string][] = [
    // Without it, two functions on the bridge talk frame to frame and FORWARD never sees them.
    ["/proc/sys/net/bridge/bridge-nf-call-iptables", "1"],
    ["/proc/sys/net/bridge/bridge-nf-call-ip6tables", "1"],
    ["/proc/sys/net/ipv4/ip_forward", "1"],
  ];
  for (const [file, value] of settings) {
    try {
      if ((await fs.readFile(file, "utf8")).trim() !== value) await fs.writeFile(file, value);
    } catch (err) {
      throw new Error(`--egress needs ${file} = ${value} (${(err as Error).message}); load br_netfilter and run the agent as root`);
    }
  }
}

/** Writes the policy (replacing any earlier one of this bridge) and puts its jumps first. */
export async function applyPolicy(p: EgressPolicy): Promise<void> {
  await restore(false, restoreInput(p));
  await restore(true, restoreInput6(p.bridge));
  const j = jumps(p);
  await jumpsFirst(false, j.v4);
  await jumpsFirst(true, j.v6);
}

/** Puts the jumps back first where something moved them; true when it had to. */
export async function reassertJumps(p: EgressPolicy): Promise<boolean> {
  const j = jumps(p);
  const a = await jumpsFirst(false, j.v4);
  const b = await jumpsFirst(true, j.v6);
  return a || b;
}

/** Removes a bridge's policy: its jumps and its chains (tests, and `--egress` turned off). */
export async function removePolicy(p: Pick<EgressPolicy, "bridge" | "subnet">): Promise<void> {
  const j = jumps(p);
  for (const [v6, list] of [[false, j.v4], [true, j.v6]] as const) {
    for (const rule of list) {
      while (await run(tool(v6), ["-w", "-t", rule[0]!, "-C", rule[1]!, ...rule.slice(2)]).then(() => true, () => false)) {
        await run(tool(v6), ["-w", "-t", rule[0]!, "-D", rule[1]!, ...rule.slice(2)]);
      }
    }
  }
  const c = chainsOf(p.bridge);
  for (const chain of [c.out, c.input, c.back]) {
    for (const v6 of [false, true]) {
      await run(tool(v6), ["-w", "-F", chain]).catch(() => undefined);
      await run(tool(v6), ["-w", "-X", chain]).catch(() => undefined);
    }
  }
}
