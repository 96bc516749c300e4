CREATE TABLE `prop_breaches` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`phase_id` integer NOT NULL,
	`challenge_id` integer NOT NULL,
	`rule` text NOT NULL,
	`limit_value` integer NOT NULL,
	`anchor` integer NOT NULL,
	`observed` integer NOT NULL,
	`tick_time` integer NOT NULL,
	`detected_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `prop_breaches_phase` ON `prop_breaches` (`phase_id`);--> statement-breakpoint
CREATE TABLE `prop_challenges` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`purchase_id` integer NOT NULL,
	`program_id` integer NOT NULL,
	`customer_id` integer NOT NULL,
	`account_login` integer NOT NULL,
	`current_phase_index` integer NOT NULL,
	`status` integer NOT NULL,
	`start_time` integer NOT NULL,
	`end_time` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `prop_challenges_purchase` ON `prop_challenges` (`purchase_id`);--> statement-breakpoint
CREATE INDEX `prop_challenges_customer` ON `prop_challenges` (`customer_id`,`id`);--> statement-breakpoint
CREATE TABLE `prop_days` (
	`phase_id` integer NOT NULL,
	`day` text NOT NULL,
	`start_balance` integer NOT NULL,
	`start_equity` integer NOT NULL,
	`end_balance` integer,
	`end_equity` integer,
	`min_equity` integer NOT NULL,
	`positions_opened` integer DEFAULT 0 NOT NULL,
	`trading_day` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`phase_id`, `day`)
);
--> statement-breakpoint
CREATE TABLE `prop_payouts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`challenge_id` integer NOT NULL,
	`phase_id` integer NOT NULL,
	`seq` integer NOT NULL,
	`profit` integer NOT NULL,
	`share` integer NOT NULL,
	`split_ppm` integer NOT NULL,
	`payer_login` integer NOT NULL,
	`funded_login` integer NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `prop_payouts_seq` ON `prop_payouts` (`phase_id`,`seq`);--> statement-breakpoint
CREATE TABLE `prop_phases` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`challenge_id` integer NOT NULL,
	`program_id` integer NOT NULL,
	`phase_index` integer NOT NULL,
	`phase_type` integer NOT NULL,
	`account_login` integer NOT NULL,
	`account_group` text NOT NULL,
	`currency` text NOT NULL,
	`rules` text NOT NULL,
	`time_zone` text NOT NULL,
	`status` integer NOT NULL,
	`initial_balance` integer NOT NULL,
	`initial_equity` integer NOT NULL,
	`final_balance` integer,
	`final_equity` integer,
	`highest_eod_balance` integer NOT NULL,
	`trading_days` integer DEFAULT 0 NOT NULL,
	`start_day` text NOT NULL,
	`start_time` integer NOT NULL,
	`end_time` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `prop_phases_index` ON `prop_phases` (`challenge_id`,`phase_index`);--> statement-breakpoint
CREATE UNIQUE INDEX `prop_phases_login` ON `prop_phases` (`account_login`);--> statement-breakpoint
CREATE INDEX `prop_phases_status` ON `prop_phases` (`status`);--> statement-breakpoint
CREATE TABLE `prop_programs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`price_minor` integer NOT NULL,
	`currency` text NOT NULL,
	`active` integer NOT NULL,
	`time_zone` text NOT NULL,
	`version` integer DEFAULT 1 NOT NULL,
	`steps` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `prop_programs_name` ON `prop_programs` (`brand_id`,`name`);--> statement-breakpoint
CREATE TABLE `prop_purchases` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`program_id` integer NOT NULL,
	`program_version` integer NOT NULL,
	`customer_id` integer NOT NULL,
	`payer_login` integer NOT NULL,
	`account_login` integer,
	`status` integer NOT NULL,
	`next_action` text DEFAULT '' NOT NULL,
	`comment` text DEFAULT '' NOT NULL,
	`idempotency_key` text,
	`payment_status` text NOT NULL,
	`activation_status` text NOT NULL,
	`failure_reason` text DEFAULT '' NOT NULL,
	`currency` text NOT NULL,
	`can_retry` integer DEFAULT 0 NOT NULL,
	`can_cancel` integer DEFAULT 0 NOT NULL,
	`amount_minor` integer NOT NULL,
	`conversion_rate_ppm` integer DEFAULT 1000000 NOT NULL,
	`payment_order` integer,
	`initial_balance_order` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `prop_purchases_idem` ON `prop_purchases` (`brand_id`,`customer_id`,`idempotency_key`);--> statement-breakpoint
CREATE INDEX `prop_purchases_customer` ON `prop_purchases` (`customer_id`,`id`);--> statement-breakpoint
CREATE TABLE `prop_warnings` (
	`phase_id` integer NOT NULL,
	`day` text NOT NULL,
	`rule` text NOT NULL,
	`level` integer NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`phase_id`, `day`, `rule`, `level`)
);
