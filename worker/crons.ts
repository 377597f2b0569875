/**
 * The Cron Triggers of wrangler.toml (keep both in step): monthly plan renewal, and the hourly
 * sweep (retention, the move of old task records to the archive and its retention: task-history/, usage rows past their dedup horizon: services/usage-pruning.ts, tasks recorded but never queued: services/orphans.ts, and waiting tasks no node seen in 24 hours could take: dispatch/refusals.ts). Not exported from the entry module: workerd takes every export there for a
 * handler or a class and refuses to start on a string.
 */
export const RENEWAL_CRON = "5 0 1 * *";
export const SWEEP_CRON = "17 * * * *";
