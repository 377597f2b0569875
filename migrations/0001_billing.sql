CREATE TABLE `usage` (
	`task_id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`function_id` text NOT NULL,
	`period` text NOT NULL,
	`finished_at` integer NOT NULL,
	`duration_ms` integer NOT NULL,
	`mem_mib` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `usage_account_period` ON `usage` (`account_id`,`period`);--> statement-breakpoint
CREATE TABLE `webhook_events` (
	`id` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`received_at` integer NOT NULL
);
