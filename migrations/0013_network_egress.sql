ALTER TABLE `accounts` ADD `egress` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `functions` ADD `egress` text DEFAULT 'none' NOT NULL;--> statement-breakpoint
ALTER TABLE `nodes` ADD `egress` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `tasks` ADD `egress` text DEFAULT 'none' NOT NULL;