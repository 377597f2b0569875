CREATE TABLE `invocation_leases` (
	`account_id` text NOT NULL,
	`period` text NOT NULL,
	`shard` text NOT NULL,
	`granted` integer DEFAULT 0 NOT NULL,
	`settled` integer DEFAULT 0 NOT NULL,
	`returned` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`account_id`, `period`, `shard`),
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `slot_leases` (
	`account_id` text NOT NULL,
	`shard` text NOT NULL,
	`held` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`account_id`, `shard`),
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
