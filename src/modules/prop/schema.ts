import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/** Prop programs of a brand. `steps` is JSON (domain/program.ts); a save bumps `version`. */
export const propPrograms = sqliteTable(
  'prop_programs',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    priceMinor: integer('price_minor').notNull(),
    currency: text('currency').notNull(),
    active: integer('active').notNull(),
    timeZone: text('time_zone').notNull(),
    version: integer('version').notNull().default(1),
    steps: text('steps').notNull(),
    /** PurchaseLimits as JSON; null: the default (domain/limits.ts). */
    limits: text('limits'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [uniqueIndex('prop_programs_name').on(t.brandId, t.name)],
)

/** Purchases (2.14); one per (customer, idempotency key). Status values: spec 3.2. */
export const propPurchases = sqliteTable(
  'prop_purchases',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    programId: integer('program_id').notNull(),
    programVersion: integer('program_version').notNull(),
    /**
     * The program's steps as bought (a ProgramStep[] JSON): its next phases and its profit split. A later
     * edit of the program applies to new purchases only.
     */
    steps: text('steps').notNull().default('[]'),
    customerId: integer('customer_id').notNull(),
    payerLogin: integer('payer_login').notNull(),
    accountLogin: integer('account_login'),
    status: integer('status').notNull(),
    nextAction: text('next_action').notNull().default(''),
    comment: text('comment').notNull().default(''),
    idempotencyKey: text('idempotency_key'),
    /** SHA-256 of the request the key was first used for (kernel/http/idempotency). */
    requestHash: text('request_hash'),
    paymentStatus: text('payment_status').notNull(),
    activationStatus: text('activation_status').notNull(),
    failureReason: text('failure_reason').notNull().default(''),
    currency: text('currency').notNull(),
    canRetry: integer('can_retry').notNull().default(0),
    canCancel: integer('can_cancel').notNull().default(0),
    amountMinor: integer('amount_minor').notNull(),
    conversionRate: integer('conversion_rate_ppm').notNull().default(1_000_000),
    paymentOrder: integer('payment_order'),
    initialBalanceOrder: integer('initial_balance_order'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('prop_purchases_idem').on(t.brandId, t.customerId, t.idempotencyKey),
    index('prop_purchases_customer').on(t.customerId, t.id),
  ],
)

/** Challenges (2.15), one per purchase. Status values: spec 3.3. */
export const propChallenges = sqliteTable(
  'prop_challenges',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    purchaseId: integer('purchase_id').notNull(),
    programId: integer('program_id').notNull(),
    customerId: integer('customer_id').notNull(),
    accountLogin: integer('account_login').notNull(),
    currentPhaseIndex: integer('current_phase_index').notNull(),
    status: integer('status').notNull(),
    startTime: integer('start_time').notNull(),
    endTime: integer('end_time').notNull().default(0),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('prop_challenges_purchase').on(t.purchaseId),
    index('prop_challenges_customer').on(t.customerId, t.id),
  ],
)

/**
 * Phases of a challenge: each has its own account and a copy of its step's rules (the version bought),
 * so a later edit of the program changes no running phase. Status: 0 pending, 1 active, 2 passed,
 * 3 failed, 4 cancelled.
 */
