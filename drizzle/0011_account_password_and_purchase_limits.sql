ALTER TABLE `accounts` ADD `must_change_password` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `accounts` ADD `read_only_reason` text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE `prop_programs` ADD `limits` text;