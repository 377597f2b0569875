CREATE TABLE `task_archive` (
	`key` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`first_id` text NOT NULL,
	`last_id` text NOT NULL,
	`records` integer NOT NULL,
	`bytes` integer NOT NULL,
	`segments` text NOT NULL,
	`functions` text NOT NULL,
	`purge_due` integer,
	`archived_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `task_archive_account` ON `task_archive` (`account_id`,`last_id`,`first_id`);--> statement-breakpoint
CREATE INDEX `task_archive_purge` ON `task_archive` (`purge_due`) WHERE "task_archive"."purge_due" is not null;--> statement-breakpoint
CREATE TABLE `task_archive_counts` (
	`account_id` text NOT NULL,
	`function_id` text NOT NULL,
	`day` integer NOT NULL,
	`tasks` integer NOT NULL,
	PRIMARY KEY(`account_id`, `function_id`, `day`),
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
