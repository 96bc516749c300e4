import { sql } from 'drizzle-orm'
import { index, integer, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/**
 * A strategy profile on a customer's REAL account (spec 2.16). Enumerations are spec 2.16.1's integers.
 * The statistics columns are kept by the events of the master's closed trades (domain/stats.ts), so the
 * marketplace never scans a history.
 */
export const copyMasters = sqliteTable(
  'copy_masters',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    customerId: integer('customer_id').notNull(),
    login: integer('login').notNull(),
    name: text('name').notNull(),
    description: text('description').notNull().default(''),
    allowedFollowerModes: integer('allowed_follower_modes').notNull(),
    showTradeHistory: integer('show_trade_history').notNull(),
    showFollowers: integer('show_followers').notNull(),
    manualTradingMode: integer('manual_trading_mode').notNull(),
    rewardType: integer('reward_type').notNull(),
    /** The reward policy's parameters as JSON (domain/rewards.ts). */
    rewardParams: text('reward_params').notNull(),
    payoutLogin: integer('payout_login').notNull(),
    enabled: integer('enabled').notNull(),
    public: integer('public').notNull(),
    /** Set by staff when they disable a master: the owner cannot enable it again. */
    blockedReason: text('blocked_reason').notNull().default(''),
    /**
     * Raised by each change of the terms (the reward policy, or a stricter manual_trading_mode):
     * subscriptions keep the version they accepted.
     */
    policyVersion: integer('policy_version').notNull().default(1),
    deletedAt: integer('deleted_at'),
    currency: text('currency').notNull(),
    followers: integer('followers').notNull().default(0),
    trades: integer('trades').notNull().default(0),
    wins: integer('wins').notNull().default(0),
    /** Net result of closed trades (profit, commission, swap), minor units of `currency`. */
    pnlMinor: integer('pnl_minor').notNull().default(0),
    /** Lots (hundredths) closed by the master, and copied into followers. */
    volume: integer('volume').notNull().default(0),
    copiedVolume: integer('copied_volume').notNull().default(0),
    /** Time-weighted return index (1 at the start): each closed trade multiplies it by 1 + pnl/balance before. */
    unitValue: real('unit_value').notNull().default(1),
    peakUnitValue: real('peak_unit_value').notNull().default(1),
    /** Largest fall of the index from a peak, a fraction (0.12 = 12 %). */
    maxDrawdown: real('max_drawdown').notNull().default(0),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    // one live profile per account; a deleted one keeps its history
    uniqueIndex('copy_masters_login').on(t.login).where(sql`deleted_at is null`),
    index('copy_masters_market').on(t.brandId, t.public, t.enabled),
  ],
)

/** Copy settings of a follower account: the defaults of its new subscriptions. */
export const copyFollowers = sqliteTable('copy_followers', {
  login: integer('login').primaryKey(),
  brandId: integer('brand_id').notNull(),
  customerId: integer('customer_id').notNull(),
  /** Defaults of new subscriptions (a SubscriptionSettings JSON). */
  defaults: text('defaults').notNull(),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
})

