import { t } from 'elysia'
import { Int, Login, nameModels, OneOf } from '../../kernel/http/schemas'

const Flag = (description: string) => Int({ minimum: 0, maximum: 1, description })
const Enum = (max: number, description: string) => Int({ minimum: 0, maximum: max, description })
const Volume = (description: string) => Int({ minimum: 0, maximum: 100_000_000, description })

/** The settings of a subscription (a follower's defaults have the same fields); all optional in a body. */
const settingsFields = {
  copy_mode: Enum(2, '0 FULL_SYNC, 1 OPEN_ONLY, 2 CLOSE_ONLY (default 0)'),
  volume_mode: Enum(3, '0 FIXED, 1 MULTIPLIER, 2 EQUITY_RATIO, 3 BALANCE_RATIO (default 1)'),
  volume_param: t.Number({
    exclusiveMinimum: 0,
    maximum: 1_000_000,
    description:
      'FIXED: the volume (hundredths of a lot, an integer); MULTIPLIER: the factor on the master volume; ratios: a factor on the accounts ratio (default 1)',
  }),
  symbols_mode: Enum(2, '0 ALL, 1 INCLUDE, 2 EXCLUDE (default 0)'),
  symbols: t.Array(t.String({ minLength: 1, maxLength: 32 }), {
    maxItems: 200,
    description: 'the INCLUDE or EXCLUDE list',
  }),
  min_volume: Volume('smallest copy (hundredths of a lot); a smaller sized copy is skipped; 0 none'),
  max_volume: Volume('largest copy (hundredths of a lot): a larger one is capped; 0 none'),
  max_positions: Int({ minimum: 0, maximum: 10_000, description: 'open copies at most; 0 none' }),
  copy_sl_tp: Flag('1: copy the master stop loss and take profit, and their changes (default 1)'),
  reverse: Flag('1: copy market trades in the opposite direction, stops mirrored (default 0)'),
  max_slippage_points: Int({
    minimum: 0,
    maximum: 1_000_000,
    description: "skip an open whose price is more than this many points worse than the master's fill; 0 off",
  }),
  open_ttl_seconds: Int({
    minimum: 1,
    maximum: 86_400,
    description: 'skip an open signal older than this (default 60)',
  }),
  equity_stop: t.Number({ minimum: 0, maximum: 1_000_000_000, description: 'see equity_stop_type; 0 off' }),
  equity_stop_type: Flag(
    '0: equity_stop is an amount of the follower currency; 1: a percent of the start balance',
  ),
  daily_loss_limit: t.Number({
    minimum: 0,
    maximum: 1_000_000_000,
    description: 'realized loss of copies in a UTC day that halts new copies until the next day; 0 off',
  }),
}
const SettingsBody = t.Partial(t.Object(settingsFields))
export const FollowerSettingsBody = t.Partial(t.Object(settingsFields), {
  example: { volume_mode: 1, volume_param: 0.5, max_positions: 10 },
})
const Settings = t.Object(settingsFields)

const IgnoredCustomer = t.Optional(Int({ description: 'ignored: ownership comes from the session (rule 9)' }))

const RewardPolicyBody = t.Object(
  {
    reward_type: Enum(
      4,
      '0 SUBSCRIPTION_FEE, 1 PERFORMANCE_FEE_HWM, 2 VOLUME_REBATE, 3 PROFIT_SHARE_PER_TRADE, 4 MANAGEMENT_FEE',
    ),
    percent: t.Optional(
      t.Number({ minimum: 0, maximum: 100, description: 'PROFIT_SHARE_PER_TRADE, PERFORMANCE_FEE_HWM' }),
    ),
    amount: t.Optional(
      t.Number({
        minimum: 0,
        maximum: 1_000_000,
        description: 'SUBSCRIPTION_FEE, master currency per period',
      }),
    ),
    period_days: t.Optional(
      Int({ minimum: 1, maximum: 366, description: 'SUBSCRIPTION_FEE, PERFORMANCE_FEE_HWM' }),
    ),
    per_lot: t.Optional(
      t.Number({
        minimum: 0,
        maximum: 1_000_000,
        description: 'VOLUME_REBATE, master currency per lot copied',
      }),
    ),
    annual_percent: t.Optional(t.Number({ minimum: 0, maximum: 100, description: 'MANAGEMENT_FEE' })),
  },
  {
    description: 'the reward policy: reward_type and the parameters of that type only',
    // every invalid policy answers INVALID_REWARD_POLICY naming the field (spec 7.5)
    'x-error-code': 'INVALID_REWARD_POLICY',
  },
)

