CREATE TABLE `usage_totals` (
	`account_id` text NOT NULL,
	`period` text NOT NULL,
	`invocations` integer DEFAULT 0 NOT NULL,
	`duration_ms` integer DEFAULT 0 NOT NULL,
	`mib_ms` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`account_id`, `period`),
	FOREIGN KEY (`account_id`) REFERENCES `accounts`(`id`) ON UPDATE no action ON DELETE cascade
);
