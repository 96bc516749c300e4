CREATE TABLE `affiliate_revshare_totals` (
	`brand_id` integer NOT NULL,
	`affiliate_id` integer NOT NULL,
	`period` text NOT NULL,
	`plan_id` integer NOT NULL,
	`plan_version` integer NOT NULL,
	`currency` text NOT NULL,
	`basis_minor` integer DEFAULT 0 NOT NULL,
	`paid_minor` integer DEFAULT 0 NOT NULL,
	`rate_bp` integer DEFAULT 0 NOT NULL,
	`rows` integer DEFAULT 0 NOT NULL,
	`event_time` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`brand_id`, `affiliate_id`, `period`, `plan_id`, `plan_version`, `currency`)
);
--> statement-breakpoint
-- the totals of every open period's RevShare customer rows, as the deliveries keep them from now on
INSERT INTO `affiliate_revshare_totals` (`brand_id`, `affiliate_id`, `period`, `plan_id`, `plan_version`,
	`currency`, `basis_minor`, `paid_minor`, `rate_bp`, `rows`, `event_time`)
SELECT c.`brand_id`, c.`affiliate_id`, c.`period`, c.`plan_id`, c.`plan_version`, c.`currency`,
	sum(c.`basis_minor`), sum(c.`amount_minor`), max(c.`rate_bp`), count(*), max(c.`event_time`)
FROM `affiliate_commissions` c
WHERE c.`kind` IN ('revshare', 'revshare_reversal') AND c.`customer_id` <> 0
	AND c.`period` > coalesce((SELECT max(p.`period`) FROM `affiliate_periods` p WHERE p.`brand_id` = c.`brand_id`), '')
GROUP BY c.`brand_id`, c.`affiliate_id`, c.`period`, c.`plan_id`, c.`plan_version`, c.`currency`;
