CREATE TABLE `accounts` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`plan` text DEFAULT 'DEVELOPER' NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `build_logs` (
	`build_id` text NOT NULL,
	`seq` integer NOT NULL,
	`line` text NOT NULL,
	PRIMARY KEY(`build_id`, `seq`),
	FOREIGN KEY (`build_id`) REFERENCES `builds`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `builds` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`function_id` text NOT NULL,
	`lang` text NOT NULL,
	`status` text NOT NULL,
	`arch` text NOT NULL,
	`timeline` text NOT NULL,
	`zip_key` text NOT NULL,
	`zip_size` integer NOT NULL,
	`artifact_key` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`function_id`) REFERENCES `functions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `builds_account` ON `builds` (`account_id`,`id`);--> statement-breakpoint
CREATE INDEX `builds_function` ON `builds` (`function_id`,`status`);--> statement-breakpoint
CREATE TABLE `endpoints` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`function_id` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`daily_limit` integer DEFAULT -1 NOT NULL,
	`origin` text NOT NULL,
	`ip` text NOT NULL,
	`time_from` text,
	`time_to` text,
	`timezone` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`function_id`) REFERENCES `functions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `endpoints_account` ON `endpoints` (`account_id`,`id`);--> statement-breakpoint
CREATE INDEX `endpoints_function` ON `endpoints` (`function_id`);--> statement-breakpoint
CREATE TABLE `functions` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`lang` text NOT NULL,
	`type` text NOT NULL,
	`paused` integer DEFAULT false NOT NULL,
	`timeout` integer NOT NULL,
	`cpu_count` real NOT NULL,
	`mem_size` integer NOT NULL,
	`privileged` integer NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `functions_account` ON `functions` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `invoices` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`amount` real NOT NULL,
	`currency` text DEFAULT 'usd' NOT NULL,
	`description` text NOT NULL,
	`status` text NOT NULL,
	`period` text NOT NULL,
	`paid_at` integer,
	`card_brand` text,
	`card_last4` text,
	`receipt_url` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `invoices_account` ON `invoices` (`account_id`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `invoices_period` ON `invoices` (`account_id`,`period`);--> statement-breakpoint
CREATE TABLE `tag_links` (
	`record_id` text NOT NULL,
	`tag_id` text NOT NULL,
	`position` integer NOT NULL,
	PRIMARY KEY(`record_id`, `tag_id`),
	FOREIGN KEY (`tag_id`) REFERENCES `tags`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `tag_links_tag` ON `tag_links` (`tag_id`);--> statement-breakpoint
CREATE TABLE `tags` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`name` text NOT NULL,
	`color` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `tags_account` ON `tags` (`account_id`,`id`);--> statement-breakpoint
CREATE TABLE `tasks` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`function_id` text NOT NULL,
	`lang` text NOT NULL,
	`build_id` text,
	`endpoint_id` text,
	`trigger_id` text,
	`parent_task_id` text,
	`hop` integer DEFAULT 0 NOT NULL,
	`issued_at` integer NOT NULL,
	`assigned_at` integer,
	`finished_at` integer,
	`progress` integer DEFAULT 0 NOT NULL,
	`status` integer DEFAULT 0 NOT NULL,
	`node` text,
	`timeout` integer NOT NULL,
	`cpu_count` real NOT NULL,
	`mem_size` integer NOT NULL,
	`privileged` integer NOT NULL,
	`network_latency` integer DEFAULT 0 NOT NULL,
	`input` text,
	`input_key` text,
	`result_status` integer,
	`result_headers` text,
	`result_body` text,
	`result_key` text,
	`log` text,
	`duration_ms` integer,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `tasks_account` ON `tasks` (`account_id`,`id`);--> statement-breakpoint
CREATE INDEX `tasks_function` ON `tasks` (`function_id`,`issued_at`);--> statement-breakpoint
CREATE INDEX `tasks_endpoint` ON `tasks` (`endpoint_id`,`issued_at`);--> statement-breakpoint
CREATE INDEX `tasks_pending` ON `tasks` (`function_id`,`finished_at`);--> statement-breakpoint
CREATE TABLE `tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text,
	`kind` text NOT NULL,
	`name` text,
	`hash` text NOT NULL,
	`created_at` integer NOT NULL,
	`revoked_at` integer,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tokens_hash` ON `tokens` (`hash`);--> statement-breakpoint
CREATE TABLE `triggers` (
	`id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`function_id` text NOT NULL,
	`next_id` text NOT NULL,
	`status` integer NOT NULL,
	`include_result` integer NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`function_id`) REFERENCES `functions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`next_id`) REFERENCES `functions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `triggers_account` ON `triggers` (`account_id`,`id`);--> statement-breakpoint
CREATE INDEX `triggers_function` ON `triggers` (`function_id`,`status`);