CREATE TABLE `trade_requests` (
	`login` integer NOT NULL,
	`idempotency_key` text NOT NULL,
	`kind` text NOT NULL,
	`request_hash` text NOT NULL,
	`ticket` integer NOT NULL,
	`actor` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`login`, `idempotency_key`)
);
--> statement-breakpoint
CREATE INDEX `trade_requests_created` ON `trade_requests` (`created_at`);--> statement-breakpoint
ALTER TABLE `orders` ADD `actor` text DEFAULT '' NOT NULL;