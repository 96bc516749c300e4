-- Hosts per site (ADR 0022): `brand_hosts.site` says which site of its brand a host serves, the brand's
-- own (`brand`: its API and pages) or one a module declares. A brand's `affiliate_host` becomes its host
-- of the partner site (the affiliate module's); an empty one is no host, and a host already listed (an
-- API host) stays what it was.
ALTER TABLE `brand_hosts` ADD `site` text DEFAULT 'brand' NOT NULL;--> statement-breakpoint
INSERT OR IGNORE INTO `brand_hosts` (`host`, `brand_id`, `site`)
SELECT `affiliate_host`, `id`, 'partner' FROM `brands` WHERE `affiliate_host` <> '';--> statement-breakpoint
DROP INDEX `brands_affiliate_host_unique`;--> statement-breakpoint
ALTER TABLE `brands` DROP COLUMN `affiliate_host`;
