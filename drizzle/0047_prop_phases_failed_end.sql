DROP INDEX `prop_phases_status`;--> statement-breakpoint
CREATE INDEX `prop_phases_status_end` ON `prop_phases` (`status`,`end_time`,`account_login`);