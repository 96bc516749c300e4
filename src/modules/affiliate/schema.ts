import { sql } from 'drizzle-orm'
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
  (t) => [
    uniqueIndex('affiliates_email').on(t.email),
    uniqueIndex('affiliates_code').on(t.code),
    // attribution matches a code in any case (service/directory.ts)
    index('affiliates_code_nocase').on(sql`lower(${t.code})`),
  ],
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
    /** The affiliate that recruited this one on this brand (sub-affiliate overrides, one level); null for none. */
    recruiterId: integer('recruiter_id'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.affiliateId, t.brandId] })],
)

/**
 * When an affiliate's standing changed: its own status (`brand_id` 0: on every brand, `active` or
 * `suspended`) or its access to one brand (`active` or `revoked`). A fact earns a commission only while both
 * stand `active` at its time (domain/standing.ts); the commission ledger re-derives from facts, so the
 * standing must be known over time, not only now. Before a first row the affiliate stands active.
 */
export const standingChanges = sqliteTable(
  'affiliate_standing',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    affiliateId: integer('affiliate_id').notNull(),
    /** 0 for the affiliate's own status, else the brand of an access */
    brandId: integer('brand_id').notNull(),
    status: text('status', { enum: ['active', 'suspended', 'revoked'] }).notNull(),
    fromTime: integer('from_time').notNull(),
  },
  (t) => [index('affiliate_standing_of').on(t.affiliateId, t.brandId, t.fromTime)],
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
    /** registration | kyc | deposit | reversal | trade | bonus | withdrawal */
    kind: text('kind').notNull(),
    reference: text('reference').notNull(),
    valueMinor: integer('value_minor'),
    currency: text('currency').notNull().default(''),
    /** trades: closed volume in hundredths of a lot */
    volume: integer('volume').notNull().default(0),
    eventId: integer('event_id').notNull(),
    eventTime: integer('event_time').notNull(),
  },
  (t) => [
    uniqueIndex('affiliate_facts_event').on(t.customerId, t.kind, t.eventId),
    // a trade's or a deposit's own facts (the ledger's reads per delivery)
    index('affiliate_facts_reference').on(t.customerId, t.kind, t.reference),
  ],
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

/**
 * A commission plan of a brand (issue 44). Its terms live in versions: an edit adds a version effective
 * from then on, so a fact is always paid under the version in effect at its time (domain/plans.ts).
 */
export const commissionPlans = sqliteTable(
  'affiliate_plans',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    name: text('name').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('affiliate_plans_name').on(t.brandId, t.name)],
)

export const planVersions = sqliteTable(
  'affiliate_plan_versions',
  {
    planId: integer('plan_id').notNull(),
    version: integer('version').notNull(),
    effectiveFrom: integer('effective_from').notNull(),
    /** JSON of PlanTerms (domain/plans.ts) */
    terms: text('terms').notNull(),
    createdBy: integer('created_by').notNull().default(0),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.planId, t.version] })],
)

/**
 * Which plan pays an affiliate on a brand from `effective_from` on; affiliate 0 is the brand's default
 * plan (for affiliates without an assignment of their own).
 */
export const planAssignments = sqliteTable(
  'affiliate_plan_assignments',
  {
    brandId: integer('brand_id').notNull(),
    affiliateId: integer('affiliate_id').notNull(),
    effectiveFrom: integer('effective_from').notNull(),
    planId: integer('plan_id').notNull(),
    assignedBy: integer('assigned_by').notNull().default(0),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.brandId, t.affiliateId, t.effectiveFrom] })],
)

/**
 * A referred customer with the dimensions the reports group by: the link, the tracker's sub-ids, the
 * customer's country and the link's landing page. Written once, with the customer's first fact.
 */
export const referredCustomers = sqliteTable(
  'affiliate_customers',
  {
    customerId: integer('customer_id').primaryKey(),
    brandId: integer('brand_id').notNull(),
    affiliateId: integer('affiliate_id').notNull(),
    linkId: integer('link_id'),
    sub1: text('sub1').notNull().default(''),
    sub2: text('sub2').notNull().default(''),
    sub3: text('sub3').notNull().default(''),
    sub4: text('sub4').notNull().default(''),
    sub5: text('sub5').notNull().default(''),
    country: text('country').notNull().default(''),
    landingPath: text('landing_path').notNull().default(''),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('affiliate_customers_aff').on(t.brandId, t.affiliateId)],
)

/**
 * The commission ledger (issue 44), integer minor units. A row is one key's amount in one period: the keys
 * a customer's facts derive (`c<customer>:cpa`, `c<customer>:rev:trade:<ticket>`, …; domain/commissions.ts)
 * and the period-level rows a close writes (`tier:…`, `sub:…`). Rows of a closed period never change: when
 * the facts later derive another amount for a key, the difference is a row of the first open period
 * (`corrects` names the period it corrects).
 */