const masterFields = {
  name: t.String({ minLength: 1, maxLength: 64, description: 'shown in the marketplace' }),
  description: t.String({ maxLength: 2000, description: 'the strategy, shown in the marketplace' }),
  allowed_follower_modes: Enum(2, '0 REAL_ONLY, 1 DEMO_ONLY, 2 REAL_AND_DEMO (default 0)'),
  show_trade_history: Flag('1: GET /copytrade/master/trades shows the history (default 0)'),
  show_followers: Flag('1: GET /copytrade/master/followers shows the followers (default 0)'),
  manual_trading_mode: Enum(
    2,
    '0 DISABLED, 1 ALLOW_NON_COPIED, 2 ALLOW_ALL (default 2): what followers may do by hand on their accounts. A looser mode applies to existing followers at once; a stricter one raises policy_version and binds each follower once it accepts the new terms',
  ),
  reward_policy: RewardPolicyBody,
  payout_login: Login,
  enabled: Flag(
    'default 1; 0: nothing new is copied (closes of copies made still are), and no fee runs for its subscriptions until it is enabled again',
  ),
  public: Flag('1: listed in the marketplace (default 0)'),
}

export const MasterCreateBody = t.Object(
  {
    login: Login,
    name: masterFields.name,
    description: t.Optional(masterFields.description),
    allowed_follower_modes: t.Optional(masterFields.allowed_follower_modes),
    show_trade_history: t.Optional(masterFields.show_trade_history),
    show_followers: t.Optional(masterFields.show_followers),
    manual_trading_mode: t.Optional(masterFields.manual_trading_mode),
    reward_policy: t.Optional(RewardPolicyBody),
    payout_login: t.Optional(Login),
    enabled: t.Optional(masterFields.enabled),
    public: t.Optional(masterFields.public),
    customer_id: IgnoredCustomer,
  },
  {
    example: {
      login: 100001,
      name: 'Steady FX',
      description: 'Majors, one position at a time',
      allowed_follower_modes: 2,
      show_trade_history: 1,
      show_followers: 1,
      manual_trading_mode: 2,
      reward_policy: { reward_type: 3, percent: 20 },
      payout_login: 100001,
      public: 1,
    },
  },
)

export const MasterUpdateBody = t.Partial(
  t.Object({
    ...masterFields,
    customer_id: Int({ description: 'ignored: ownership comes from the session (rule 9)' }),
  }),
  {
    example: { description: 'Majors and gold', public: 1 },
  },
)

const Policy = t.Object({
  reward_type: Int(),
  reward_name: t.String(),
  percent: t.Optional(t.Number()),
  amount: t.Optional(t.Number()),
  period_days: t.Optional(Int()),
  per_lot: t.Optional(t.Number()),
  annual_percent: t.Optional(t.Number()),
})

/** The parts of a subscription's terms beside its reward policy. */
const TermsExtra = t.Object({
  version: Int({ description: "the master's policy version" }),
  manual_trading_mode: Enum(
    2,
    "0 DISABLED, 1 ALLOW_NON_COPIED, 2 ALLOW_ALL: what the follower accepted to be held to on its account (the master's mode when looser)",
  ),
})

const Stats = t.Object({
  roi: t.Number({ description: 'time-weighted return of closed trades, a fraction (0.05 = 5 %)' }),
  pnl: t.Number({ description: 'net result of closed trades, master currency' }),
  win_rate: t.Number({ description: 'winning / closed trades' }),
  max_drawdown: t.Number({ description: 'largest peak-to-trough fall of the return index, a fraction' }),
  avg_pnl_per_trade: t.Number(),
  trades: Int(),
  winning_trades: Int(),
  losing_trades: Int(),
})

const publicMasterFields = {
  id: Int(),
  name: t.String(),
  description: t.String(),
  currency: t.String(),
  allowed_follower_modes: Int(),
  show_trade_history: Int(),
  show_followers: Int(),
  manual_trading_mode: Int(),
  reward_policy: Policy,
  policy_version: Int({
    description:
      'raised by each change of the terms (the reward policy, or a stricter manual_trading_mode); existing subscriptions keep their terms until they accept them. A looser manual_trading_mode applies to them at once',
  }),
  followers: Int({ description: 'live (ACTIVE or PAUSED) subscriptions' }),
  copied_volume: Int({ description: 'hundredths of a lot copied into followers' }),
  stats: Stats,
  created_time: Int(),
}
export const PublicMaster = t.Object(publicMasterFields)
export const Master = t.Object({
  ...publicMasterFields,
  login: Int(),
  payout_login: Int(),
  enabled: Int(),
  public: Int(),
  blocked_reason: t.String({ description: 'set when staff disabled it' }),
  customer_id: Int(),
  updated_time: Int(),
})

