CREATE TABLE `task_archive_issues` (
	`function_id` text NOT NULL,
	`endpoint_id` text,
	`issued_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `task_archive_issues_function` ON `task_archive_issues` (`function_id`,`issued_at`);--> statement-breakpoint
CREATE INDEX `task_archive_issues_endpoint` ON `task_archive_issues` (`endpoint_id`,`issued_at`) WHERE "task_archive_issues"."endpoint_id" is not null;