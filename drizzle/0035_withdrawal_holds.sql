CREATE TABLE `copy_holds` (
	`ref` text PRIMARY KEY NOT NULL,
	`login` integer NOT NULL,
	`held_op` integer,
	`amount_minor` integer,
	`balance_before_minor` integer,
	`held_at` integer,
	`outcome` text,
	`outcome_balance_before_minor` integer,
	`outcome_at` integer
);
--> statement-breakpoint
ALTER TABLE `cashier_transactions` ADD `hold_named` integer DEFAULT 0 NOT NULL;