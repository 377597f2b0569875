DROP INDEX `tasks_pending`;--> statement-breakpoint
DROP INDEX `tasks_function`;--> statement-breakpoint
DROP INDEX `tasks_endpoint`;--> statement-breakpoint
CREATE INDEX `tasks_function` ON `tasks` (`function_id`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_endpoint` ON `tasks` (`endpoint_id`,`id`);