CREATE TABLE `nodes` (
	`id` text PRIMARY KEY NOT NULL,
	`agent_version` text,
	`runtime` text,
	`slots` integer NOT NULL,
	`langs` text NOT NULL,
	`privileged` integer NOT NULL,
	`connected_at` integer,
	`last_seen` integer NOT NULL,
	`draining` integer DEFAULT false NOT NULL,
	`disabled` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `tokens` ADD `node_id` text;