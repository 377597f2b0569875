CREATE TABLE `schedules` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`function_id` text NOT NULL,
	`active` integer DEFAULT true NOT NULL,
	`cron` text NOT NULL,
	`timezone` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`payload_query` text,
	`payload_content_type` text,
	`payload_set_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`function_id`) REFERENCES `functions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `schedules_account` ON `schedules` (`account_id`,`id`);--> statement-breakpoint
CREATE INDEX `schedules_function` ON `schedules` (`function_id`);--> statement-breakpoint
ALTER TABLE `tasks` ADD `scheduled_id` text;