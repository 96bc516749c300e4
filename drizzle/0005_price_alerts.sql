CREATE TABLE `price_alerts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`login` integer NOT NULL,
	`symbol` text NOT NULL,
	`indicator_name` text DEFAULT '' NOT NULL,
	`message` text DEFAULT '' NOT NULL,
	`side` integer NOT NULL,
	`condition` integer NOT NULL,
	`target_price` real DEFAULT 0 NOT NULL,
	`channel_low` real DEFAULT 0 NOT NULL,
	`channel_high` real DEFAULT 0 NOT NULL,
	`move_threshold` real DEFAULT 0 NOT NULL,
	`repeat_mode` integer DEFAULT 0 NOT NULL,
	`expires_at` integer DEFAULT 0 NOT NULL,
	`reference_price` real DEFAULT 0 NOT NULL,
	`reference_time` integer DEFAULT 0 NOT NULL,
	`active` integer DEFAULT 1 NOT NULL,
	`fired_count` integer DEFAULT 0 NOT NULL,
	`last_fired_at` integer DEFAULT 0 NOT NULL,
	`last_price` real DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `price_alerts_login` ON `price_alerts` (`login`,`active`);--> statement-breakpoint
CREATE INDEX `price_alerts_active` ON `price_alerts` (`active`,`symbol`);