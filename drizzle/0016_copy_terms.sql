ALTER TABLE `copy_masters` ADD `policy_version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `copy_subscriptions` ADD `reward_type` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `copy_subscriptions` ADD `reward_params` text DEFAULT '{}' NOT NULL;--> statement-breakpoint
ALTER TABLE `copy_subscriptions` ADD `terms_version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `copy_subscriptions` ADD `paused_at` integer;--> statement-breakpoint
-- the subscriptions made before terms were stored accepted the policy their master has now
UPDATE `copy_subscriptions` SET `reward_type` = (SELECT `reward_type` FROM `copy_masters` m WHERE m.`id` = `master_id`), `reward_params` = (SELECT `reward_params` FROM `copy_masters` m WHERE m.`id` = `master_id`);--> statement-breakpoint
-- the pauses that started before the column existed stand still from now
UPDATE `copy_subscriptions` SET `paused_at` = CAST(strftime('%s', 'now') AS INTEGER) * 1000 WHERE `status` = 1;
