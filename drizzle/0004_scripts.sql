CREATE TABLE `scripts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`login` integer NOT NULL,
	`name` text NOT NULL,
	`script` text NOT NULL,
	`type` text DEFAULT 'private' NOT NULL,
	`autostart` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `scripts_login` ON `scripts` (`login`,`id`);