import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/**
 * A marketing touch (spec 4.16): a brand page opened with attribution values, a tracking-link click, an
 * app install's values, or the values an external landing page passed at registration. Addresses are
 * kept only as a keyed hash.
 */
export const touches = sqliteTable(
  'attribution_touches',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    visitorId: text('visitor_id'),
    installationId: text('installation_id'),
    /** page | click | install | registration */
    source: text('source').notNull(),
    affiliateId: integer('affiliate_id'),
    linkId: integer('link_id'),
    /** JSON of the public values as given (codes, campaign, utm_*, sub1..sub5, click_id) */
    params: text('params').notNull().default('{}'),
    /** 1 when it holds no attribution value (a visit from a referring site) */
    direct: integer('direct').notNull().default(0),
    bot: integer('bot').notNull().default(0),
    /** A click: 1 for the first of its visitor on its link within the hour (unique clicks), 0 for a repeat. */
    uniqueClick: integer('unique_click').notNull().default(1),
    /** Suspected fraud: its address clicked too often, or rotated user agents, within minutes. */
    suspect: integer('suspect').notNull().default(0),
    ipHash: text('ip_hash').notNull().default(''),
    userAgent: text('user_agent').notNull().default(''),
    landingPath: text('landing_path').notNull().default(''),
    referrer: text('referrer').notNull().default(''),
    /** The visitor's country (ISO 3166-1 alpha-2) from the edge's `cf-ipcountry` header; '' when unknown. */
    country: text('country').notNull().default(''),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [
    index('attribution_touches_visitor').on(t.brandId, t.visitorId, t.createdAt),
    // an affiliate's clicks in a period (its funnel, lists and reports): only attributed touches of people
    index('attribution_touches_affiliate')
      .on(t.brandId, t.affiliateId, t.createdAt)
      .where(sql`affiliate_id is not null and bot = 0`),
    // only install touches are looked up by installation: page hits do not pay for this index
    index('attribution_touches_install')
      .on(t.brandId, t.installationId)
      .where(sql`installation_id is not null`),
  ],
)

/** A mobile app install (POST /app) and its first open (POST /app/activate); replays change nothing. */
export const installs = sqliteTable(
  'attribution_installs',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    installationId: text('installation_id').notNull(),
    platform: text('platform').notNull(),
    touchId: integer('touch_id'),
    activatedAt: integer('activated_at'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('attribution_installs_id').on(t.brandId, t.installationId)],
)

/** Why a registration was attributed as it was: the touches considered and the rule that chose. */
export const decisions = sqliteTable('attribution_decisions', {
  id: integer('id').primaryKey({ autoIncrement: true }),
  brandId: integer('brand_id').notNull(),
  visitorId: text('visitor_id'),
  installationId: text('installation_id'),
  touchId: integer('touch_id'),
  /** install | registration_body | last_touch | last_direct | none; self_referral: the touch that won was
   * the registrant's own affiliate's, so the customer is referred by nobody */
  wonBy: text('won_by').notNull(),
  /** JSON array of touch ids */
  considered: text('considered').notNull().default('[]'),
  windowDays: integer('window_days').notNull(),
  createdAt: integer('created_at').notNull(),
})

/**
 * The clicks of pruned touches (attribution.touches-retention), per brand, affiliate and UTC day: the
 * cabinet's funnel counts them for days no longer kept one by one.
 */
export const clickDays = sqliteTable(
  'attribution_click_days',
  {
    brandId: integer('brand_id').notNull(),
    affiliateId: integer('affiliate_id').notNull(),
    /** epoch days (UTC) */
    day: integer('day').notNull(),
    clicks: integer('clicks').notNull(),
    uniqueClicks: integer('unique_clicks').notNull(),
  },
  (t) => [primaryKey({ columns: [t.brandId, t.affiliateId, t.day] })],
)
