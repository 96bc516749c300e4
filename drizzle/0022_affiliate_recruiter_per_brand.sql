-- A recruiter per brand (an affiliate shared by brands is recruited on each by its own staff): what the
-- deployment-wide column held applies, as it did, on every brand the affiliate has access to. And an index
-- for a fact's own reference (the ledger reads a trade's or a deposit's facts per delivery).
ALTER TABLE `affiliate_access` ADD `recruiter_id` integer;--> statement-breakpoint
UPDATE `affiliate_access` SET `recruiter_id` = (SELECT `parent_id` FROM `affiliates` a WHERE a.`id` = `affiliate_access`.`affiliate_id`);--> statement-breakpoint
CREATE INDEX `affiliate_facts_reference` ON `affiliate_facts` (`customer_id`,`kind`,`reference`);--> statement-breakpoint
ALTER TABLE `affiliates` DROP COLUMN `parent_id`;