export const FollowerBody = t.Object(
  {
    login: Login,
    defaults: t.Optional(
      t.Partial(t.Object(settingsFields), { description: 'defaults of its subscriptions' }),
    ),
    customer_id: IgnoredCustomer,
  },
  { example: { login: 100001, defaults: { volume_mode: 1, volume_param: 0.5, max_positions: 10 } } },
)
export const Follower = t.Object({
  login: Int(),
  account_mode: t.String({ description: 'REAL or DEMO (from its group)' }),
  defaults: Settings,
  created_time: Int(),
  updated_time: Int(),
})

export const SubscriptionCreateBody = t.Composite(
  [
    t.Object({
      follower_login: Login,
      master_id: Int({ minimum: 1, description: 'GET /copytrade/masters' }),
      capital: t.Optional(
        t.Number({
          exclusiveMinimum: 0,
          maximum: 1e12,
          description:
            "what of the account's balance this subscription manages (account currency; default: all that no other live subscription of the account manages; more is 400): its fees on equity, equity stop and ratio sizing work on this capital, so an account can follow several masters with a share each, never the same money twice",
        }),
      ),
      policy_version: Int({
        minimum: 1,
        description:
          "the master's reward policy version the follower was shown and accepts (GET /copytrade/masters/{id}: `policy_version`): a subscription pays only on terms its follower accepted. When it is no longer the master's, 409 TERMS_CHANGED and nothing is subscribed",
      }),
      customer_id: IgnoredCustomer,
    }),
    SettingsBody,
  ],
  {
    example: {
      follower_login: 100002,
      master_id: 1,
      policy_version: 1,
      volume_mode: 1,
      volume_param: 1,
      copy_sl_tp: 1,
    },
  },
)
export const SubscriptionUpdateBody = t.Composite(
  [t.Object({ customer_id: IgnoredCustomer }), SettingsBody],
  {
    example: { max_positions: 5, max_slippage_points: 50 },
  },
)

export const Subscription = t.Composite([
  t.Object({
    id: Int(),
    follower_login: Int(),
    master_id: Int(),
    status: Int({ description: '0 ACTIVE, 1 PAUSED, 2 DISABLED' }),
    status_name: t.String(),
    status_reason: t.String(),
    start_balance: t.Number(),
    copied_result: t.Number({ description: 'net result of copies closed, follower currency' }),
    terms: t.Composite([Policy, TermsExtra], {
      title: 'CopyTerms',
      description:
        'the terms of this subscription: the reward policy it pays on and the manual_trading_mode its follower is held to, as accepted when it was made (or later); a change of the master applies only once accepted, except a looser manual_trading_mode, which applies at once',
    }),
    terms_pending: t.Boolean({
      description: 'the master offers newer terms (POST /copytrade/subscription/{id}/terms accepts them)',
    }),
    currency: t.String(),
    created_time: Int(),
    updated_time: Int(),
  }),
  Settings,
])
export const StaffSubscription = t.Composite([Subscription, t.Object({ customer_id: Int() })])
/** The answer of a request that copies the master's open positions (a subscribe, a change, a resume). */
export const SubscriptionResynced = t.Composite([
  Subscription,
  t.Object({
    copies_pending: Int({
      minimum: 0,
      description:
        "copies of the master's open positions still to come after this answer: links pending or being opened, which the job copytrade.reconcile opens within seconds where a Bun engine runs it, about 10 a minute from the Workers cron alone (or skips, with their reason, in GET /copytrade/subscription/{id}/copies); 0 once every copy is decided",
    }),
  }),
])

export const CopyRecord = t.Object({
  id: Int(),
  subscription_id: Int(),
  action: t.String({ description: 'open, fill (a pending copy filled), close, partial_close, modify, stop' }),
  result: t.String({ description: 'copied or skipped' }),
  reason: t.String({ description: 'why it was skipped (README: skip reasons); empty when copied' }),
  message: t.String(),
  symbol: t.String(),
  master_ticket: Int(),
  master_price: t.Number(),
  master_time_ms: Int({ description: "the master's fill, epoch ms" }),
  decided_time_ms: Int({ description: 'when the copier decided, epoch ms' }),
  follower_ticket: Int(),
  follower_price: t.Number(),
  follower_time_ms: Int({ description: "the follower's committed fill, epoch ms" }),
  volume: Int(),
  slippage_points: t.Number({
    description: "against the follower: positive when its fill is worse than the master's",
  }),
  slippage: t.Number({ description: 'the same in the follower currency' }),
  currency: t.String(),
})

