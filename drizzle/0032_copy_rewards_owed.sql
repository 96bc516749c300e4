CREATE INDEX `copy_rewards_owed` ON `copy_rewards` (`subscription_id`) WHERE status = 'pending';--> statement-breakpoint
-- subscriptions ended while paused keep their fee dates moved on by the time they stood still, as an end
-- does from now on (service/subscription-status.ts: feeClock)
UPDATE `copy_subscriptions` SET `next_fee_at` = `next_fee_at` + max(0, `updated_at` - `paused_at`), `next_perf_at` = `next_perf_at` + max(0, `updated_at` - `paused_at`), `paused_at` = NULL WHERE `status` = 2 AND `paused_at` IS NOT NULL;