export const commissions = sqliteTable(
  'affiliate_commissions',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    affiliateId: integer('affiliate_id').notNull(),
    /** the referred customer the row derives from; 0 for a period-level row */
    customerId: integer('customer_id').notNull().default(0),
    /** the recruited affiliate a sub-affiliate override is taken from; 0 otherwise */
    sourceAffiliateId: integer('source_affiliate_id').notNull().default(0),
    kind: text('kind', {
      enum: ['cpa', 'cpa_reversal', 'revshare', 'revshare_reversal', 'tier_adjustment', 'sub_affiliate'],
    }).notNull(),
    key: text('key').notNull(),
    /** YYYY-MM (UTC) */
    period: text('period').notNull(),
    amountMinor: integer('amount_minor').notNull(),
    currency: text('currency').notNull(),
    /** what the rate applied to (revenue, deposit, the month's basis); the CPA amount for a CPA */
    basisMinor: integer('basis_minor').notNull().default(0),
    /** basis points (1/100 of a percent); 0 for a CPA */
    rateBp: integer('rate_bp').notNull().default(0),
    /** closed hundredths of a lot (trading revenue rows) */
    volume: integer('volume').notNull().default(0),
    planId: integer('plan_id').notNull().default(0),
    planVersion: integer('plan_version').notNull().default(0),
    /** JSON array of affiliate_facts ids */
    factIds: text('fact_ids').notNull().default('[]'),
    corrects: text('corrects').notNull().default(''),
    eventTime: integer('event_time').notNull(),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    // one open row per key and currency: a key whose currency changed after a close takes the old currency
    // back in its own row
    uniqueIndex('affiliate_commissions_key').on(t.brandId, t.affiliateId, t.key, t.currency, t.period),
    index('affiliate_commissions_customer').on(t.customerId),
    index('affiliate_commissions_period').on(t.brandId, t.period, t.affiliateId),
    index('affiliate_commissions_time').on(t.brandId, t.affiliateId, t.eventTime),
    // a close prices again only the closed months' rows of tiered plans (service/periods.ts)
    index('affiliate_commissions_plan').on(t.brandId, t.planId, t.period),
  ],
)

/**
 * Running totals of one open period's RevShare customer rows per (affiliate, plan version, currency): what
 * the period's rounding row is computed from (`share(basis) − paid`), kept by each delivery's deltas so a
 * delivery costs the same at 100 rows as at 100,000 (ADR 0024). Totals of closed periods are deleted by the
 * close.
 */
export const revshareTotals = sqliteTable(
  'affiliate_revshare_totals',
  {
    brandId: integer('brand_id').notNull(),
    affiliateId: integer('affiliate_id').notNull(),
    /** YYYY-MM (UTC), an open period */
    period: text('period').notNull(),
    planId: integer('plan_id').notNull(),
    planVersion: integer('plan_version').notNull(),
    currency: text('currency').notNull(),
    /** Σ basis of the group's customer rows (kinds revshare and revshare_reversal) */
    basisMinor: integer('basis_minor').notNull().default(0),
    /** Σ amount they paid */
    paidMinor: integer('paid_minor').notNull().default(0),
    /** the version's rate (the largest of the rows') */
    rateBp: integer('rate_bp').notNull().default(0),
    /** how many rows */
    rows: integer('rows').notNull().default(0),
    /** the latest event time of the rows (the rounding row's) */
    eventTime: integer('event_time').notNull().default(0),
  },
  (t) => [
    primaryKey({
      columns: [t.brandId, t.affiliateId, t.period, t.planId, t.planVersion, t.currency],
    }),
  ],
)

/** A brand's closed periods: once a row is here, nothing of that period changes. */
export const commissionPeriods = sqliteTable(
  'affiliate_periods',
  {
    brandId: integer('brand_id').notNull(),
    period: text('period').notNull(),
    closedAt: integer('closed_at').notNull(),
    closedBy: integer('closed_by').notNull().default(0),
    /**
     * How the close priced tiers (domain/periods.ts `PRICING_BY_DEPOSIT_MONTH`): 1, a reversal of an earlier
     * month's deposit counted against that month, and the month is priced again while its hold is open; 0, a
     * close of a release before (such a reversal counted in the month it fell in): kept as it was priced;
     * 2 (`PRICING_SPLIT_MONTHS`), as 1 and each earlier month nobody closed that joined it priced on its own
     * metric under its own keys (split by event month when priced again; a 1 is priced again as one).
     */
    pricing: integer('pricing').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.brandId, t.period] })],
)

/** What a closed period owes an affiliate: approved by staff, then paid with a reference. */
export const statements = sqliteTable(
  'affiliate_statements',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    affiliateId: integer('affiliate_id').notNull(),
    period: text('period').notNull(),
    /** pending | approved | paid */
    status: text('status', { enum: ['pending', 'approved', 'paid'] })
      .notNull()
      .default('pending'),
    /** JSON array of {currency, amount_minor, rows} */
    totals: text('totals').notNull(),
    rows: integer('rows').notNull(),
    createdAt: integer('created_at').notNull(),
    approvedAt: integer('approved_at'),
    approvedBy: integer('approved_by'),
    paidAt: integer('paid_at'),
    paidBy: integer('paid_by'),
    paymentReference: text('payment_reference').notNull().default(''),
  },
  (t) => [
    uniqueIndex('affiliate_statements_period').on(t.brandId, t.affiliateId, t.period),
    index('affiliate_statements_status').on(t.brandId, t.status),
  ],
)
