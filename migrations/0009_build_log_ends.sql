CREATE TABLE `build_log_ends` (
	`build_id` text PRIMARY KEY NOT NULL,
	`head` text NOT NULL,
	`tail` text NOT NULL,
	`lines` integer NOT NULL,
	FOREIGN KEY (`build_id`) REFERENCES `builds`(`id`) ON UPDATE no action ON DELETE cascade
);
