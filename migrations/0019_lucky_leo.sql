DROP INDEX `usage_account_period`;--> statement-breakpoint
DROP INDEX `tasks_endpoint`;--> statement-breakpoint
CREATE INDEX `tasks_endpoint` ON `tasks` (`endpoint_id`,`issued_at`) WHERE "tasks"."endpoint_id" is not null;