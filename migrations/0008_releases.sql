CREATE TABLE `releases` (
	`function_id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`build_id` text,
	`canary_build_id` text,
	`canary_weight` integer,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`function_id`) REFERENCES `functions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`build_id`) REFERENCES `builds`(`id`) ON UPDATE no action ON DELETE set null,
	FOREIGN KEY (`canary_build_id`) REFERENCES `builds`(`id`) ON UPDATE no action ON DELETE set null
);
