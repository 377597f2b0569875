ALTER TABLE `tasks` ADD `chain_id` text;--> statement-breakpoint
CREATE INDEX `tasks_chain` ON `tasks` (`chain_id`) WHERE chain_id is not null;