/** "Unix time in seconds, as a string" fields; null for what has not happened yet. */
export const unixSeconds = (ms: number | null | undefined): string | null =>
  ms == null ? null : String(Math.floor(ms / 1000));

/** ISO 8601 UTC fields. */
export const iso = (ms: number | null | undefined): string | null => (ms == null ? null : new Date(ms).toISOString());

export const DAY_MS = 86_400_000;
export const HOUR_MS = 3_600_000;

/** 00:00 UTC of the day holding `now`. */
export const startOfUtcDay = (now: number) => now - (now % DAY_MS);
