DROP INDEX `cashier_inbox_event`;--> statement-breakpoint
CREATE UNIQUE INDEX `cashier_inbox_event` ON `cashier_inbox` (`brand_id`,`provider`,`event_id`);