CREATE TABLE `affiliate_standing` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`affiliate_id` integer NOT NULL,
	`brand_id` integer NOT NULL,
	`status` text NOT NULL,
	`from_time` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `affiliate_standing_of` ON `affiliate_standing` (`affiliate_id`,`brand_id`,`from_time`);--> statement-breakpoint
DROP INDEX `affiliate_commissions_key`;--> statement-breakpoint
CREATE UNIQUE INDEX `affiliate_commissions_key` ON `affiliate_commissions` (`brand_id`,`affiliate_id`,`key`,`currency`,`period`);--> statement-breakpoint
-- affiliates suspended and accesses revoked before this release: they earn nothing from now on (when their
-- standing changed is not known; what they earned before stays as it was derived)
INSERT INTO `affiliate_standing` (`affiliate_id`, `brand_id`, `status`, `from_time`)
SELECT `id`, 0, 'suspended', CAST(strftime('%s', 'now') AS INTEGER) * 1000 FROM `affiliates` WHERE `status` = 'suspended';--> statement-breakpoint
INSERT INTO `affiliate_standing` (`affiliate_id`, `brand_id`, `status`, `from_time`)
SELECT `affiliate_id`, `brand_id`, 'revoked', CAST(strftime('%s', 'now') AS INTEGER) * 1000 FROM `affiliate_access` WHERE `status` = 'revoked';
