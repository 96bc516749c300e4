CREATE TABLE `candles` (
	`symbol` text NOT NULL,
	`timeframe` text NOT NULL,
	`time` integer NOT NULL,
	`open` real NOT NULL,
	`high` real NOT NULL,
	`low` real NOT NULL,
	`close` real NOT NULL,
	`volume` integer NOT NULL,
	PRIMARY KEY(`symbol`, `timeframe`, `time`)
);
--> statement-breakpoint
CREATE TABLE `group_securities` (
	`group_id` integer NOT NULL,
	`sec_group` text NOT NULL,
	`show` integer DEFAULT 1 NOT NULL,
	`trade` integer DEFAULT 1 NOT NULL,
	`lot_min` integer DEFAULT 1 NOT NULL,
	`lot_max` integer DEFAULT 10000 NOT NULL,
	`lot_step` integer DEFAULT 1 NOT NULL,
	`spread_diff` integer DEFAULT 0 NOT NULL,
	`comm_base` real DEFAULT 0 NOT NULL,
	`comm_type` integer DEFAULT 0 NOT NULL,
	`comm_lots` integer DEFAULT 0 NOT NULL,
	`comm_agent` real DEFAULT 0 NOT NULL,
	`comm_agent_type` integer DEFAULT 0 NOT NULL,
	`comm_agent_lots` integer DEFAULT 0 NOT NULL,
	`comm_tax` real DEFAULT 0 NOT NULL,
	PRIMARY KEY(`group_id`, `sec_group`)
);
--> statement-breakpoint
CREATE TABLE `group_symbols` (
	`group_id` integer NOT NULL,
	`symbol` text NOT NULL,
	`spread` integer,
	`spread_balance` integer,
	`margin_divider` real,
	PRIMARY KEY(`group_id`, `symbol`)
);
--> statement-breakpoint
CREATE TABLE `market_watch` (
	`login` integer NOT NULL,
	`symbol` text NOT NULL,
	`sort_index` integer NOT NULL,
	`color` text DEFAULT '' NOT NULL,
	PRIMARY KEY(`login`, `symbol`)
);
--> statement-breakpoint
CREATE TABLE `symbols` (
	`symbol` text PRIMARY KEY NOT NULL,
	`description` text NOT NULL,
	`currency` text NOT NULL,
	`margin_currency` text NOT NULL,
	`quote_currency` text NOT NULL,
	`sec_group` text NOT NULL,
	`digits` integer NOT NULL,
	`tick_size` real NOT NULL,
	`tick_value` real NOT NULL,
	`contract_size` integer NOT NULL,
	`trade` integer DEFAULT 2 NOT NULL,
	`spread` integer DEFAULT 0 NOT NULL,
	`spread_balance` integer DEFAULT 0 NOT NULL,
	`stops_level` integer DEFAULT 0 NOT NULL,
	`long_only` integer DEFAULT 0 NOT NULL,
	`exemode` integer DEFAULT 1 NOT NULL,
	`profit_mode` integer DEFAULT 0 NOT NULL,
	`gtc_pendings` integer DEFAULT 1 NOT NULL,
	`swap_enable` integer DEFAULT 1 NOT NULL,
	`swap_type` integer DEFAULT 0 NOT NULL,
	`swap_long` real DEFAULT 0 NOT NULL,
	`swap_short` real DEFAULT 0 NOT NULL,
	`swap_rollover3days` integer DEFAULT 3 NOT NULL,
	`margin_mode` integer DEFAULT 0 NOT NULL,
	`margin_divider` real DEFAULT 1 NOT NULL,
	`margin_initial` real DEFAULT 0 NOT NULL,
	`margin_maintenance` real DEFAULT 0 NOT NULL,
	`margin_hedged` real DEFAULT 0 NOT NULL,
	`instant_max_volume` integer DEFAULT 0 NOT NULL,
	`max_volume` integer DEFAULT 0 NOT NULL,
	`exchange` text DEFAULT '' NOT NULL,
	`category` text DEFAULT '' NOT NULL,
	`industry` text DEFAULT '' NOT NULL,
	`sector` text DEFAULT '' NOT NULL,
	`market_cap` real DEFAULT 0 NOT NULL,
	`shareholders` integer DEFAULT 0 NOT NULL,
	`ratings` text DEFAULT '{}' NOT NULL,
	`icon` text DEFAULT '' NOT NULL,
	`sessions` text NOT NULL,
	`sim_price` real NOT NULL,
	`sim_volatility` real NOT NULL,
	`sim_spread` integer DEFAULT 10 NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `orders` (
	`ticket` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`brand_id` integer NOT NULL,
	`login` integer NOT NULL,
	`symbol` text NOT NULL,
	`cmd` integer NOT NULL,
	`volume` integer NOT NULL,
	`state` text NOT NULL,
	`open_price` real NOT NULL,
	`open_time` integer NOT NULL,
	`sl` real DEFAULT 0 NOT NULL,
	`tp` real DEFAULT 0 NOT NULL,
	`expiration` integer DEFAULT 0 NOT NULL,
	`comment` text DEFAULT '' NOT NULL,
	`commission` integer DEFAULT 0 NOT NULL,
	`storage` integer DEFAULT 0 NOT NULL,
	`profit` integer DEFAULT 0 NOT NULL,
	`close_price` real DEFAULT 0 NOT NULL,
	`close_time` integer DEFAULT 0 NOT NULL,
	`close_reason` text DEFAULT '' NOT NULL,
	`parent` integer,
	`rollover_day` integer DEFAULT 0 NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `orders_login_state` ON `orders` (`login`,`state`);--> statement-breakpoint
CREATE INDEX `orders_state_symbol` ON `orders` (`state`,`symbol`);--> statement-breakpoint
CREATE INDEX `orders_history` ON `orders` (`login`,`close_time`,`ticket`);--> statement-breakpoint
CREATE INDEX `orders_updated` ON `orders` (`updated_at`);--> statement-breakpoint
ALTER TABLE `balance_operations` ADD `ticket` integer;