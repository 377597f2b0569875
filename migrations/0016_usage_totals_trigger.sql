-- Custom SQL migration file, put your code below! --
-- drizzle's schema cannot declare triggers: this one keeps usage_totals (0015) the sum of usage,
-- row for row, in the statement that inserts each usage row (a row not inserted fires nothing).
CREATE TRIGGER `usage_totals_add` AFTER INSERT ON `usage`
BEGIN
  INSERT INTO `usage_totals` (`account_id`, `period`, `invocations`, `duration_ms`, `mib_ms`)
  VALUES (NEW.`account_id`, NEW.`period`, 1, NEW.`duration_ms`, NEW.`duration_ms` * NEW.`mem_mib`)
  ON CONFLICT (`account_id`, `period`) DO UPDATE SET
    `invocations` = `invocations` + 1,
    `duration_ms` = `duration_ms` + excluded.`duration_ms`,
    `mib_ms` = `mib_ms` + excluded.`mib_ms`;
END;
--> statement-breakpoint
-- What a deployment metered before this migration, added up once.
INSERT INTO `usage_totals` (`account_id`, `period`, `invocations`, `duration_ms`, `mib_ms`)
SELECT `account_id`, `period`, count(*), sum(`duration_ms`), sum(`duration_ms` * `mem_mib`) FROM `usage` WHERE true GROUP BY `account_id`, `period`
ON CONFLICT (`account_id`, `period`) DO UPDATE SET
  `invocations` = excluded.`invocations`, `duration_ms` = excluded.`duration_ms`, `mib_ms` = excluded.`mib_ms`;
