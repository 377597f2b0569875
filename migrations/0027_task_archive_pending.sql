CREATE TABLE `task_archive_pending` (
	`account_id` text NOT NULL,
	`first_id` text NOT NULL,
	`last_id` text NOT NULL,
	`at` integer NOT NULL,
	PRIMARY KEY(`account_id`, `first_id`, `at`)
);
--> statement-breakpoint
CREATE INDEX `task_archive_pending_at` ON `task_archive_pending` (`at`);