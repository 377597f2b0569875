import fs from "node:fs";

/** Percentile of a sample (nearest rank), in the sample's unit. */
export function percentile(sample: number[], p: number): number {
  if (!sample.length) return NaN;
  const sorted = [...sample].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const ms = (n: number) => (Number.isFinite(n) ? `${n.toFixed(2)} ms` : "-");

/** Prints rows as an aligned plain-text table. */
export function printTable(title: string, header: string[], rows: (string | number)[][]): void {
  const cells = [header, ...rows.map((r) => r.map(String))];
  const widths = header.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  const line = (r: string[]) => r.map((c, i) => c.padEnd(widths[i]!)).join("  ");
  console.log(`\n${title}\n${line(header)}\n${widths.map((w) => "-".repeat(w)).join("  ")}`);
  for (const r of cells.slice(1)) console.log(line(r));
}

export async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const t0 = performance.now();
  const v = await fn();
  return [performance.now() - t0, v];
}

/** Runs `fn(i)` for i in [0, n) from `clients` concurrent loops; latencies (ms) and the rate per second. */
export async function underLoad(n: number, clients: number, fn: (i: number) => Promise<unknown>): Promise<{ lat: number[]; rate: number }> {
  let next = 0;
  const lat: number[] = [];
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < n) {
        const i = next++;
        lat.push((await timed(() => fn(i)))[0]);
      }
    }),
  );
  return { lat, rate: n / ((performance.now() - t0) / 1000) };
}

/**
 * CPU time (ms, user + system) used so far by a process and its descendants, from /proc (Linux):
 * what the local Worker host (workerd and its helpers) spends, read before and after a run.
 */
export function treeCpuMs(rootPid: number): number {
  return [...treeCpuByProgram(rootPid).values()].reduce((a, b) => a + b, 0);
}

/**
 * treeCpuMs split by program name (/proc/<pid>/comm): `workerd` is the Worker, its D1, R2 and
 * Durable Objects; `node` is the local server's Node side (Miniflare, the front door that proxies
 * every request and WebSocket), which production does not have.
 */
export function treeCpuByProgram(rootPid: number): Map<string, number> {
  const parent = new Map<number, number>();
  const ticks = new Map<number, number>();
  const program = new Map<number, string>();
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      parent.set(Number(name), Number(f[1]));
      ticks.set(Number(name), Number(f[11]) + Number(f[12]));
      program.set(Number(name), stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")));
    } catch {
      /* the process ended meanwhile */
    }
  }
  const inTree = (pid: number): boolean => pid === rootPid || (parent.has(pid) && pid > 1 && inTree(parent.get(pid)!));
  const out = new Map<string, number>();
  // USER_HZ is 100 on Linux
  for (const [pid, t] of ticks) if (inTree(pid)) out.set(program.get(pid)!, (out.get(program.get(pid)!) ?? 0) + (t * 1000) / 100);
  return out;
}
