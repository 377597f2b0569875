/**
 * The Cron Triggers of wrangler.toml (keep both in step): monthly plan renewal; the hourly sweep
 * (sweep/hourly.ts: retention, usage rows past their dedup horizon, archived issue times past the
 * week, tasks recorded but never queued, waiting tasks no node seen in 24 hours could take); and the
 * archive sweep (sweep/archive-sweep.ts: the archive's retention and the move of old task records to
 * it: task-history/), three times an hour, each firing an invocation of its own and so its own D1
 * queries. Three hourly triggers rather than one every 20 minutes: each stays a once-an-hour
 * schedule, and five triggers are what a Workers Free account may hold. Runs that overlap are safe
 * (the move commits only rows still as it read them: task-history/archiver.ts). Not exported from the
 * entry module: workerd takes every export there for a handler or a class and refuses to start on a
 * string.
 */
export const RENEWAL_CRON = "5 0 1 * *";
export const SWEEP_CRON = "17 * * * *";
export const ARCHIVE_CRONS = ["7 * * * *", "27 * * * *", "47 * * * *"] as const;
/** One of them, for tests and the benchmark that fire the archive sweep. */
export const ARCHIVE_CRON = ARCHIVE_CRONS[2];
