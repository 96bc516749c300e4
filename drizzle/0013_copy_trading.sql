CREATE TABLE `copy_followers` (
	`login` integer PRIMARY KEY NOT NULL,
	`brand_id` integer NOT NULL,
	`customer_id` integer NOT NULL,
	`defaults` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `copy_links` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`subscription_id` integer NOT NULL,
	`master_login` integer NOT NULL,
	`master_ticket` integer NOT NULL,
	`follower_login` integer NOT NULL,
	`follower_ticket` integer,
	`status` text NOT NULL,
	`reason` text DEFAULT '' NOT NULL,
	`symbol` text NOT NULL,
	`master_cmd` integer NOT NULL,
	`master_volume` integer NOT NULL,
	`master_price` real NOT NULL,
	`master_time` integer NOT NULL,
	`master_close_price` real,
	`master_close_time` integer,
	`resync` integer DEFAULT 0 NOT NULL,
	`follower_volume` integer DEFAULT 0 NOT NULL,
	`lease_until` integer DEFAULT 0 NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `copy_links_once` ON `copy_links` (`subscription_id`,`master_ticket`);--> statement-breakpoint
CREATE INDEX `copy_links_master` ON `copy_links` (`master_ticket`);--> statement-breakpoint
CREATE INDEX `copy_links_follower` ON `copy_links` (`follower_ticket`);--> statement-breakpoint
CREATE INDEX `copy_links_status` ON `copy_links` (`status`,`updated_at`);--> statement-breakpoint
CREATE TABLE `copy_masters` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`customer_id` integer NOT NULL,
	`login` integer NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`allowed_follower_modes` integer NOT NULL,
	`show_trade_history` integer NOT NULL,
	`show_followers` integer NOT NULL,
	`manual_trading_mode` integer NOT NULL,
	`reward_type` integer NOT NULL,
	`reward_params` text NOT NULL,
	`payout_login` integer NOT NULL,
	`enabled` integer NOT NULL,
	`public` integer NOT NULL,
	`blocked_reason` text DEFAULT '' NOT NULL,
	`deleted_at` integer,
	`currency` text NOT NULL,
	`followers` integer DEFAULT 0 NOT NULL,
	`trades` integer DEFAULT 0 NOT NULL,
	`wins` integer DEFAULT 0 NOT NULL,
	`pnl_minor` integer DEFAULT 0 NOT NULL,
	`volume` integer DEFAULT 0 NOT NULL,
	`copied_volume` integer DEFAULT 0 NOT NULL,
	`unit_value` real DEFAULT 1 NOT NULL,
	`peak_unit_value` real DEFAULT 1 NOT NULL,
	`max_drawdown` real DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `copy_masters_login` ON `copy_masters` (`login`) WHERE deleted_at is null;--> statement-breakpoint
CREATE INDEX `copy_masters_market` ON `copy_masters` (`brand_id`,`public`,`enabled`);--> statement-breakpoint
CREATE TABLE `copy_records` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`key` text NOT NULL,
	`brand_id` integer NOT NULL,
	`subscription_id` integer NOT NULL,
	`link_id` integer,
	`action` text NOT NULL,
	`result` text NOT NULL,
	`reason` text DEFAULT '' NOT NULL,
	`message` text DEFAULT '' NOT NULL,
	`symbol` text NOT NULL,
	`master_ticket` integer NOT NULL,
	`master_price` real NOT NULL,
	`master_time` integer NOT NULL,
	`decided_at` integer NOT NULL,
	`follower_ticket` integer,
	`follower_price` real,
	`follower_time` integer,
	`volume` integer DEFAULT 0 NOT NULL,
	`slippage_points` real,
	`slippage_minor` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `copy_records_key` ON `copy_records` (`key`);--> statement-breakpoint
CREATE INDEX `copy_records_subscription` ON `copy_records` (`subscription_id`,`id`);--> statement-breakpoint
CREATE TABLE `copy_rewards` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`key` text NOT NULL,
	`brand_id` integer NOT NULL,
	`subscription_id` integer NOT NULL,
	`master_id` integer NOT NULL,
	`reward_type` integer NOT NULL,
	`follower_login` integer NOT NULL,
	`payout_login` integer NOT NULL,
	`base` integer NOT NULL,
	`amount_minor` integer NOT NULL,
	`currency` text NOT NULL,
	`payout_amount_minor` integer,
	`payout_currency` text NOT NULL,
	`status` text NOT NULL,
	`note` text DEFAULT '' NOT NULL,
	`created_at` integer NOT NULL,
	`settled_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `copy_rewards_key` ON `copy_rewards` (`key`);--> statement-breakpoint
CREATE INDEX `copy_rewards_pending` ON `copy_rewards` (`status`,`id`);--> statement-breakpoint
CREATE INDEX `copy_rewards_subscription` ON `copy_rewards` (`subscription_id`,`id`);--> statement-breakpoint
CREATE TABLE `copy_subscriptions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`customer_id` integer NOT NULL,
	`follower_login` integer NOT NULL,
	`master_id` integer NOT NULL,
	`master_login` integer NOT NULL,
	`status` integer NOT NULL,
	`status_reason` text DEFAULT '' NOT NULL,
	`settings` text NOT NULL,
	`start_balance_minor` integer NOT NULL,
	`loss_day` integer DEFAULT 0 NOT NULL,
	`day_result_minor` integer DEFAULT 0 NOT NULL,
	`result_minor` integer DEFAULT 0 NOT NULL,
	`capital_minor` integer DEFAULT 0 NOT NULL,
	`hwm_minor` integer DEFAULT 0 NOT NULL,
	`fees_minor` integer DEFAULT 0 NOT NULL,
	`next_fee_at` integer,
	`next_perf_at` integer,
	`mgmt_day` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `copy_subscriptions_live` ON `copy_subscriptions` (`follower_login`,`master_id`) WHERE status in (0, 1);--> statement-breakpoint
CREATE INDEX `copy_subscriptions_master` ON `copy_subscriptions` (`master_login`,`status`);--> statement-breakpoint
CREATE INDEX `copy_subscriptions_customer` ON `copy_subscriptions` (`brand_id`,`customer_id`);