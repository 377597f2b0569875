/**
 * Standard five-field cron (minute hour day-of-month month day-of-week) with `*`, lists, ranges,
 * steps and month/day names, evaluated in an IANA time zone with nothing but Intl: workerd has no
 * tz database of its own, and no cron library we could vet fits the runtime and its DST rules.
 *
 * As in Vixie cron, when both day fields are restricted a day matches either of them; day-of-week
 * 7 is Sunday as 0 is. A local minute that does not exist (spring forward) never runs; one that
 * happens twice (fall back) runs once, at its first occurrence.
 */
import { wallClock, type Wall } from "./local-time.js";

export interface Cron {
  minute: Set<number>;
  hour: Set<number>;
  dayOfMonth: Set<number>;
  month: Set<number>;
  dayOfWeek: Set<number>;
  /** Whether the day field was restricted (not `*`): decides how the two day fields combine. */
  domRestricted: boolean;
  dowRestricted: boolean;
}

interface FieldSpec {
  name: keyof Omit<Cron, "domRestricted" | "dowRestricted">;
  label: string;
  min: number;
  max: number;
  names?: string[];
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

const FIELDS: FieldSpec[] = [
  { name: "minute", label: "minute", min: 0, max: 59 },
  { name: "hour", label: "hour", min: 0, max: 23 },
  { name: "dayOfMonth", label: "day of month", min: 1, max: 31 },
  { name: "month", label: "month", min: 1, max: 12, names: MONTHS },
  { name: "dayOfWeek", label: "day of week", min: 0, max: 7, names: DAYS },
];

/** The longest each month can be (February in a leap year). */
const MONTH_MAX_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

export class CronError extends Error {}

function value(text: string, f: FieldSpec): number {
  const named = f.names?.indexOf(text.toLowerCase()) ?? -1;
  if (named >= 0) return named + f.min;
  if (!/^\d{1,2}$/.test(text)) throw new CronError(`${f.label} field: "${text}" is not a number${f.names ? " or a name" : ""}`);
  const n = Number(text);
  if (n < f.min || n > f.max) throw new CronError(`${f.label} field: ${n} is outside ${f.min}-${f.max}`);
  return n;
}

function parseField(text: string, f: FieldSpec): Set<number> {
  const out = new Set<number>();
  for (const part of text.split(",")) {
    const m = /^([^/]+)(?:\/(.+))?$/.exec(part);
    if (!m) throw new CronError(`${f.label} field: "${part}" is not a value, range or step`);
    const [, range, stepText] = m as unknown as [string, string, string | undefined];
    let step = 1;
    if (stepText !== undefined) {
      if (!/^\d{1,2}$/.test(stepText) || Number(stepText) < 1) throw new CronError(`${f.label} field: step "${stepText}" must be a positive integer`);
      step = Number(stepText);
    }
    let lo: number;
    let hi: number;
    if (range === "*") [lo, hi] = [f.min, f.max];
    else if (range.includes("-")) {
      const [a, b, ...rest] = range.split("-");
      if (rest.length || a === undefined || b === undefined) throw new CronError(`${f.label} field: "${range}" is not a range`);
      // "fri-sun" ends on Sunday: its name counts as 7 at the end of a range.
      [lo, hi] = [value(a, f), f.name === "dayOfWeek" && b.toLowerCase() === "sun" ? 7 : value(b, f)];
      if (lo > hi) throw new CronError(`${f.label} field: range ${range} runs backwards`);
    } else {
      lo = value(range, f);
      // "5/15" is "5-max/15", as in Vixie cron.
      hi = stepText === undefined ? lo : f.max;
    }
    for (let v = lo; v <= hi; v += step) out.add(f.name === "dayOfWeek" && v === 7 ? 0 : v);
  }
  return out;
}

/** Parses an expression or throws CronError saying which field is wrong and why. */
export function parseCron(expr: string): Cron {
  const parts = expr.trim().split(/\s+/);
  if (parts.length !== 5) throw new CronError(`must have five fields (minute hour day-of-month month day-of-week), not ${expr.trim() ? parts.length : 0}`);
  const sets = Object.fromEntries(FIELDS.map((f, i) => [f.name, parseField(parts[i]!, f)])) as Omit<Cron, "domRestricted" | "dowRestricted">;
  const cron: Cron = { ...sets, domRestricted: parts[2] !== "*", dowRestricted: parts[4] !== "*" };
  // "0 0 31 2 *" would be accepted by a lax parser and then never run: refuse it now.
  if (!cron.dowRestricted && ![...cron.month].some((m) => [...cron.dayOfMonth].some((d) => d <= MONTH_MAX_DAYS[m - 1]!)))
    throw new CronError("day of month and month never meet: the expression would never run");
  return cron;
}

function dayMatches(c: Cron, year: number, month: number, day: number): boolean {
  if (!c.month.has(month)) return false;
  const dom = c.dayOfMonth.has(day);
  const dow = c.dayOfWeek.has(new Date(Date.UTC(year, month - 1, day)).getUTCDay());
  if (c.domRestricted && c.dowRestricted) return dom || dow;
  return dom && dow;
}

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
const sameMinute = (a: Wall, b: { year: number; month: number; day: number; hour: number; minute: number }) =>
  a.year === b.year && a.month === b.month && a.day === b.day && a.hour === b.hour && a.minute === b.minute;

/**
 * The zone's UTC offsets (ms) a day either side of `around`: zones change offset at most twice a
 * year, so these hold every offset in force within a day of it.
 */
function offsetsAround(around: number, timeZone: string): number[] {
  const offsets = new Set<number>();
  for (const probe of [around - 26 * HOUR_MS, around + 26 * HOUR_MS]) {
    const w = wallClock(probe, timeZone);
    offsets.add(Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute) - Math.floor(probe / MINUTE_MS) * MINUTE_MS);
  }
  return [...offsets];
}

