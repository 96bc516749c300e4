ALTER TABLE `cashier_transactions` ADD `request_hash` text;--> statement-breakpoint
ALTER TABLE `prop_purchases` ADD `request_hash` text;