export const Reward = t.Object({
  id: Int({ description: 'the copy_reward_accrual_id of its balance operations' }),
  subscription_id: Int(),
  master_id: Int(),
  reward_type: Int(),
  reward_name: t.String(),
  follower_login: Int(),
  payout_login: t.Optional(
    Int({
      description:
        "the master's payout account: shown only when the follower's customer owns the master too (a follower is not shown another customer's account)",
    }),
  ),
  base: Int({
    description: 'what it is computed on: the net result (minor units), the volume, or the period days',
  }),
  amount: t.Number({ description: 'follower currency' }),
  currency: t.String(),
  payout_amount: t.Number({ description: 'credited to the payout account, its currency' }),
  payout_currency: t.String(),
  status: OneOf(['pending', 'held', 'settled', 'cancelled'], {
    description:
      'held: the performance fee of a withdrawal waiting for approval and payout, owed once it is paid out (cancelled if it is rejected or its payout fails); cancelled: a fee that can no longer be settled (the accounts are of different modes), or a held one whose withdrawal did not happen',
  }),
  note: t.String(),
  created_time: Int(),
  settled_time: Int(),
})

export const MasterTrades = t.Object({
  master_id: Int(),
  currency: t.String(),
  rows: t.Array(
    t.Object(
      {
        ticket: Int(),
        symbol: t.String(),
        cmd: Int(),
        volume: Int(),
        open_price: t.Number(),
        open_time: Int(),
        close_price: t.Number(),
        close_time: Int(),
        profit: t.Number({ description: 'net of commission and swap' }),
      },
      { title: 'CopyMasterTrade' },
    ),
  ),
  next_before: Int({ description: 'pass as `before` for the next page; 0 at the end' }),
})

export const MasterFollowers = t.Object({
  master_id: Int(),
  followers: Int(),
  active: Int(),
  paused: Int(),
  rows: t.Array(
    t.Object(
      {
        n: Int(),
        status: Int(),
        account_mode: t.String(),
        following_days: Int(),
        copy_mode: Int(),
        copied_result: t.Number(),
        currency: t.String(),
      },
      { title: 'CopyMasterFollowerRow', description: 'a follower as its master sees it: no identity' },
    ),
  ),
  next_after: Int({ description: 'the `after` of the next page; 0 on the last' }),
})

export const FeePreview = t.Object({
  subscription_id: Int(),
  currency: t.String({ description: 'the follower currency' }),
  copy_capital: t.Number(),
  copy_result: t.Number({
    description:
      'realized result of copies, those closed whose close is still being applied to the subscription included (in the balance already)',
  }),
  fees_paid: t.Number(),
  fees_owed: t.Number({
    description:
      'rewards accrued and not paid yet (their payment waits for the follower free margin): the copy equity counts them from their accrual',
  }),
  floating: t.Number({ description: 'floating result of open copies' }),
  copy_equity: t.Number({ description: 'copy_capital + copy_result - fees_paid - fees_owed + floating' }),
  managed_equity: t.Number({
    description:
      "the copy equity with the money the subscription manages (copy_capital + copy_result - fees_paid) capped at its share of the account's balance (shared between the account's subscriptions): what MANAGEMENT_FEE is charged on, never money the account lost on its own trades; copy_equity when the balance covers it",
  }),
  high_water_mark: t.Number(),
  performance_fee_now: t.Number(),
  management_fee_per_day: t.Number({
    description: 'what MANAGEMENT_FEE accrues for one day, on managed_equity',
  }),
  open_copies: Int(),
  next_performance_fee_time: Int({ description: 'epoch seconds; 0 without that policy' }),
  next_subscription_fee_time: Int({ description: 'epoch seconds; 0 without that policy' }),
  fee_clock_stopped_since: Int({
    description:
      'epoch seconds since when the fee clock stands still (the subscription is paused, or its master disabled): no subscription fee, period-end performance fee or management day accrues, and the next fee times move on by the time it stands still (a withdrawal or the end still charges the performance fee on the gains, those of copies kept open while paused included); 0 while it runs',
  }),
  terms: t.Composite([Policy, TermsExtra], {
    title: 'CopyTerms',
    description:
      'the terms of this subscription (the reward policy it pays on, the manual_trading_mode its follower is held to), as its follower accepted them',
  }),
  terms_pending: t.Boolean({ description: 'the master offers newer terms, not yet accepted' }),
  fees_apply: t.Boolean({
    description:
      'false when the follower account and the master payout account are not both REAL or both DEMO: demo money never becomes real, so no fee accrues',
  }),
})

nameModels({
  CopyMaster: Master,
  CopyMasterPublic: PublicMaster,
  CopyFollower: Follower,
  CopySubscription: Subscription,
  CopyRecord,
  CopyReward: Reward,
  CopyFeePreview: FeePreview,
  CopyRewardPolicy: Policy,
  CopyMasterStats: Stats,
  CopySettings: Settings,
  CopySubscriptionStaff: StaffSubscription,
  CopyMasterTrades: MasterTrades,
  CopyMasterFollowers: MasterFollowers,
})
