CREATE TABLE `revoked_tokens` (
	`jti` text PRIMARY KEY NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `revoked_tokens_expiry` ON `revoked_tokens` (`expires_at`);--> statement-breakpoint
CREATE TABLE `dead_letters` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`event_id` integer NOT NULL,
	`consumer` text NOT NULL,
	`brand_id` integer NOT NULL,
	`topic` text NOT NULL,
	`payload` text NOT NULL,
	`error` text NOT NULL,
	`attempts` integer NOT NULL,
	`failed_at` integer NOT NULL,
	`retried_at` integer
);
--> statement-breakpoint
CREATE INDEX `dead_letters_brand` ON `dead_letters` (`brand_id`,`id`);--> statement-breakpoint
CREATE TABLE `event_deliveries` (
	`event_id` integer NOT NULL,
	`consumer` text NOT NULL,
	`status` text NOT NULL,
	`at` integer NOT NULL,
	PRIMARY KEY(`event_id`, `consumer`)
);
--> statement-breakpoint
CREATE TABLE `job_leases` (
	`name` text PRIMARY KEY NOT NULL,
	`owner` text NOT NULL,
	`until` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `group_watch_defaults` (
	`group_id` integer PRIMARY KEY NOT NULL,
	`symbols` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `last_quotes` (
	`symbol` text PRIMARY KEY NOT NULL,
	`bid` real NOT NULL,
	`ask` real NOT NULL,
	`time` integer NOT NULL
);
--> statement-breakpoint
DROP INDEX `outbox_pending`;--> statement-breakpoint
ALTER TABLE `outbox` ADD `lease_owner` text;--> statement-breakpoint
ALTER TABLE `outbox` ADD `lease_until` integer;--> statement-breakpoint
ALTER TABLE `outbox` ADD `attempts` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `outbox` ADD `next_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `outbox_undelivered` ON `outbox` (`id`) WHERE dispatched_at is null;--> statement-breakpoint
ALTER TABLE `accounts` ADD `session_epoch` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `customers` ADD `session_epoch` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `staff` ADD `session_epoch` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- an account's owner is a customer of its own brand, whatever code path writes it
CREATE TRIGGER `accounts_owner_on_insert` BEFORE INSERT ON `accounts`
WHEN NEW.`customer_id` IS NOT NULL AND NOT EXISTS (
  SELECT 1 FROM `customers` WHERE `id` = NEW.`customer_id` AND `brand_id` = NEW.`brand_id`
) BEGIN
  SELECT RAISE(ABORT, 'accounts.customer_id: not a customer of the account brand');
END;
--> statement-breakpoint
CREATE TRIGGER `accounts_owner_on_update` BEFORE UPDATE OF `customer_id`, `brand_id` ON `accounts`
WHEN NEW.`customer_id` IS NOT NULL AND NOT EXISTS (
  SELECT 1 FROM `customers` WHERE `id` = NEW.`customer_id` AND `brand_id` = NEW.`brand_id`
) BEGIN
  SELECT RAISE(ABORT, 'accounts.customer_id: not a customer of the account brand');
END;
--> statement-breakpoint
-- Repair what unbounded inputs could store before: a time beyond JavaScript's safe integers made every
-- read of the row fail (and the start-up with it). Such pending orders are cancelled, such alerts disabled.
UPDATE `orders` SET `state` = 'cancelled', `close_reason` = 'invalid', `close_time` = `updated_at`, `expiration` = 0
WHERE `state` = 'pending' AND (`expiration` > 4102444800 OR `expiration` < 0);
--> statement-breakpoint
UPDATE `orders` SET `expiration` = 0 WHERE `expiration` > 4102444800 OR `expiration` < 0;
--> statement-breakpoint
UPDATE `price_alerts` SET `active` = 0, `expires_at` = 0
WHERE `expires_at` > 4102444800 OR `expires_at` < 0;
--> statement-breakpoint
UPDATE `price_alerts` SET `reference_time` = 0 WHERE `reference_time` > 4102444800 OR `reference_time` < 0;
--> statement-breakpoint
-- Events written before any consumer existed: nobody will take them, they only wait for the retention.
UPDATE `outbox` SET `dispatched_at` = `created_at` WHERE `dispatched_at` IS NULL;
