ALTER TABLE `copy_subscriptions` ADD `manual_trading_mode` integer DEFAULT 2 NOT NULL;--> statement-breakpoint
-- existing subscriptions have been held to their master's mode of now: that is the mode they keep
UPDATE `copy_subscriptions` SET `manual_trading_mode` = coalesce((SELECT `m`.`manual_trading_mode` FROM `copy_masters` `m` WHERE `m`.`id` = `copy_subscriptions`.`master_id`), 2);
