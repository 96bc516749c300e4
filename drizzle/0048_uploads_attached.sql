ALTER TABLE `uploads` ADD `attached_at` integer;--> statement-breakpoint
ALTER TABLE `uploads` ADD `released_at` integer;--> statement-breakpoint
-- files stored before uploads could tell which are in use may be in use (a KYC document, an avatar):
-- every existing one counts as attached when it was made, so the sweep never removes one of them
UPDATE `uploads` SET `attached_at` = `created_at` WHERE `attached_at` IS NULL;--> statement-breakpoint
CREATE INDEX `uploads_unattached` ON `uploads` (`attached_at`,`created_at`);--> statement-breakpoint
CREATE INDEX `uploads_released` ON `uploads` (`released_at`);
