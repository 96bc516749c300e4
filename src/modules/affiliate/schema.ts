import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/**
 * An affiliate (partner): its home brand, a code unique in the deployment (it travels in public URLs),
 * its status. Cabinet passwords are per brand (`affiliate_access`).
 */
export const affiliates = sqliteTable(
  'affiliates',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    email: text('email').notNull(),
    code: text('code').notNull(),
    name: text('name').notNull().default(''),
    /** active | suspended */
    status: text('status', { enum: ['active', 'suspended'] })
      .notNull()
      .default('active'),
    /** Server-to-server postback URL (on the brand's allowlist), '' for none. */
    postbackUrl: text('postback_url').notNull().default(''),
    postbackEnabled: integer('postback_enabled').notNull().default(1),
    /** Failed sends in a row; 20 disable the endpoint. */
    postbackFailures: integer('postback_failures').notNull().default(0),
    postbackDisabledReason: text('postback_disabled_reason').notNull().default(''),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('affiliates_email').on(t.email), uniqueIndex('affiliates_code').on(t.code)],
)

/** An affiliate's access to a brand, with its cabinet password there (spec 5.4: per affiliate and brand). */
export const affiliateAccess = sqliteTable(
  'affiliate_access',
  {
    affiliateId: integer('affiliate_id').notNull(),
    brandId: integer('brand_id').notNull(),
    /** active | revoked */
    status: text('status', { enum: ['active', 'revoked'] })
      .notNull()
      .default('active'),
    passwordHash: text('password_hash').notNull().default(''),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.affiliateId, t.brandId] })],
)

/** Signing keys of an affiliate's postbacks: the newest signs; an older one stays known until deleted. */
export const postbackKeys = sqliteTable('affiliate_postback_keys', {
  id: text('id').primaryKey(),
  affiliateId: integer('affiliate_id').notNull(),
  secret: text('secret').notNull(),
  createdAt: integer('created_at').notNull(),
})

/** A tracking link: `GET /go/{code}` on the brand records the click and redirects to `landing_path`. */
export const trackingLinks = sqliteTable(
  'affiliate_links',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    affiliateId: integer('affiliate_id').notNull(),
    code: text('code').notNull(),
    /** A path on the brand's own hosts (never another host: no open redirect). */
    landingPath: text('landing_path').notNull().default('/'),
    campaign: text('campaign').notNull().default(''),
    active: integer('active').notNull().default(1),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('affiliate_links_code').on(t.brandId, t.code),
    index('affiliate_links_aff').on(t.affiliateId),
  ],
)

/** Per brand: which hosts postbacks may go to, and what makes an active trader. */
export const affiliateSettings = sqliteTable('affiliate_settings', {
  brandId: integer('brand_id').primaryKey(),
  /** JSON array of hostnames. */
  postbackHosts: text('postback_hosts').notNull().default('[]'),
  /** Closed lots (summed) that make a referred customer an active trader; 0: the first closed trade. */
  activeTraderLots: integer('active_trader_centilots').notNull().default(0),
})

/**
 * What happened to a referred customer, one row per event (unique per customer, kind and event): the rows
 * are derived from these in time order (domain/conversions.ts), so late and repeated events change
 * nothing a replay in order would not give.
 */
export const conversionFacts = sqliteTable(
  'affiliate_facts',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    customerId: integer('customer_id').notNull(),
    /** registration | kyc | deposit | reversal | trade */
    kind: text('kind').notNull(),
    reference: text('reference').notNull(),
    valueMinor: integer('value_minor'),
    currency: text('currency').notNull().default(''),
    /** trades: closed volume in hundredths of a lot */
    volume: integer('volume').notNull().default(0),
    eventId: integer('event_id').notNull(),
    eventTime: integer('event_time').notNull(),
  },
  (t) => [uniqueIndex('affiliate_facts_event').on(t.customerId, t.kind, t.eventId)],
)

/**
 * The conversion ledger (spec 2.17, 4.17). `key` is the kind for the once-kinds and `deposit:<tx>` /
 * `deposit_reversal:<tx>` per cashier transaction: unique per customer.
 */
export const conversions = sqliteTable(
  'affiliate_conversions',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    affiliateId: integer('affiliate_id').notNull(),
    linkId: integer('link_id'),
    customerId: integer('customer_id').notNull(),
    kind: text('kind').notNull(),
    key: text('key').notNull(),
    valueMinor: integer('value_minor'),
    currency: text('currency').notNull().default(''),
    referenceId: text('reference_id').notNull().default(''),
    eventTime: integer('event_time').notNull(),
    eventId: integer('event_id').notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('affiliate_conversions_key').on(t.customerId, t.key),
    index('affiliate_conversions_aff').on(t.brandId, t.affiliateId, t.eventTime),
    // one kind's pages (the integration API's customers) without stepping over the other kinds
    index('affiliate_conversions_kind').on(t.brandId, t.affiliateId, t.kind, t.eventTime),
  ],
)

/** Postbacks on their way: one per conversion row written or corrected, sent by a job with backoff. */
export const postbacks = sqliteTable(
  'affiliate_postbacks',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    affiliateId: integer('affiliate_id').notNull(),
    conversionId: integer('conversion_id').notNull(),
    body: text('body').notNull(),
    /** pending | sent | dead */
    status: text('status', { enum: ['pending', 'sent', 'dead'] })
      .notNull()
      .default('pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAt: integer('next_at').notNull(),
    leaseUntil: integer('lease_until').notNull().default(0),
    lastError: text('last_error').notNull().default(''),
    createdAt: integer('created_at').notNull(),
    sentAt: integer('sent_at'),
  },
  (t) => [index('affiliate_postbacks_due').on(t.status, t.nextAt)],
)

/**
 * Affiliate tokens: cabinet sessions (`cabinet`) and integration tokens (`api`, spec 4.18, 5.5). The JWT
 * carries the id; the row keeps a hash of the token, a short visible prefix, scopes, expiry, last use
 * and revocation, and is checked on every request, so a revocation applies from the next one.
 */
export const affiliateTokens = sqliteTable(
  'affiliate_tokens',
  {
    id: text('id').primaryKey(),
    kind: text('kind').notNull(),
    affiliateId: integer('affiliate_id').notNull(),
    brandId: integer('brand_id').notNull(),
    prefix: text('prefix').notNull().default(''),
    tokenHash: text('token_hash').notNull().default(''),
    /** JSON array */
    scopes: text('scopes').notNull().default('[]'),
    createdBy: integer('created_by').notNull().default(0),
    createdAt: integer('created_at').notNull(),
    expiresAt: integer('expires_at').notNull(),
    lastUsedAt: integer('last_used_at'),
    revokedAt: integer('revoked_at'),
  },
  (t) => [index('affiliate_tokens_owner').on(t.affiliateId, t.brandId, t.kind)],
)
