import { nextRun, parseCron } from "../../shared/time/cron.js";

/** setTimeout's longest delay: a longer one fires at once (Node warns and uses 1 ms). */
const MAX_DELAY_MS = 2 ** 31 - 1;

export interface CronClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const realClock: CronClock = { now: () => Date.now(), setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout) };

/**
 * Fires each of the Worker's Cron Triggers (wrangler.toml's `[triggers] crons`) at its times, in
 * UTC as Cloudflare does, on the local stack: Miniflare, like `wrangler dev`, fires none by itself,
 * so a service started locally would never renew its plans, sweep or archive. Each firing gets its
 * scheduled time (the minute it was due), and the next is planned from it, so a firing that takes
 * long never skips the next; a firing that fails is reported and the schedule goes on. Returns a
 * function that stops every timer.
 */
export function scheduleCrons(crons: string[], fire: (cron: string, scheduledTime: number) => Promise<void>, clock: CronClock = realClock): () => void {
  const timers = new Map<string, unknown>();
  let stopped = false;
  const plan = (expr: string, after: number) => {
    const due = nextRun(parseCron(expr), "UTC", after);
    if (due === null || stopped) return;
    const wait = (at: number) => {
      const delay = at - clock.now();
      timers.set(
        expr,
        clock.setTimeout(() => {
          if (stopped) return;
          // A monthly cron lies further ahead than one timer reaches: wait again until it is due.
          if (clock.now() < at) return wait(at);
          plan(expr, at);
          void fire(expr, at).catch(() => undefined);
        }, Math.min(Math.max(0, delay), MAX_DELAY_MS)),
      );
    };
    wait(due);
  };
  for (const expr of crons) {
    parseCron(expr); // a malformed trigger fails the start, not its first firing
    plan(expr, clock.now());
  }
  return () => {
    stopped = true;
    for (const t of timers.values()) clock.clearTimeout(t);
  };
}
