import { nextRuns, parseCron } from "./cron.js";

/** A schedule as far as its next runs go. */
export interface Timing {
  active: boolean;
  cron: string;
  timezone: string;
}

/** The next runs the service will issue (the same computation as its timers); none while inactive. */
export function upcoming(s: Timing, count: number, now = Date.now()): number[] {
  if (!s.active) return [];
  try {
    return nextRuns(parseCron(s.cron), s.timezone, now, count);
  } catch {
    return [];
  }
}

/** A run as the schedule's zone reads it, e.g. "Mon 23 Nov 09:15". */
export const fmtLocal = (at: number, timeZone: string) =>
  new Intl.DateTimeFormat("en-GB", { timeZone, weekday: "short", day: "2-digit", month: "short", hour: "2-digit", minute: "2-digit", hourCycle: "h23" }).format(at).replace(",", "");
