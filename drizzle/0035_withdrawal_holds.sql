CREATE TABLE `copy_holds` (
	`ref` text PRIMARY KEY NOT NULL,
	`login` integer NOT NULL,
	`amount_minor` integer,
	`held_at` integer,
	`parts` text,
	`outcome` text,
	`outcome_balance_before_minor` integer,
	`outcome_at` integer
);
--> statement-breakpoint
DROP INDEX `copy_rewards_owed`;--> statement-breakpoint
CREATE INDEX `copy_rewards_owed` ON `copy_rewards` (`subscription_id`) WHERE status in ('pending', 'held');--> statement-breakpoint
ALTER TABLE `cashier_transactions` ADD `hold_named` integer DEFAULT 0 NOT NULL;