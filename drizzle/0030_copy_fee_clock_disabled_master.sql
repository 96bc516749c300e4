-- a disabled master stops its subscriptions' fee clocks (copytrade README: fees); ACTIVE subscriptions of a
-- master disabled before this version start standing still now
UPDATE `copy_subscriptions` SET `paused_at` = CAST(strftime('%s', 'now') AS INTEGER) * 1000 WHERE `status` = 0 AND `paused_at` IS NULL AND `master_id` IN (SELECT `id` FROM `copy_masters` WHERE `enabled` = 0);
