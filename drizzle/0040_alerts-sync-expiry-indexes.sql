CREATE INDEX `price_alerts_updated` ON `price_alerts` (`updated_at`);--> statement-breakpoint
CREATE INDEX `price_alerts_expiry` ON `price_alerts` (`active`,`expires_at`);