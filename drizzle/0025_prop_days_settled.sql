ALTER TABLE `prop_days` ADD `settled` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- a row is settled when every day before it has ended (ADR 0012): its day is not after its phase's first open day
UPDATE `prop_days` SET `settled` = 1 WHERE `day` <= coalesce((SELECT min(`p`.`day`) FROM `prop_days` `p` WHERE `p`.`phase_id` = `prop_days`.`phase_id` AND `p`.`end_balance` IS NULL), '9999');--> statement-breakpoint
DROP INDEX `prop_days_open`;--> statement-breakpoint
ALTER TABLE `prop_days` DROP COLUMN `end_balance`;--> statement-breakpoint
ALTER TABLE `prop_days` DROP COLUMN `end_equity`;
