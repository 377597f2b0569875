CREATE TABLE `task_archive_functions` (
	`function_id` text NOT NULL,
	`last_id` text NOT NULL,
	`account_id` text NOT NULL,
	PRIMARY KEY(`function_id`, `last_id`),
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `task_archive_totals` (
	`account_id` text NOT NULL,
	`function_id` text NOT NULL,
	`tasks` integer NOT NULL,
	PRIMARY KEY(`account_id`, `function_id`),
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
-- Backfill from what 0020 kept (a chunk's functions as JSON, counts per day), before the column goes.
INSERT INTO `task_archive_functions` (`function_id`, `last_id`, `account_id`)
	SELECT j.value, a.`last_id`, a.`account_id` FROM `task_archive` a, json_each(a.`functions`) j;
--> statement-breakpoint
INSERT INTO `task_archive_totals` (`account_id`, `function_id`, `tasks`)
	SELECT `account_id`, `function_id`, sum(`tasks`) FROM `task_archive_counts` GROUP BY `account_id`, `function_id`;
--> statement-breakpoint
ALTER TABLE `task_archive` DROP COLUMN `functions`;