import { describe, expect, it } from "vitest";
import path from "node:path";
import { unstable_readConfig } from "wrangler";
import { scheduleCrons, type CronClock } from "../../scripts/lib/local-crons.js";
import { ARCHIVE_CRONS, RENEWAL_CRON, SWEEP_CRON } from "../../worker/crons.js";

/** A clock whose time moves only when the test says, running each timer that falls due on the way; as Node's, a delay past 2^31 - 1 ms fires after 1 ms. */
function manualClock(start: number) {
  let now = start;
  let seq = 0;
  let set = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const clock: CronClock = {
    now: () => now,
    setTimeout: (fn, ms) => {
      set++;
      timers.set(++seq, { at: now + (ms > 2 ** 31 - 1 ? 1 : ms), fn });
      return seq;
    },
    clearTimeout: (h) => void timers.delete(h as number),
  };
  const advanceTo = async (t: number) => {
    for (;;) {
      const next = [...timers.entries()].filter(([, v]) => v.at <= t).sort((a, b) => a[1].at - b[1].at)[0];
      if (!next) break;
      timers.delete(next[0]);
      now = next[1].at;
      next[1].fn();
      await Promise.resolve();
    }
    now = t;
  };
  return { clock, advanceTo, pending: () => timers.size, timersSet: () => set };
}

const at = (iso: string) => Date.parse(iso);

describe("scheduleCrons (the local stack's Cron Triggers)", () => {
  it("fires each trigger at its minute, in UTC, with that minute as its scheduled time, hour after hour", async () => {
    const { clock, advanceTo } = manualClock(at("2026-11-27T08:20:00Z"));
    const fired: [string, string][] = [];
    scheduleCrons(["17 * * * *", "47 * * * *"], async (cron, t) => void fired.push([cron, new Date(t).toISOString()]), clock);
    await advanceTo(at("2026-11-27T10:00:00Z"));
    expect(fired).toEqual([
      ["47 * * * *", "2026-11-27T08:47:00.000Z"],
      ["17 * * * *", "2026-11-27T09:17:00.000Z"],
      ["47 * * * *", "2026-11-27T09:47:00.000Z"],
    ]);
  });

  it("waits for a monthly trigger beyond the longest timer, and fires it on the day", async () => {
    const { clock, advanceTo, timersSet } = manualClock(at("2026-11-27T08:20:00Z"));
    const fired: string[] = [];
    scheduleCrons(["5 0 1 * *"], async (_, t) => void fired.push(new Date(t).toISOString()), clock);
    await advanceTo(at("2027-01-15T00:00:00Z"));
    expect(fired).toEqual(["2026-12-01T00:05:00.000Z", "2027-01-01T00:05:00.000Z"]);
    // Waited in a few long timers (a month is past 2^31 ms), not in a loop of 1 ms ones.
    expect(timersSet()).toBeLessThan(10);
  });

  it("goes on after a run that fails, and stops every timer when stopped", async () => {
    const { clock, advanceTo, pending } = manualClock(at("2026-11-27T08:20:00Z"));
    let runs = 0;
    const stop = scheduleCrons(["17 * * * *"], async () => {
      runs++;
      throw new Error("the sweep failed");
    }, clock);
    await advanceTo(at("2026-11-27T10:20:00Z"));
    expect(runs).toBe(2);
    stop();
    expect(pending()).toBe(0);
    await advanceTo(at("2026-11-27T12:20:00Z"));
    expect(runs).toBe(2);
  });

  it("refuses a malformed trigger when it starts, not at its first run", () => {
    expect(() => scheduleCrons(["61 * * * *"], async () => undefined, manualClock(0).clock)).toThrow();
  });
});

describe("wrangler.toml's Cron Triggers", () => {
  it("are the ones the Worker tells apart (worker/crons.ts): renewal, the hourly sweep, and the archive sweep three times an hour", () => {
    const crons = unstable_readConfig({ config: path.join(import.meta.dirname, "../../wrangler.toml") }).triggers.crons;
    expect(crons).toEqual([RENEWAL_CRON, SWEEP_CRON, ...ARCHIVE_CRONS]);
  });
});
