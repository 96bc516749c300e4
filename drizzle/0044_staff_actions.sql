CREATE TABLE `staff_actions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`staff_id` integer NOT NULL,
	`staff_login` integer,
	`role` text NOT NULL,
	`at` integer NOT NULL,
	`method` text NOT NULL,
	`route` text NOT NULL,
	`path` text NOT NULL,
	`body` text,
	`request_id` text NOT NULL,
	`idempotency_key` text,
	`replayed` integer DEFAULT 0 NOT NULL,
	`status` integer,
	`code` text
);
--> statement-breakpoint
CREATE INDEX `staff_actions_brand` ON `staff_actions` (`brand_id`,`id`);--> statement-breakpoint
CREATE INDEX `staff_actions_staff` ON `staff_actions` (`brand_id`,`staff_id`,`id`);--> statement-breakpoint
CREATE INDEX `staff_actions_route` ON `staff_actions` (`brand_id`,`route`,`id`);--> statement-breakpoint
CREATE INDEX `staff_actions_time` ON `staff_actions` (`brand_id`,`at`);