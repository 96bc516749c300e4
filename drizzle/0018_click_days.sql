CREATE TABLE `attribution_click_days` (
	`brand_id` integer NOT NULL,
	`affiliate_id` integer NOT NULL,
	`day` integer NOT NULL,
	`clicks` integer NOT NULL,
	`unique_clicks` integer NOT NULL,
	PRIMARY KEY(`brand_id`, `affiliate_id`, `day`)
);
