CREATE TABLE `accounts` (
	`login` integer PRIMARY KEY NOT NULL,
	`brand_id` integer NOT NULL,
	`customer_id` integer,
	`group_id` integer NOT NULL,
	`password_hash` text NOT NULL,
	`enable` integer DEFAULT 1 NOT NULL,
	`enable_read_only` integer DEFAULT 0 NOT NULL,
	`enable_change_password` integer DEFAULT 1 NOT NULL,
	`leverage` integer NOT NULL,
	`name` text DEFAULT '' NOT NULL,
	`email` text DEFAULT '' NOT NULL,
	`phone` text DEFAULT '' NOT NULL,
	`address` text DEFAULT '' NOT NULL,
	`city` text DEFAULT '' NOT NULL,
	`state` text DEFAULT '' NOT NULL,
	`country` text DEFAULT '' NOT NULL,
	`zipcode` text DEFAULT '' NOT NULL,
	`comment` text DEFAULT '' NOT NULL,
	`avatar` text DEFAULT '' NOT NULL,
	`user_color` text DEFAULT '' NOT NULL,
	`balance` integer DEFAULT 0 NOT NULL,
	`credit` integer DEFAULT 0 NOT NULL,
	`prev_balance` integer DEFAULT 0 NOT NULL,
	`prev_month_balance` integer DEFAULT 0 NOT NULL,
	`regdate` integer NOT NULL,
	`update_time` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `accounts_brand_customer` ON `accounts` (`brand_id`,`customer_id`);--> statement-breakpoint
CREATE TABLE `balance_operations` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`login` integer NOT NULL,
	`op` text NOT NULL,
	`amount` integer NOT NULL,
	`balance_after` integer NOT NULL,
	`credit_after` integer NOT NULL,
	`reason` text NOT NULL,
	`comment` text DEFAULT '' NOT NULL,
	`api_data` text,
	`idempotency_key` text,
	`created_by` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `balance_operations_login` ON `balance_operations` (`login`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `balance_operations_idem` ON `balance_operations` (`login`,`idempotency_key`);--> statement-breakpoint
CREATE TABLE `groups` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`name` text NOT NULL,
	`account_mode` text NOT NULL,
	`currency` text NOT NULL,
	`leverage` integer NOT NULL,
	`default_deposit` integer DEFAULT 0 NOT NULL,
	`margin_call` integer DEFAULT 100 NOT NULL,
	`stop_out` integer DEFAULT 50 NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `groups_brand_name` ON `groups` (`brand_id`,`name`);--> statement-breakpoint
CREATE TABLE `customers` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`email` text NOT NULL,
	`password_hash` text NOT NULL,
	`name` text DEFAULT '' NOT NULL,
	`phone` text DEFAULT '' NOT NULL,
	`country` text DEFAULT '' NOT NULL,
	`deposit_allowed` integer DEFAULT 1 NOT NULL,
	`withdrawal_allowed` integer DEFAULT 1 NOT NULL,
	`enabled` integer DEFAULT 1 NOT NULL,
	`attribution` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `customers_brand_email` ON `customers` (`brand_id`,`email`);--> statement-breakpoint
CREATE TABLE `staff` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`login` integer NOT NULL,
	`role` text NOT NULL,
	`name` text DEFAULT '' NOT NULL,
	`password_hash` text NOT NULL,
	`enabled` integer DEFAULT 1 NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `staff_brand_login` ON `staff` (`brand_id`,`login`);--> statement-breakpoint
CREATE TABLE `uploads` (
	`uuid` text PRIMARY KEY NOT NULL,
	`brand_id` integer NOT NULL,
	`scope` integer NOT NULL,
	`owner_id` integer NOT NULL,
	`purpose` text NOT NULL,
	`file_name` text NOT NULL,
	`original_name` text NOT NULL,
	`extension` text NOT NULL,
	`content_type` text NOT NULL,
	`file_size` integer NOT NULL,
	`checksum` text NOT NULL,
	`signature` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `uploads_owner` ON `uploads` (`brand_id`,`scope`,`owner_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `brand_hosts` (
	`host` text PRIMARY KEY NOT NULL,
	`brand_id` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `brands` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`name` text NOT NULL,
	`affiliate_host` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `brands_name_unique` ON `brands` (`name`);--> statement-breakpoint
CREATE UNIQUE INDEX `brands_affiliate_host_unique` ON `brands` (`affiliate_host`);--> statement-breakpoint
CREATE TABLE `outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`topic` text NOT NULL,
	`payload` text NOT NULL,
	`created_at` integer NOT NULL,
	`dispatched_at` integer
);
--> statement-breakpoint
CREATE INDEX `outbox_pending` ON `outbox` (`dispatched_at`,`id`);