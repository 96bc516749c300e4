ALTER TABLE `groups` ADD `self_service` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
-- the demo's prop groups (seeded before this column) are for prop phases' accounts only
UPDATE `groups` SET `self_service` = 0 WHERE `name` IN ('prop\eval\USD', 'prop\funded\USD');
