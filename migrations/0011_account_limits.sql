ALTER TABLE `accounts` ADD `limits` text;--> statement-breakpoint
ALTER TABLE `builds` ADD `evicted_at` integer;--> statement-breakpoint
CREATE INDEX `builds_account_open` ON `builds` (`account_id`) WHERE "builds"."status" in ('PENDING', 'BUILDING');