/**
 * The first instant whose wall clock in `timeZone` reads this local minute, or null when the minute
 * does not exist there (both readings of a minute that happens twice come from offsetsAround).
 */
export function instantOfLocal(year: number, month: number, day: number, hour: number, minute: number, timeZone: string): number | null {
  const asUtc = Date.UTC(year, month - 1, day, hour, minute);
  const readings = offsetsAround(asUtc, timeZone)
    .map((o) => asUtc - o)
    .filter((t) => sameMinute(wallClock(t, timeZone), { year, month, day, hour, minute }));
  return readings.length ? Math.min(...readings) : null;
}

/** How far ahead a search goes: 8 years hold a 29th of February even across a skipped leap year. */
const SEARCH_DAYS = 366 * 8 + 2;

/**
 * The next `count` run instants strictly after `after` (ms), in order. Local days are walked from
 * the day before `after`'s (a run early in that day can still lie after `after` in another offset).
 */
export function nextRuns(c: Cron, timeZone: string, after: number, count: number): number[] {
  const out: number[] = [];
  const start = wallClock(after, timeZone);
  const hours = [...c.hour].sort((a, b) => a - b);
  const minutes = [...c.minute].sort((a, b) => a - b);
  // A local minute whose latest possible reading is not after `after` is past: skipped without
  // asking Intl, which is most of the cost of a search.
  const smallestOffset = Math.min(...offsetsAround(after, timeZone));
  // The search gives up SEARCH_DAYS after the last run found (or the start): only an expression
  // refused by parseCron could go that long without a run.
  for (let i = -1, lastHit = -1; i - lastHit <= SEARCH_DAYS && out.length < count; i++) {
    const d = new Date(Date.UTC(start.year, start.month - 1, start.day + i));
    const [y, m, day] = [d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate()];
    if (!dayMatches(c, y, m, day)) continue;
    for (const h of hours) {
      for (const min of minutes) {
        if (Date.UTC(y, m - 1, day, h, min) - smallestOffset <= after) continue;
        const t = instantOfLocal(y, m, day, h, min, timeZone);
        if (t !== null && t > after && (out.length === 0 || t > out[out.length - 1]!)) {
          out.push(t);
          lastHit = i;
        }
        if (out.length >= count) return out;
      }
    }
  }
  return out;
}

/** The next run strictly after `after`, or null (only for an expression that never meets a day). */
export const nextRun = (c: Cron, timeZone: string, after: number): number | null => nextRuns(c, timeZone, after, 1)[0] ?? null;