export const propPhases = sqliteTable(
  'prop_phases',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    challengeId: integer('challenge_id').notNull(),
    programId: integer('program_id').notNull(),
    phaseIndex: integer('phase_index').notNull(),
    phaseType: integer('phase_type').notNull(),
    accountLogin: integer('account_login').notNull(),
    accountGroup: text('account_group').notNull(),
    currency: text('currency').notNull(),
    rules: text('rules').notNull(),
    timeZone: text('time_zone').notNull(),
    status: integer('status').notNull(),
    initialBalance: integer('initial_balance').notNull(),
    initialEquity: integer('initial_equity').notNull(),
    finalBalance: integer('final_balance'),
    finalEquity: integer('final_equity'),
    highestEodBalance: integer('highest_eod_balance').notNull(),
    /**
     * Payouts made from the phase: each adds one in its transaction (which moves the highest end-of-day
     * balance down). A pass raises the highest only where this is still what it read (evaluator.ts).
     */
    payoutCount: integer('payout_count').notNull().default(0),
    tradingDays: integer('trading_days').notNull().default(0),
    /**
     * The latest local day `trading_days` counts ('' when it counts none, or a phase from before this
     * column): `trading_days` counts today exactly when this is today. Written with it, in one statement.
     */
    lastTradingDay: text('last_trading_day').notNull().default(''),
    startDay: text('start_day').notNull(),
    startTime: integer('start_time').notNull(),
    endTime: integer('end_time').notNull().default(0),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('prop_phases_index').on(t.challengeId, t.phaseIndex),
    uniqueIndex('prop_phases_login').on(t.accountLogin),
    // by status (the active phases), and the engine's minute pass over the phases failed lately (live.ts
    // closeOutFailed): a range of end times, with the login, from the index alone
    index('prop_phases_status_end').on(t.status, t.endTime, t.accountLogin),
  ],
)

/**
 * One row per phase and local day: the day's start snapshot and its activity. A day ends where the next
 * one starts (its end figures are the next row's start, shown so by the metrics), so no row is written
 * again when its day is over. `settled`: the days before this one are settled (their last activity
 * written, the highest end-of-day balance raised by their ends). The evaluator inserts its rows settled,
 * in the transaction that settles their predecessors; the engine's first tick of a day inserts its row
 * unsettled, and the next pass settles it. A pass reads each phase's latest row by the primary key, and
 * the rows from the latest settled one only when the latest is not settled (ADR 0012).
 */
export const propDays = sqliteTable(
  'prop_days',
  {
    phaseId: integer('phase_id').notNull(),
    day: text('day').notNull(),
    startBalance: integer('start_balance').notNull(),
    startEquity: integer('start_equity').notNull(),
    minEquity: integer('min_equity').notNull(),
    positionsOpened: integer('positions_opened').notNull().default(0),
    tradingDay: integer('trading_day').notNull().default(0),
    settled: integer('settled').notNull().default(0),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.phaseId, t.day] })],
)

/** The breach that ended a phase: one per phase (the unique index makes a second a no-op). */
export const propBreaches = sqliteTable(
  'prop_breaches',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    phaseId: integer('phase_id').notNull(),
    challengeId: integer('challenge_id').notNull(),
    rule: text('rule').notNull(),
    limitValue: integer('limit_value').notNull(),
    anchor: integer('anchor').notNull(),
    observed: integer('observed').notNull(),
    tickTime: integer('tick_time').notNull(),
    detectedAt: integer('detected_at').notNull(),
  },
  (t) => [uniqueIndex('prop_breaches_phase').on(t.phaseId)],
)

/** Warnings sent (once per phase, day, rule and level). */
export const propWarnings = sqliteTable(
  'prop_warnings',
  {
    phaseId: integer('phase_id').notNull(),
    day: text('day').notNull(),
    rule: text('rule').notNull(),
    level: integer('level').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.phaseId, t.day, t.rule, t.level] })],
)

/**
 * Payouts of a funded phase: the profit over the initial balance leaves the funded account and the
 * trader's split reaches the payer account. `seq` is unique per phase, so two requests pay once.
 */
export const propPayouts = sqliteTable(
  'prop_payouts',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    challengeId: integer('challenge_id').notNull(),
    phaseId: integer('phase_id').notNull(),
    seq: integer('seq').notNull(),
    profit: integer('profit').notNull(),
    share: integer('share').notNull(),
    splitPpm: integer('split_ppm').notNull(),
    payerLogin: integer('payer_login').notNull(),
    fundedLogin: integer('funded_login').notNull(),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [uniqueIndex('prop_payouts_seq').on(t.phaseId, t.seq)],
)
