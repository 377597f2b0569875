/**
 * The Cron Triggers of wrangler.toml (keep both in step): monthly plan renewal; the hourly sweep
 * (sweep/hourly.ts: retention, usage rows past their dedup horizon, archived issue times past the
 * week, tasks recorded but never queued, waiting tasks no node seen in 24 hours could take); and,
 * half an hour from it in an invocation of its own, the archive sweep (sweep/archive-sweep.ts: the
 * archive's retention and the move of old task records to it: task-history/). Not exported from the entry module: workerd takes every export there for a
 * handler or a class and refuses to start on a string.
 */
export const RENEWAL_CRON = "5 0 1 * *";
export const SWEEP_CRON = "17 * * * *";
export const ARCHIVE_CRON = "47 * * * *";
