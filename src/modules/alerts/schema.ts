import { index, integer, real, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/** Price alerts (spec 4.5): the request fields, plus activity and firing bookkeeping. */
export const priceAlerts = sqliteTable(
  'price_alerts',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    login: integer('login').notNull(),
    symbol: text('symbol').notNull(),
    indicatorName: text('indicator_name').notNull().default(''),
    message: text('message').notNull().default(''),
    /** 0 bid, 1 ask. */
    side: integer('side').notNull(),
    condition: integer('condition').notNull(),
    targetPrice: real('target_price').notNull().default(0),
    channelLow: real('channel_low').notNull().default(0),
    channelHigh: real('channel_high').notNull().default(0),
    moveThreshold: real('move_threshold').notNull().default(0),
    /** 0 once, 1 repeat. */
    repeatMode: integer('repeat_mode').notNull().default(0),
    /** Epoch seconds; 0 none. */
    expiresAt: integer('expires_at').notNull().default(0),
    referencePrice: real('reference_price').notNull().default(0),
    referenceTime: integer('reference_time').notNull().default(0),
    /** 1 active; 0 after a once-alert fired, on expiry, or when the client disabled it. */
    active: integer('active').notNull().default(1),
    firedCount: integer('fired_count').notNull().default(0),
    lastFiredAt: integer('last_fired_at').notNull().default(0),
    lastPrice: real('last_price').notNull().default(0),
    /**
     * Epoch ms: when what the alert watches last changed (created, or an edit that re-armed it: domain
     * rearms, watchChangedAt). A repeat alert filed again waits for its reset only if it fired since
     * (domain firedThisEpisode). 0: rows written before the column (or by an instance that does not write
     * it), judged by their last firing's price alone.
     */
    watchChangedAt: integer('watch_changed_at').notNull().default(0),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    index('price_alerts_login').on(t.login, t.active),
    index('price_alerts_active').on(t.active, t.symbol),
    // the 2 s resync reads the alerts written since its last run (engine.ts changedSince), not the table
    index('price_alerts_updated').on(t.updatedAt),
    // the 2 s expiry job finds the active alerts past their expiry (engine.ts EXPIRE_DUE) by a range
    index('price_alerts_expiry').on(t.active, t.expiresAt),
  ],
)

export type AlertRow = typeof priceAlerts.$inferSelect
