CREATE TABLE `affiliate_access` (
	`affiliate_id` integer NOT NULL,
	`brand_id` integer NOT NULL,
	`status` text DEFAULT 'active' NOT NULL,
	`password_hash` text DEFAULT '' NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`affiliate_id`, `brand_id`)
);
--> statement-breakpoint
CREATE TABLE `affiliate_settings` (
	`brand_id` integer PRIMARY KEY NOT NULL,
	`postback_hosts` text DEFAULT '[]' NOT NULL,
	`active_trader_centilots` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `affiliate_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`affiliate_id` integer NOT NULL,
	`brand_id` integer NOT NULL,
	`prefix` text DEFAULT '' NOT NULL,
	`token_hash` text DEFAULT '' NOT NULL,
	`scopes` text DEFAULT '[]' NOT NULL,
	`created_by` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`last_used_at` integer,
	`revoked_at` integer
);
--> statement-breakpoint
CREATE INDEX `affiliate_tokens_owner` ON `affiliate_tokens` (`affiliate_id`,`brand_id`,`kind`);--> statement-breakpoint
CREATE TABLE `affiliates` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`email` text NOT NULL,
	`code` text NOT NULL,
	`name` text DEFAULT '' NOT NULL,
	`status` text DEFAULT 'active' NOT NULL,
	`postback_url` text DEFAULT '' NOT NULL,
	`postback_enabled` integer DEFAULT 1 NOT NULL,
	`postback_failures` integer DEFAULT 0 NOT NULL,
	`postback_disabled_reason` text DEFAULT '' NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `affiliates_email` ON `affiliates` (`email`);--> statement-breakpoint
CREATE UNIQUE INDEX `affiliates_code` ON `affiliates` (`code`);--> statement-breakpoint
CREATE TABLE `affiliate_facts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`customer_id` integer NOT NULL,
	`kind` text NOT NULL,
	`reference` text NOT NULL,
	`value_minor` integer,
	`currency` text DEFAULT '' NOT NULL,
	`volume` integer DEFAULT 0 NOT NULL,
	`event_id` integer NOT NULL,
	`event_time` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `affiliate_facts_event` ON `affiliate_facts` (`customer_id`,`kind`,`event_id`);--> statement-breakpoint
CREATE TABLE `affiliate_conversions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`affiliate_id` integer NOT NULL,
	`link_id` integer,
	`customer_id` integer NOT NULL,
	`kind` text NOT NULL,
	`key` text NOT NULL,
	`value_minor` integer,
	`currency` text DEFAULT '' NOT NULL,
	`reference_id` text DEFAULT '' NOT NULL,
	`event_time` integer NOT NULL,
	`event_id` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `affiliate_conversions_key` ON `affiliate_conversions` (`customer_id`,`key`);--> statement-breakpoint
CREATE INDEX `affiliate_conversions_aff` ON `affiliate_conversions` (`brand_id`,`affiliate_id`,`event_time`);--> statement-breakpoint
CREATE INDEX `affiliate_conversions_kind` ON `affiliate_conversions` (`brand_id`,`affiliate_id`,`kind`,`event_time`);--> statement-breakpoint
CREATE TABLE `affiliate_postback_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`affiliate_id` integer NOT NULL,
	`secret` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `affiliate_postbacks` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`affiliate_id` integer NOT NULL,
	`conversion_id` integer NOT NULL,
	`body` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_at` integer NOT NULL,
	`lease_until` integer DEFAULT 0 NOT NULL,
	`last_error` text DEFAULT '' NOT NULL,
	`created_at` integer NOT NULL,
	`sent_at` integer
);
--> statement-breakpoint
CREATE INDEX `affiliate_postbacks_due` ON `affiliate_postbacks` (`status`,`next_at`);--> statement-breakpoint
CREATE TABLE `affiliate_links` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`affiliate_id` integer NOT NULL,
	`code` text NOT NULL,
	`landing_path` text DEFAULT '/' NOT NULL,
	`campaign` text DEFAULT '' NOT NULL,
	`active` integer DEFAULT 1 NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `affiliate_links_code` ON `affiliate_links` (`brand_id`,`code`);--> statement-breakpoint
CREATE INDEX `affiliate_links_aff` ON `affiliate_links` (`affiliate_id`);--> statement-breakpoint
CREATE TABLE `attribution_decisions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`visitor_id` text,
	`installation_id` text,
	`touch_id` integer,
	`won_by` text NOT NULL,
	`considered` text DEFAULT '[]' NOT NULL,
	`window_days` integer NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `attribution_installs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`installation_id` text NOT NULL,
	`platform` text NOT NULL,
	`touch_id` integer,
	`activated_at` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `attribution_installs_id` ON `attribution_installs` (`brand_id`,`installation_id`);--> statement-breakpoint
CREATE TABLE `attribution_touches` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`visitor_id` text,
	`installation_id` text,
	`source` text NOT NULL,
	`affiliate_id` integer,
	`link_id` integer,
	`params` text DEFAULT '{}' NOT NULL,
	`direct` integer DEFAULT 0 NOT NULL,
	`bot` integer DEFAULT 0 NOT NULL,
	`ip_hash` text DEFAULT '' NOT NULL,
	`user_agent` text DEFAULT '' NOT NULL,
	`landing_path` text DEFAULT '' NOT NULL,
	`referrer` text DEFAULT '' NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `attribution_touches_visitor` ON `attribution_touches` (`brand_id`,`visitor_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `attribution_touches_install` ON `attribution_touches` (`brand_id`,`installation_id`) WHERE installation_id is not null;