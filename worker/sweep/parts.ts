import type { Bindings } from "../env.js";

/** D1 queries a sweep makes at most, when SWEEP_D1_QUERIES does not say: D1's 1,000 an invocation on Workers Paid, less a margin. */
export const DEFAULT_SWEEP_D1_QUERIES = 900;

export function sweepQueries(env: Pick<Bindings, "SWEEP_D1_QUERIES">): number {
  const n = Number(env.SWEEP_D1_QUERIES ?? DEFAULT_SWEEP_D1_QUERIES);
  return Number.isInteger(n) && n > 0 ? n : DEFAULT_SWEEP_D1_QUERIES;
}

export type Log = (msg: string, n: number) => void;

/** Runs a sweep's parts one after another: a part that fails is logged and the others still run; what a part leaves, its next run takes up. */
export async function runParts(parts: [string, () => Promise<number>][], log: Log): Promise<void> {
  for (const [msg, part] of parts) {
    try {
      log(msg, await part());
    } catch (e) {
      console.error(JSON.stringify({ level: "error", msg: `the sweep's part failed: ${msg}`, error: String(e) }));
    }
  }
}
