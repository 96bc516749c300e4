import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/** Payment methods a brand offers (a provider module behind each), with limits and fees. */
export const cashierMethods = sqliteTable(
  'cashier_methods',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    code: text('code').notNull(),
    provider: text('provider').notNull(),
    title: text('title').notNull(),
    deposit: integer('deposit').notNull().default(1),
    withdrawal: integer('withdrawal').notNull().default(0),
    /** JSON arrays: account currencies served; customer countries (ISO alpha-2; empty: every country). */
    currencies: text('currencies').notNull(),
    countries: text('countries').notNull().default('[]'),
    /** Major units of the transaction currency. */
    minAmount: integer('min_amount').notNull(),
    maxAmount: integer('max_amount').notNull(),
    /** Basis points of the amount plus a fixed fee in minor units, taken from the amount. */
    feeBps: integer('fee_bps').notNull().default(0),
    feeFixedMinor: integer('fee_fixed_minor').notNull().default(0),
    enabled: integer('enabled').notNull().default(1),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [uniqueIndex('cashier_methods_code').on(t.brandId, t.code)],
)

/** Staff overrides per customer and method: 0 hides a method from the customer, 1 shows a disabled one. */
export const cashierOverrides = sqliteTable(
  'cashier_overrides',
  {
    brandId: integer('brand_id').notNull(),
    customerId: integer('customer_id').notNull(),
    method: text('method').notNull(),
    enabled: integer('enabled').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [uniqueIndex('cashier_overrides_pk').on(t.brandId, t.customerId, t.method)],
)

/** Deposits and withdrawals (spec 2.13, statuses 3.1). Amounts in minor units of `currency`. */
export const cashierTransactions = sqliteTable(
  'cashier_transactions',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    customerId: integer('customer_id').notNull(),
    login: integer('login').notNull(),
    kind: text('kind', { enum: ['deposit', 'withdrawal'] }).notNull(),
    method: text('method').notNull(),
    provider: text('provider').notNull(),
    status: integer('status').notNull(),
    amount: integer('amount').notNull(),
    fee: integer('fee').notNull().default(0),
    currency: text('currency').notNull(),
    /** The provider's id of the payment, once it gave one. */
    providerRef: text('provider_ref'),
    /** What the provider confirmed, when it differs (manual review). */
    providerAmount: integer('provider_amount'),
    providerCurrency: text('provider_currency'),
    /** Shown to the customer (why it failed, was rejected, is under review). */
    reason: text('reason').notNull().default(''),
    /** Staff only. */
    staffNote: text('staff_note').notNull().default(''),
    creditAttempts: integer('credit_attempts').notNull().default(0),
    /**
     * 1: a withdrawal whose held funds carry its name in the ledger (`holdOf`), so copy trading charges
     * its fee when it is paid out and undoes the hold when it is returned. 0: a deposit, or a withdrawal
     * held before migration 0035, whose hold was an ordinary withdrawal to copy trading (and its return an
     * ordinary deposit).
     */
    holdNamed: integer('hold_named').notNull().default(0),
    /**
     * A withdrawal's payout being sent (epoch ms; 0: none): the approval sets it where it commits and
     * clears it where it writes what the provider answered. Until then, staff's paid and payout-failed are
     * refused (409 PAYOUT_BEING_SENT); past it (the sending instance gone) the reconcile job moves the
     * withdrawal to manual_review, flagged.
     */
    payoutSendingUntil: integer('payout_sending_until').notNull().default(0),
    /** Set by reconciliation when the provider's state disagrees with ours. */
    flagged: integer('flagged').notNull().default(0),
    idempotencyKey: text('idempotency_key'),
    /** SHA-256 of the request the key was first used for (kernel/http/idempotency). */
    requestHash: text('request_hash'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    index('cashier_tx_customer').on(t.brandId, t.customerId, t.id),
    index('cashier_tx_status').on(t.status, t.updatedAt),
    uniqueIndex('cashier_tx_idem').on(t.brandId, t.customerId, t.idempotencyKey),
  ],
)

/** Every status change of a transaction, in order. */
export const cashierHistory = sqliteTable(
  'cashier_history',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    transactionId: integer('transaction_id').notNull(),
    fromStatus: integer('from_status'),
    toStatus: integer('to_status').notNull(),
    /** customer, staff:<id>, provider:<name>, system */
    actor: text('actor').notNull(),
    note: text('note').notNull().default(''),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [index('cashier_history_tx').on(t.transactionId, t.id)],
)

/**
 * Provider webhooks as received (after their signature was verified), one row per brand, provider and
 * event id: a repeated event is a no-op. Each brand has its own account with a provider, whose event ids
 * need not be unique across accounts. The row is committed before the provider gets its 2xx.
 */
export const cashierInbox = sqliteTable(
  'cashier_inbox',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    provider: text('provider').notNull(),
    eventId: text('event_id').notNull(),
    body: text('body').notNull(),
    /** received, processed, ignored, failed */
    state: text('state').notNull().default('received'),
    result: text('result').notNull().default(''),
    attempts: integer('attempts').notNull().default(0),
    /** A processor's claim (epoch ms); another may take the row after it. */
    claimedUntil: integer('claimed_until').notNull().default(0),
    receivedAt: integer('received_at').notNull(),
    processedAt: integer('processed_at'),
  },
  (t) => [
    uniqueIndex('cashier_inbox_event').on(t.brandId, t.provider, t.eventId),
    index('cashier_inbox_state').on(t.state, t.receivedAt),
  ],
)

/**
 * The sandbox payment provider's own records (it runs inside this app for development and tests):
 * payments made on its hosted page and the webhooks it owes the merchant.
 */
export const sandboxPayments = sqliteTable('sandbox_payments', {
  token: text('token').primaryKey(),
  brandId: integer('brand_id').notNull(),
  /** Which provider scheme the webhooks use (sandbox or checkout). */
  provider: text('provider').notNull(),
  reference: text('reference').notNull(),
  amount: integer('amount').notNull(),
  currency: text('currency').notNull(),
  /** created, pending_3ds, captured, declined, refunded, expired (ended unpaid) */
  status: text('status').notNull(),
  notifyUrl: text('notify_url').notNull(),
  returnUrl: text('return_url').notNull(),
  /** Webhooks not yet acknowledged by the merchant (JSON array of {id, type}). */
  outbox: text('outbox').notNull().default('[]'),
  createdAt: integer('created_at').notNull(),
  /** The last change of status, or the last delivery attempt (the retry job takes the oldest first). */
  updatedAt: integer('updated_at').notNull(),
})
