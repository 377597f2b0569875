/**
 * GCFAAS_D1_DELAY_MS of the start command (and LocalWorker's `d1DelayMs`): milliseconds added
 * before every D1 round trip, as a primary far from the Worker would (worker/db/d1-trouble.ts).
 * Checked here, before anything starts, so that a typo is a clear error rather than a Worker whose
 * every request fails.
 */
export const MAX_D1_DELAY_MS = 60_000;

export function d1DelayFrom(v: string | undefined, name = "GCFAAS_D1_DELAY_MS"): number {
  if (v === undefined || v.trim() === "") return 0;
  const n = Number(v.trim());
  if (!/^\d+$/.test(v.trim()) || n > MAX_D1_DELAY_MS) throw new Error(`${name} must be a whole number of milliseconds from 0 to ${MAX_D1_DELAY_MS}, not ${JSON.stringify(v)}`);
  return n;
}

/** The Worker's bindings for a delay: none when there is none (the Worker then uses D1 as is). */
export const d1DelayBinding = (ms: number): { D1_DELAY_MS?: string } => (ms ? { D1_DELAY_MS: String(ms) } : {});
