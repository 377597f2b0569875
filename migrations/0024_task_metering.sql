-- Custom SQL migration file, put your code below! --
-- A task's outcome is metered by the update that finishes its row, in the same statement: the row
-- moves from unfinished to finished once, so an outcome committed again (a batch whose answer was
-- lost) meters nothing, whenever it comes. Until now a usage row per task (its id the key) did
-- that, for USAGE_DEDUP_DAYS: 164 B a task in D1's window, and a fourth statement in every outcome
-- batch. Metered as before: not cancelled (410), run on a node, memory as asked or the default
-- (worker/billing/billed-memory.ts), in the UTC month of the finish (billing/plans.ts, periodOf).
CREATE TRIGGER `tasks_metered` AFTER UPDATE OF `finished_at` ON `tasks`
WHEN OLD.`finished_at` IS NULL AND NEW.`finished_at` IS NOT NULL AND NEW.`status` <> 410 AND NEW.`node` IS NOT NULL
BEGIN
  INSERT INTO `usage_totals` (`account_id`, `period`, `invocations`, `duration_ms`, `mib_ms`)
  VALUES (
    NEW.`account_id`, strftime('%Y-%m', NEW.`finished_at` / 1000, 'unixepoch'), 1, coalesce(NEW.`duration_ms`, 0),
    coalesce(NEW.`duration_ms`, 0) * (CASE WHEN NEW.`mem_size` > 0 THEN NEW.`mem_size` ELSE 256 END))
  ON CONFLICT (`account_id`, `period`) DO UPDATE SET
    `invocations` = `invocations` + 1,
    `duration_ms` = `duration_ms` + excluded.`duration_ms`,
    `mib_ms` = `mib_ms` + excluded.`mib_ms`;
END;
--> statement-breakpoint
-- Usage rows are now only a retried task's failed attempts (`<task id>#<attempt>`: worker/retries/
-- attempt-records.ts). A Worker still running the code before this migration, between its apply and
-- the deploy, writes a task's own row with its outcome too: that row now adds nothing, since the
-- update above has metered the task, so nothing counts twice during the deploy.
DROP TRIGGER `usage_totals_add`;
--> statement-breakpoint
CREATE TRIGGER `usage_totals_add` AFTER INSERT ON `usage`
WHEN instr(NEW.`task_id`, '#') > 0
BEGIN
  INSERT INTO `usage_totals` (`account_id`, `period`, `invocations`, `duration_ms`, `mib_ms`)
  VALUES (NEW.`account_id`, NEW.`period`, 1, NEW.`duration_ms`, NEW.`duration_ms` * NEW.`mem_mib`)
  ON CONFLICT (`account_id`, `period`) DO UPDATE SET
    `invocations` = `invocations` + 1,
    `duration_ms` = `duration_ms` + excluded.`duration_ms`,
    `mib_ms` = `mib_ms` + excluded.`mib_ms`;
END;
