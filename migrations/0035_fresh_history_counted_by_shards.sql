-- Custom migration (drizzle-kit generate --custom), no schema change. A database with no task
-- history at all (no row of `tasks`, nothing D1's archive moved or counted) is a new deployment:
-- every task it will ever have is counted by the dispatcher shards from its issue, so the
-- cutovers of migrations 0032 and 0033 (the next minute, the next UTC midnight) go back to 0. Its
-- tasks may then be rowless at once (TASK_ROWS = "shard": worker/task-life/shard-life.ts), not from
-- its first midnight. A deployment with any history keeps its cutovers.
UPDATE `issue_counts_from` SET `from_ms` = 0, `accounts_from_ms` = 0
WHERE NOT EXISTS (SELECT 1 FROM `tasks`)
  AND NOT EXISTS (SELECT 1 FROM `task_archive`)
  AND NOT EXISTS (SELECT 1 FROM `task_archive_minutes`)
  AND NOT EXISTS (SELECT 1 FROM `task_archive_counts`);