/** Follower account <-> master (2.16); status 0 ACTIVE, 1 PAUSED, 2 DISABLED (domain/status.ts). */
export const copySubscriptions = sqliteTable(
  'copy_subscriptions',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    customerId: integer('customer_id').notNull(),
    followerLogin: integer('follower_login').notNull(),
    masterId: integer('master_id').notNull(),
    masterLogin: integer('master_login').notNull(),
    status: integer('status').notNull(),
    /** Why it is paused or disabled (the customer, staff, an equity stop, the master deleted). */
    statusReason: text('status_reason').notNull().default(''),
    /** SubscriptionSettings JSON (domain/settings.ts). */
    settings: text('settings').notNull(),
    /**
     * The terms the follower accepted: the master's reward policy when it subscribed (or accepted a newer
     * one), with the policy version. Every fee of the subscription is charged on these, whatever the master
     * changes later (DESIGN rule 3).
     */
    rewardType: integer('reward_type').notNull().default(0),
    rewardParams: text('reward_params').notNull().default('{}'),
    termsVersion: integer('terms_version').notNull().default(1),
    /**
     * The manual_trading_mode the follower accepted (part of the terms): a master may loosen it at once (it
     * is raised here too), a stricter mode binds the follower only once it accepts the new terms.
     */
    manualTradingMode: integer('manual_trading_mode').notNull().default(2),
    /** Since when it is paused (epoch ms): the fee periods stand still while it is. */
    pausedAt: integer('paused_at'),
    /** The follower's balance when it subscribed (minor units): the base of the equity stop. */
    startBalanceMinor: integer('start_balance_minor').notNull(),
    /** Day (epoch days, UTC) and realized result of copies closed that day, for the daily loss limit. */
    lossDay: integer('loss_day').notNull().default(0),
    dayResultMinor: integer('day_result_minor').notNull().default(0),
    /** Net result of all copies closed (minor units of the follower). */
    resultMinor: integer('result_minor').notNull().default(0),
    /** Capital in the copy (minor units): the start balance, plus deposits, less withdrawals since. */
    capitalMinor: integer('capital_minor').notNull().default(0),
    /** PERFORMANCE_FEE_HWM's high-water mark of the copy equity (minor units). */
    hwmMinor: integer('hwm_minor').notNull().default(0),
    /** Rewards settled from the follower for this subscription (minor units): they lower the copy equity. */
    feesMinor: integer('fees_minor').notNull().default(0),
    /**
     * When the next SUBSCRIPTION_FEE period starts (epoch ms): under other terms, when a period a fee paid
     * ends (kept for terms that bring the fee back), or null.
     */
    nextFeeAt: integer('next_fee_at'),
    /** When the current PERFORMANCE_FEE_HWM period ends (epoch ms). */
    nextPerfAt: integer('next_perf_at'),
    /** The last day (epoch days) a MANAGEMENT_FEE accrued for. */
    mgmtDay: integer('mgmt_day').notNull().default(0),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('copy_subscriptions_live').on(t.followerLogin, t.masterId).where(sql`status in (0, 1)`),
    index('copy_subscriptions_master').on(t.masterLogin, t.status),
    index('copy_subscriptions_customer').on(t.brandId, t.customerId),
  ],
)

/**
 * A live subscription (ACTIVE or PAUSED), stated as the partial index `copy_subscriptions_live` states it:
 * SQLite uses a partial index only for a query whose WHERE holds the index's condition, and a list of
 * bound values (`inArray`) does not, so every read of a follower's live subscriptions scanned the table.
 */
export const liveSubscription = sql`${copySubscriptions.status} in (0, 1)`

/**
 * One row per (subscription, master position): the copy of that position or why it was not made. The
 * unique key is what makes a redelivered event, a second instance or an engine failover copy nothing twice.
 * status: pending (decided, not yet executed), opening (executing under `lease_until`), open, closing,
 * closed, skipped, ended (the follower closed it by hand, or the subscription ended).
 */
export const copyLinks = sqliteTable(
  'copy_links',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    brandId: integer('brand_id').notNull(),
    subscriptionId: integer('subscription_id').notNull(),
    masterLogin: integer('master_login').notNull(),
    masterTicket: integer('master_ticket').notNull(),
    followerLogin: integer('follower_login').notNull(),
    followerTicket: integer('follower_ticket'),
    status: text('status', {
      enum: ['pending', 'opening', 'open', 'closing', 'closed', 'skipped', 'ended'],
    }).notNull(),
    reason: text('reason').notNull().default(''),
    symbol: text('symbol').notNull(),
    masterCmd: integer('master_cmd').notNull(),
    /** The master position's volume as the link last saw it (a partial close lowers it). */
    masterVolume: integer('master_volume').notNull(),
    masterPrice: real('master_price').notNull(),
    masterTime: integer('master_time').notNull(),
    /** The master's close, once it closed (the close record's master side). */
    masterClosePrice: real('master_close_price'),
    masterCloseTime: integer('master_close_time'),
    /** 1: decided by a resync (a subscription started or changed), not by a fresh master open. */
    resync: integer('resync').notNull().default(0),
    followerVolume: integer('follower_volume').notNull().default(0),
    leaseUntil: integer('lease_until').notNull().default(0),
    /** Claims by an executor: above 1, an earlier executor may have opened before it died. */
    attempts: integer('attempts').notNull().default(0),
    /**
     * 1: an `opening` link that took one of its subscription's max_positions slots (copier/open-copy.ts),
     * so that another executor's count sees it; taken in a write transaction, last before the open.
     */
    slot: integer('slot').notNull().default(0),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    uniqueIndex('copy_links_once').on(t.subscriptionId, t.masterTicket),
    index('copy_links_master').on(t.masterTicket),
    index('copy_links_follower').on(t.followerTicket),
    index('copy_links_status').on(t.status, t.updatedAt),
  ],
)

/**
 * What the copier did for a subscription, one row per action (open, close, partial close, modify), copied
 * or skipped with a stable reason, with its timings and prices. `key` makes each action recorded once.
 */
