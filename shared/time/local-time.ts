/**
 * Wall-clock arithmetic in an IANA time zone with nothing but Intl (workerd has no tz database
 * of its own to call). Daylight-saving days are 23 or 25 hours long: nothing here assumes 24.
 */
export interface Wall {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone, hourCycle: "h23", year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit",
    });
    formatters.set(timeZone, f);
  }
  return f;
}

export function wallClock(now: number, timeZone: string): Wall {
  const parts: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(new Date(now))) if (p.type !== "literal") parts[p.type] = Number(p.value);
  return { year: parts.year!, month: parts.month!, day: parts.day!, hour: parts.hour! % 24, minute: parts.minute!, second: parts.second! };
}

/** The local calendar day, e.g. "2026-11-21": the key daily counters reset on. */
export function localDay(now: number, timeZone: string): string {
  const w = wallClock(now, timeZone);
  return `${w.year}-${String(w.month).padStart(2, "0")}-${String(w.day).padStart(2, "0")}`;
}

/** Minutes since local midnight. */
export function localMinutes(now: number, timeZone: string): number {
  const w = wallClock(now, timeZone);
  return w.hour * 60 + w.minute;
}

const asUtc = (w: Wall) => Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);

/** Instant of the next local midnight: wall time minus the zone's offset at that instant. */
export function nextLocalMidnight(now: number, timeZone: string): number {
  const w = wallClock(now, timeZone);
  const target = Date.UTC(w.year, w.month - 1, w.day + 1);
  let t = target - (asUtc(w) - now);
  // Correct once for an offset that changes before midnight (a daylight-saving switch).
  t = target - (asUtc(wallClock(t, timeZone)) - t);
  return t;
}

/** "HH:MM" → minutes. */
export const minutesOf = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

/** From inclusive, to exclusive; from > to wraps past midnight; from = to is all day. */
export function withinWindow(minutes: number, from: string, to: string): boolean {
  const f = minutesOf(from);
  const t = minutesOf(to);
  if (f === t) return true;
  return f < t ? minutes >= f && minutes < t : minutes >= f || minutes < t;
}
