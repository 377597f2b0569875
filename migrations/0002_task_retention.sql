ALTER TABLE `tasks` ADD `log_key` text;--> statement-breakpoint
ALTER TABLE `tasks` ADD `purged_at` integer;--> statement-breakpoint
CREATE INDEX `tasks_account_unfinished` ON `tasks` (`account_id`) WHERE "tasks"."finished_at" is null;--> statement-breakpoint
CREATE INDEX `tasks_unpurged` ON `tasks` (`finished_at`) WHERE "tasks"."purged_at" is null;