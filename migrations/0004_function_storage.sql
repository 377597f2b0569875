CREATE TABLE `function_storage` (
	`function_id` text PRIMARY KEY NOT NULL,
	`account_id` text NOT NULL,
	`value` text,
	`value_key` text,
	`size` integer NOT NULL,
	`set_at` integer NOT NULL,
	`task_id` text NOT NULL,
	FOREIGN KEY (`function_id`) REFERENCES `functions`(`id`) ON UPDATE no action ON DELETE cascade
);
