CREATE TABLE `cashier_history` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`transaction_id` integer NOT NULL,
	`from_status` integer,
	`to_status` integer NOT NULL,
	`actor` text NOT NULL,
	`note` text DEFAULT '' NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `cashier_history_tx` ON `cashier_history` (`transaction_id`,`id`);--> statement-breakpoint
CREATE TABLE `cashier_inbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`provider` text NOT NULL,
	`event_id` text NOT NULL,
	`body` text NOT NULL,
	`state` text DEFAULT 'received' NOT NULL,
	`result` text DEFAULT '' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`claimed_until` integer DEFAULT 0 NOT NULL,
	`received_at` integer NOT NULL,
	`processed_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `cashier_inbox_event` ON `cashier_inbox` (`provider`,`event_id`);--> statement-breakpoint
CREATE INDEX `cashier_inbox_state` ON `cashier_inbox` (`state`,`received_at`);--> statement-breakpoint
CREATE TABLE `cashier_methods` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`code` text NOT NULL,
	`provider` text NOT NULL,
	`title` text NOT NULL,
	`deposit` integer DEFAULT 1 NOT NULL,
	`withdrawal` integer DEFAULT 0 NOT NULL,
	`currencies` text NOT NULL,
	`countries` text DEFAULT '[]' NOT NULL,
	`min_amount` integer NOT NULL,
	`max_amount` integer NOT NULL,
	`fee_bps` integer DEFAULT 0 NOT NULL,
	`fee_fixed_minor` integer DEFAULT 0 NOT NULL,
	`enabled` integer DEFAULT 1 NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `cashier_methods_code` ON `cashier_methods` (`brand_id`,`code`);--> statement-breakpoint
CREATE TABLE `cashier_overrides` (
	`brand_id` integer NOT NULL,
	`customer_id` integer NOT NULL,
	`method` text NOT NULL,
	`enabled` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `cashier_overrides_pk` ON `cashier_overrides` (`brand_id`,`customer_id`,`method`);--> statement-breakpoint
CREATE TABLE `cashier_transactions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`customer_id` integer NOT NULL,
	`login` integer NOT NULL,
	`kind` text NOT NULL,
	`method` text NOT NULL,
	`provider` text NOT NULL,
	`status` integer NOT NULL,
	`amount` integer NOT NULL,
	`fee` integer DEFAULT 0 NOT NULL,
	`currency` text NOT NULL,
	`provider_ref` text,
	`provider_amount` integer,
	`provider_currency` text,
	`reason` text DEFAULT '' NOT NULL,
	`staff_note` text DEFAULT '' NOT NULL,
	`credit_attempts` integer DEFAULT 0 NOT NULL,
	`flagged` integer DEFAULT 0 NOT NULL,
	`idempotency_key` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `cashier_tx_customer` ON `cashier_transactions` (`brand_id`,`customer_id`,`id`);--> statement-breakpoint
CREATE INDEX `cashier_tx_status` ON `cashier_transactions` (`status`,`updated_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `cashier_tx_idem` ON `cashier_transactions` (`brand_id`,`customer_id`,`idempotency_key`);--> statement-breakpoint
CREATE TABLE `sandbox_payments` (
	`token` text PRIMARY KEY NOT NULL,
	`brand_id` integer NOT NULL,
	`provider` text NOT NULL,
	`reference` text NOT NULL,
	`amount` integer NOT NULL,
	`currency` text NOT NULL,
	`status` text NOT NULL,
	`notify_url` text NOT NULL,
	`return_url` text NOT NULL,
	`outbox` text DEFAULT '[]' NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `kyc_documents` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`customer_id` integer NOT NULL,
	`step_code` text NOT NULL,
	`file_id` text NOT NULL,
	`document_type` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`valid_until` integer,
	`rejection_reason` text DEFAULT '' NOT NULL,
	`staff_comment` text DEFAULT '' NOT NULL,
	`reviewed_at` integer,
	`reviewed_by` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `kyc_documents_file` ON `kyc_documents` (`brand_id`,`file_id`);--> statement-breakpoint
CREATE INDEX `kyc_documents_customer` ON `kyc_documents` (`brand_id`,`customer_id`,`step_code`);--> statement-breakpoint
CREATE INDEX `kyc_documents_valid` ON `kyc_documents` (`status`,`valid_until`);--> statement-breakpoint
CREATE TABLE `kyc_profiles` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`customer_id` integer NOT NULL,
	`status` text DEFAULT 'not_started' NOT NULL,
	`risk_level` text DEFAULT 'unassessed' NOT NULL,
	`risk_comment` text DEFAULT '' NOT NULL,
	`submitted_at` integer,
	`reviewed_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `kyc_profiles_customer` ON `kyc_profiles` (`brand_id`,`customer_id`);--> statement-breakpoint
CREATE INDEX `kyc_profiles_status` ON `kyc_profiles` (`brand_id`,`status`,`updated_at`);--> statement-breakpoint
CREATE TABLE `kyc_settings` (
	`brand_id` integer PRIMARY KEY NOT NULL,
	`settings` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `kyc_steps` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`customer_id` integer NOT NULL,
	`code` text NOT NULL,
	`status` text DEFAULT 'not_started' NOT NULL,
	`answers` text,
	`rejection_reason` text DEFAULT '' NOT NULL,
	`staff_comment` text DEFAULT '' NOT NULL,
	`submitted_at` integer,
	`reviewed_at` integer,
	`reviewed_by` integer,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `kyc_steps_customer_code` ON `kyc_steps` (`brand_id`,`customer_id`,`code`);