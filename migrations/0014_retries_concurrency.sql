ALTER TABLE `functions` ADD `retry_max_attempts` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `functions` ADD `retry_backoff_seconds` integer DEFAULT 10 NOT NULL;--> statement-breakpoint
ALTER TABLE `functions` ADD `dead_letter_function_id` text;--> statement-breakpoint
ALTER TABLE `functions` ADD `concurrency_max` integer;--> statement-breakpoint
ALTER TABLE `tasks` ADD `attempts` integer DEFAULT 0 NOT NULL;