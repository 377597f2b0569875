CREATE TABLE `task_archive_chains` (
	`chain_id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`tasks` integer NOT NULL,
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
