CREATE TABLE `affiliate_periods` (
	`brand_id` integer NOT NULL,
	`period` text NOT NULL,
	`closed_at` integer NOT NULL,
	`closed_by` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`brand_id`, `period`)
);
--> statement-breakpoint
CREATE TABLE `affiliate_plans` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`name` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `affiliate_plans_name` ON `affiliate_plans` (`brand_id`,`name`);--> statement-breakpoint
CREATE TABLE `affiliate_commissions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`affiliate_id` integer NOT NULL,
	`customer_id` integer DEFAULT 0 NOT NULL,
	`source_affiliate_id` integer DEFAULT 0 NOT NULL,
	`kind` text NOT NULL,
	`key` text NOT NULL,
	`period` text NOT NULL,
	`amount_minor` integer NOT NULL,
	`currency` text NOT NULL,
	`basis_minor` integer DEFAULT 0 NOT NULL,
	`rate_bp` integer DEFAULT 0 NOT NULL,
	`volume` integer DEFAULT 0 NOT NULL,
	`plan_id` integer DEFAULT 0 NOT NULL,
	`plan_version` integer DEFAULT 0 NOT NULL,
	`fact_ids` text DEFAULT '[]' NOT NULL,
	`corrects` text DEFAULT '' NOT NULL,
	`event_time` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `affiliate_commissions_key` ON `affiliate_commissions` (`brand_id`,`affiliate_id`,`key`,`period`);--> statement-breakpoint
CREATE INDEX `affiliate_commissions_customer` ON `affiliate_commissions` (`customer_id`);--> statement-breakpoint
CREATE INDEX `affiliate_commissions_period` ON `affiliate_commissions` (`brand_id`,`period`,`affiliate_id`);--> statement-breakpoint
CREATE INDEX `affiliate_commissions_time` ON `affiliate_commissions` (`brand_id`,`affiliate_id`,`event_time`);--> statement-breakpoint
CREATE TABLE `affiliate_plan_assignments` (
	`brand_id` integer NOT NULL,
	`affiliate_id` integer NOT NULL,
	`effective_from` integer NOT NULL,
	`plan_id` integer NOT NULL,
	`assigned_by` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`brand_id`, `affiliate_id`, `effective_from`)
);
--> statement-breakpoint
CREATE TABLE `affiliate_plan_versions` (
	`plan_id` integer NOT NULL,
	`version` integer NOT NULL,
	`effective_from` integer NOT NULL,
	`terms` text NOT NULL,
	`created_by` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`plan_id`, `version`)
);
--> statement-breakpoint
CREATE TABLE `affiliate_customers` (
	`customer_id` integer PRIMARY KEY NOT NULL,
	`brand_id` integer NOT NULL,
	`affiliate_id` integer NOT NULL,
	`link_id` integer,
	`sub1` text DEFAULT '' NOT NULL,
	`sub2` text DEFAULT '' NOT NULL,
	`sub3` text DEFAULT '' NOT NULL,
	`sub4` text DEFAULT '' NOT NULL,
	`sub5` text DEFAULT '' NOT NULL,
	`country` text DEFAULT '' NOT NULL,
	`landing_path` text DEFAULT '' NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `affiliate_customers_aff` ON `affiliate_customers` (`brand_id`,`affiliate_id`);--> statement-breakpoint
CREATE TABLE `affiliate_statements` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`affiliate_id` integer NOT NULL,
	`period` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`totals` text NOT NULL,
	`rows` integer NOT NULL,
	`created_at` integer NOT NULL,
	`approved_at` integer,
	`approved_by` integer,
	`paid_at` integer,
	`paid_by` integer,
	`payment_reference` text DEFAULT '' NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `affiliate_statements_period` ON `affiliate_statements` (`brand_id`,`affiliate_id`,`period`);--> statement-breakpoint
CREATE INDEX `affiliate_statements_status` ON `affiliate_statements` (`brand_id`,`status`);--> statement-breakpoint
ALTER TABLE `affiliates` ADD `parent_id` integer;--> statement-breakpoint
-- customers referred before the reports existed: their link, sub-ids (the attribution record the customer
-- keeps), country and landing page
INSERT OR IGNORE INTO `affiliate_customers` (`customer_id`, `brand_id`, `affiliate_id`, `link_id`, `sub1`, `sub2`, `sub3`, `sub4`, `sub5`, `country`, `landing_path`, `created_at`)
SELECT c.`customer_id`, c.`brand_id`, c.`affiliate_id`, c.`link_id`,
  coalesce(json_extract(u.`attribution`, '$.sub1'), ''), coalesce(json_extract(u.`attribution`, '$.sub2'), ''),
  coalesce(json_extract(u.`attribution`, '$.sub3'), ''), coalesce(json_extract(u.`attribution`, '$.sub4'), ''),
  coalesce(json_extract(u.`attribution`, '$.sub5'), ''), coalesce(u.`country`, ''), coalesce(l.`landing_path`, ''),
  c.`event_time`
FROM `affiliate_conversions` c
LEFT JOIN `customers` u ON u.`id` = c.`customer_id` AND json_valid(u.`attribution`)
LEFT JOIN `affiliate_links` l ON l.`id` = c.`link_id`
WHERE c.`kind` = 'registration';
