import type { Bindings } from "../env.js";
import { syncWaitsFor } from "../counters/client.js";

/** A lease outlives its wait by this much before it frees itself (its release never came). */
const LEASE_GRACE_MS = 15_000;

/**
 * Runs `wait` with the seconds a `Prefer: wait` call asked for when its account holds fewer than
 * `limit` synchronous waits, else with 0: past the limit a call is answered as without `Prefer`
 * (201 {id}), not refused. The lease is given back however the wait ends (answer, timeout, error);
 * `keepAlive` (the request's waitUntil) lets that happen after the client went away too, and a
 * request cut off all the same leaves a lease that expires on its own.
 */
export async function withSyncWait<T>(
  env: Pick<Bindings, "SYNC_WAITS">,
  accountId: string,
  limit: number,
  seconds: number,
  wait: (seconds: number) => Promise<T>,
  keepAlive: (p: Promise<unknown>) => void,
): Promise<T> {
  if (seconds <= 0 || limit <= 0) return wait(0);
  const leases = syncWaitsFor(env, accountId);
  const lease = await leases.acquire(limit, seconds * 1000 + LEASE_GRACE_MS).catch((e: unknown) => {
    // The counter out of reach costs the caller its wait, not its call.
    console.error(JSON.stringify({ level: "error", message: "taking a synchronous-wait lease failed", accountId, error: String(e) }));
    return null;
  });
  const waited = (async () => {
    try {
      return await wait(lease ? seconds : 0);
    } finally {
      if (lease) await leases.release(lease).catch((e: unknown) => console.error(JSON.stringify({ level: "error", message: "releasing a synchronous-wait lease failed; it expires on its own", accountId, error: String(e) })));
    }
  })();
  // Without it the runtime drops the request's work once its client has gone, release and all.
  if (lease) keepAlive(waited.catch(() => undefined));
  return waited;
}
