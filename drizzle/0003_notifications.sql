CREATE TABLE `notifications` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`user_id` integer NOT NULL,
	`token` text NOT NULL,
	`message` text NOT NULL,
	`create_time` integer NOT NULL,
	`open_time` integer DEFAULT 0 NOT NULL,
	`type` text NOT NULL,
	`status` integer DEFAULT 0 NOT NULL,
	`level` text NOT NULL,
	`description` text DEFAULT '{}' NOT NULL,
	`data` text DEFAULT '{}' NOT NULL
);
--> statement-breakpoint
CREATE INDEX `notifications_user` ON `notifications` (`brand_id`,`user_id`,`id`);