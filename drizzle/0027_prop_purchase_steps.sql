ALTER TABLE `prop_purchases` ADD `steps` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
-- purchases made before kept no copy: their program's steps now are the best record of what was bought
UPDATE `prop_purchases` SET `steps` = coalesce((SELECT `p`.`steps` FROM `prop_programs` `p` WHERE `p`.`id` = `prop_purchases`.`program_id`), '[]');
