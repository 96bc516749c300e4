ALTER TABLE `accounts` ADD `max_positions` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- a prop phase's account takes its phase's max_positions (the rules are the version bought)
UPDATE `accounts` SET `max_positions` = coalesce(
  (SELECT json_extract(p.`rules`, '$.max_positions') FROM `prop_phases` p WHERE p.`account_login` = `accounts`.`login`), 0)
WHERE `login` IN (SELECT `account_login` FROM `prop_phases`);