export const copyRecords = sqliteTable(
  'copy_records',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    key: text('key').notNull(),
    brandId: integer('brand_id').notNull(),
    subscriptionId: integer('subscription_id').notNull(),
    linkId: integer('link_id'),
    action: text('action', { enum: ['open', 'fill', 'close', 'partial_close', 'modify', 'stop'] }).notNull(),
    result: text('result', { enum: ['copied', 'skipped'] }).notNull(),
    reason: text('reason').notNull().default(''),
    message: text('message').notNull().default(''),
    symbol: text('symbol').notNull(),
    masterTicket: integer('master_ticket').notNull(),
    masterPrice: real('master_price').notNull(),
    masterTime: integer('master_time').notNull(),
    decidedAt: integer('decided_at').notNull(),
    followerTicket: integer('follower_ticket'),
    followerPrice: real('follower_price'),
    followerTime: integer('follower_time'),
    volume: integer('volume').notNull().default(0),
    /** Against the follower: positive when the follower's fill is worse than the master's. */
    slippagePoints: real('slippage_points'),
    slippageMinor: integer('slippage_minor'),
    createdAt: integer('created_at').notNull(),
  },
  (t) => [
    uniqueIndex('copy_records_key').on(t.key),
    index('copy_records_subscription').on(t.subscriptionId, t.id),
  ],
)

/**
 * Rewards owed to a master by a subscription (domain/rewards.ts): accrued with a unique `key` per cause
 * (a closed copy, a lot copied, a fee period), then settled with two balance operations
 * (TR_REASON_COPY_REWARD) carrying `copy_reward_accrual_id`; `pending` until then.
 */
export const copyRewards = sqliteTable(
  'copy_rewards',
  {
    id: integer('id').primaryKey({ autoIncrement: true }),
    key: text('key').notNull(),
    brandId: integer('brand_id').notNull(),
    subscriptionId: integer('subscription_id').notNull(),
    masterId: integer('master_id').notNull(),
    rewardType: integer('reward_type').notNull(),
    followerLogin: integer('follower_login').notNull(),
    payoutLogin: integer('payout_login').notNull(),
    /** What the fee is computed on (a profit, lots, a period), minor units of `currency` or hundredths of a lot. */
    base: integer('base').notNull(),
    amountMinor: integer('amount_minor').notNull(),
    currency: text('currency').notNull(),
    payoutAmountMinor: integer('payout_amount_minor'),
    payoutCurrency: text('payout_currency').notNull(),
    // held: a withdrawal's performance fee, owed once the withdrawal is paid out (copier/holds.ts)
    status: text('status', { enum: ['pending', 'held', 'settled', 'cancelled'] }).notNull(),
    note: text('note').notNull().default(''),
    createdAt: integer('created_at').notNull(),
    settledAt: integer('settled_at'),
  },
  (t) => [
    uniqueIndex('copy_rewards_key').on(t.key),
    index('copy_rewards_pending').on(t.status, t.id),
    index('copy_rewards_subscription').on(t.subscriptionId, t.id),
    // what a subscription owes and has not paid yet: read with every copy equity (copier/equity.ts)
    index('copy_rewards_owed').on(t.subscriptionId).where(sql`status in ('pending', 'held')`),
  ],
)

/**
 * A withdrawal's funds held in a follower account, waiting for its outcome (copier/holds.ts): the hold
 * moves the subscriptions' capital and mark at once, and the performance fee it charges waits (status
 * `held`) until the withdrawal is paid out; a return undoes what the hold moved. The hold and its outcome
 * arrive as two events in either order: the row keeps whichever came first, and the second resolves and
 * deletes it.
 */
export const copyHolds = sqliteTable('copy_holds', {
  /** The hold's name in the ledger (accounts' `hold`, e.g. `cashier-withdrawal:<id>`). */
  ref: text('ref').primaryKey(),
  login: integer('login').notNull(),
  /** The amount held (positive, minor units) and when, once the hold is applied. */
  amountMinor: integer('amount_minor'),
  heldAt: integer('held_at'),
  /**
   * What the hold moved, per subscription (JSON `[{sub, part, hwm_delta, reward}]`): the capital it took,
   * the mark's fall (before less after), and the fee it holds.
   */
  parts: text('parts'),
  /** How it ended, when that came first: paid out, or returned (the balance before the return, its time). */
  outcome: text('outcome', { enum: ['paid', 'returned'] }),
  outcomeBalanceBeforeMinor: integer('outcome_balance_before_minor'),
  outcomeAt: integer('outcome_at'),
})
