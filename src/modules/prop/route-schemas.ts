import { t } from 'elysia'
import { Int, nameModels } from '../../kernel/http/schemas'
import { CHALLENGE_NAMES, PURCHASE_NAMES } from './domain/purchase'

const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])
const Time = (d = 'epoch seconds') => Int({ description: d })

const Rules = t.Object(
  {
    profit_target_pct: t.Number({
      minimum: 0,
      maximum: 1000,
      description: 'closed profit to reach, % of the initial balance; 0: none (funded)',
    }),
    daily_loss_pct: t.Number({
      exclusiveMinimum: 0,
      maximum: 100,
      description: '% of the initial balance, from the day start equity',
    }),
    total_loss_pct: t.Number({ exclusiveMinimum: 0, maximum: 100, description: '% of the initial balance' }),
    total_loss_mode: t.Optional(
      t.UnionEnum(['static', 'trailing'], {
        default: undefined,
        description: 'static (from the initial balance) or trailing (from the highest end-of-day balance)',
      }),
    ),
    min_trading_days: t.Optional(
      Int({ minimum: 0, maximum: 365, description: 'trading days needed to pass' }),
    ),
    max_trading_days: t.Optional(
      Int({ minimum: 0, maximum: 3650, description: 'time limit in local calendar days; 0 none' }),
    ),
    max_positions: t.Optional(
      Int({
        minimum: 0,
        maximum: 1000,
        description:
          'open positions and pending orders the phase account holds together at most: an order beyond it is refused 500 OPEN_ORDER_ERROR; 0 no limit',
      }),
    ),
    trading_day: t.Optional(
      t.UnionEnum(['position_opened', 'any_trade'], {
        default: undefined,
        description: 'what makes a trading day',
      }),
    ),
    warn_at_pct: t.Optional(
      t.Array(t.Number({ exclusiveMinimum: 0, exclusiveMaximum: 100 }), {
        maxItems: 5,
        description: 'warning levels, % of a loss limit used',
      }),
    ),
  },
  { title: 'PropRules' },
)

/**
 * The rules of a phase as stored and answered: every field present, the defaults filled in (the zod schema
 * of domain/rules.ts, PhaseRules, reads them back so).
 */
const StoredRules = t.Required(Rules, { title: 'PropPhaseRules' })

const Step = t.Object({
  account_group: t.String({
    minLength: 1,
    maxLength: 64,
    description: 'DEMO group (evaluation) or REAL group (funded)',
  }),
  phase_type: t.Union([t.Literal(0), t.Literal(1)], {
    description: '0 evaluation, 1 funded (the last step only)',
  }),
  profit_split: t.Optional(
    t.Number({ exclusiveMinimum: 0, maximum: 1, description: "the trader's share, funded step only" }),
  ),
  rules: Rules,
})

const Limits = t.Object(
  {
    per_customer: t.Optional(
      Int({ minimum: 1, maximum: 10_000, description: 'purchases ever per customer' }),
    ),
    per_period: t.Optional(Int({ minimum: 1, maximum: 10_000, description: 'purchases within period_days' })),
    period_days: t.Optional(Int({ minimum: 1, maximum: 3650, description: 'the period of per_period' })),
    active: t.Optional(Int({ minimum: 1, maximum: 10_000, description: 'challenges in progress at once' })),
  },
  {
    description:
      'How often a customer may buy the program; failed and refunded purchases do not count. Omitted: no limits for a paid program, and for a free one 1 per 30 days and 1 in progress ({} sets none). A purchase over a limit answers 400 PURCHASE_LIMIT_PER_CUSTOMER, PURCHASE_LIMIT_PER_PERIOD or PURCHASE_LIMIT_ACTIVE.',
  },
)

export const ProgramBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 100, description: 'unique in the brand' }),
    description: t.Optional(t.String({ maxLength: 2000, description: 'shown to customers' })),
    price: t.Number({ minimum: 0, maximum: 1_000_000, description: 'in the program currency; 0: free' }),
    currency: t.String({ pattern: '^[A-Z]{3}$', description: 'the payer account currency' }),
    active: t.Boolean({ description: 'offered to customers' }),
    time_zone: t.Optional(
      t.String({
        minLength: 1,
        maxLength: 64,
        description:
          'IANA zone of the program\'s "day" (default UTC); a UTC offset such as +05:30 is refused (400 INVALID_DATA)',
      }),
    ),
    steps: t.Array(Step, { minItems: 1, maxItems: 5, description: 'phases in order' }),
    limits: t.Optional(Limits),
  },
  {
    example: {
      name: 'Classic 10k',
      description: 'Two evaluation phases, then a funded account with an 80% split',
      price: 99,
      currency: 'USD',
      active: true,
      time_zone: 'Europe/Prague',
      limits: { active: 2 },
      steps: [
        {
          account_group: 'prop\\eval\\USD',
          phase_type: 0,
          rules: {
            profit_target_pct: 10,
            daily_loss_pct: 5,
            total_loss_pct: 10,
            min_trading_days: 4,
            max_trading_days: 30,
          },
        },
        {
          account_group: 'prop\\eval\\USD',
          phase_type: 0,
          rules: {
            profit_target_pct: 5,
            daily_loss_pct: 5,
            total_loss_pct: 10,
            min_trading_days: 4,
            max_trading_days: 60,
          },
        },
        {
          account_group: 'prop\\funded\\USD',
          phase_type: 1,
          profit_split: 0.8,
          rules: { profit_target_pct: 0, daily_loss_pct: 5, total_loss_pct: 10 },
        },
      ],
    },
  },
)

export const Program = t.Object(
  {
    id: Int(),
    name: t.String(),
    description: t.String(),
    price: t.Number(),
    currency: t.String(),
    active: t.Boolean(),
    time_zone: t.String(),
    version: Int({ description: 'goes up on every save; a challenge keeps the rules it was bought with' }),
    profit_split: t.Number({ description: 'from the funded step (0.8 = 80%)' }),
    steps: t.Array(
      t.Object({
        index: Int(),
        account_group: t.String(),
        phase_type: Int(),
        profit_split: t.Optional(t.Number()),
        rules: StoredRules,
      }),
    ),
    limits: Limits,
    limits_default: t.Boolean({ description: 'no limits were set: the default applies' }),
    created_time: Time(),
    updated_time: Time(),
  },
  { title: 'PropProgram' },
)

export const Purchase = t.Object(
  {
    id: Int(),
    program_id: Int(),
    customer_id: Int(),
    payer_login: Int(),
    account_login: Int({ description: '0 until the account exists' }),
    status: Int({ description: 'spec 3.2' }),
    status_name: t.UnionEnum([...PURCHASE_NAMES]),
    next_action: t.String({ description: 'OPEN_CHALLENGE (active), RETRY_PURCHASE, CONTACT_SUPPORT' }),
    comment: t.String(),
    idempotency_key: t.String(),
    payment_status: t.String({
      description: 'pending, paid, not_required, failed, refunded, rollback_failed',
    }),
    activation_status: t.String({ description: 'pending, active, failed' }),
    failure_reason: t.String({ description: 'the 4.19 code, empty on success' }),
    currency: t.String(),
    can_retry: t.Boolean(),
    can_cancel: t.Boolean(),
    amount: t.Number(),
    conversion_rate: t.Number(),
    amount_account_currency: t.Number(),
    created_time: Time(),
    updated_time: Time(),
  },
  { title: 'PropPurchase' },
)

export const Challenge = t.Object(
  {
    id: Int(),
    purchase_id: Int(),
    program_id: Int(),
    customer_id: Int(),
    account_login: Int({ description: "the current phase's account" }),
    current_phase_index: Int(),
    status: Int({ description: 'spec 3.3' }),
    status_name: t.UnionEnum([...CHALLENGE_NAMES]),
    start_time: Time(),
    end_time: Time('epoch seconds; 0 while open'),
    created_time: Time(),
    updated_time: Time(),
  },
  { title: 'PropChallenge' },
)

export const LatestMetric = t.Object({
  balance: t.Number(),
  equity: t.Number({ description: 'floating profit included' }),
  profit_target: t.Number({ description: 'amount to reach' }),
  daily_loss: t.Number({
    description:
      "loss since today's start equity (the local day's row; before the day's first pass, none: the figures now)",
  }),
  total_loss: t.Number({
    description:
      'loss from the total loss anchor: the initial balance (static), or the highest end-of-day balance, never below the initial balance (trailing)',
  }),
  trading_days: Int(),
})
const Progress = t.Object({
  profit_pct: t.Number(),
  profit_target_pct: t.Number(),
  profit_target_progress_pct: t.Number(),
  daily_loss_pct: t.Number(),
  daily_loss_limit_pct: t.Number(),
  total_loss_pct: t.Number(),
  total_loss_limit_pct: t.Number(),
  trading_days: Int(),
  min_trading_days: Int(),
  max_trading_days: Int(),
  max_positions: Int(),
})
export const Phase = t.Object(
  {
    id: Int(),
    challenge_id: Int(),
    program_id: Int(),
    phase_index: Int(),
    phase_type: Int({ description: '0 evaluation, 1 funded' }),
    account_login: Int(),
    account_group: t.String(),
    status: Int({ description: '0 pending, 1 active, 2 passed, 3 failed, 4 cancelled' }),
    status_name: t.String(),
    initial_balance: t.Number(),
    initial_equity: t.Number(),
    final_balance: Nullable(t.Number()),
    final_equity: Nullable(t.Number()),
    start_time: Time(),
    end_time: Time(),
    created_time: Time(),
    updated_time: Time(),
    rules: t.Required(Rules, {
      title: 'PropPhaseRules',
      description: 'the rules this phase was bought with',
    }),
    latest_metric: Nullable(LatestMetric),
    progress: Nullable(Progress),
  },
  { title: 'PropPhase' },
)

export const Breach = t.Object(
  {
    id: Int(),
    phase_index: Int(),
    rule: t.String({ description: 'daily_loss, total_loss, max_trading_days' }),
    limit: t.Number({ description: 'amount that may be lost (days for max_trading_days)' }),
    anchor: t.Number({ description: 'the equity the limit is measured from' }),
    observed_equity: t.Number(),
    tick_time: Int({
      description: 'epoch seconds of the quote that broke it (the evaluator pass for the time limit)',
    }),
    detected_time: Int({ description: 'epoch seconds when it was recorded' }),
    tick_time_ms: Int({ description: 'tick_time in epoch milliseconds' }),
    detected_time_ms: Int({
      description: 'detected_time in epoch milliseconds (latency: minus tick_time_ms)',
    }),
  },
  { title: 'PropBreach' },
)

export const Day = t.Object(
  {
    phase_index: Int(),
    day: t.String({ description: "local day in the program's zone, YYYY-MM-DD" }),
    start_balance: t.Number(),
    start_equity: t.Number({ description: "the day's start snapshot" }),
    end_balance: Nullable(
      t.Number({
        description:
          "the next day's start balance: a day ends where the next one starts; null while the day runs, and on the phase's last day",
      }),
    ),
    end_equity: Nullable(t.Number({ description: "the next day's start equity" })),
    min_equity: t.Number({ description: 'lowest equity an evaluator pass saw' }),
    profit: Nullable(t.Number({ description: 'end minus start balance' })),
    positions_opened: Int(),
    trading_day: t.Boolean(),
  },
  { title: 'PropDayMetric' },
)

export const Account = t.Object({
  login: Int(),
  group: t.String(),
  brand: t.String(),
  currency: t.String(),
  leverage: Int(),
  enable: Int(),
  customer_id: Int(),
})

export const Payout = t.Object(
  {
    id: Int(),
    seq: Int({ description: '1 for the first payout of the phase' }),
    profit: t.Number({ description: 'taken from the funded account' }),
    share: t.Number({ description: "the trader's split, paid to the payer account" }),
    profit_split: t.Number(),
    payer_login: Int(),
    funded_login: Int(),
    currency: t.String(),
    created_time: Time(),
  },
  { title: 'PropPayout' },
)

nameModels({
  PropProgram: Program,
  PropPurchase: Purchase,
  PropChallenge: Challenge,
  PropPhase: Phase,
  PropBreach: Breach,
  PropPayout: Payout,
  PropAccount: Account,
  PropRules: Rules,
  PropStep: Step,
  PropPurchaseLimits: Limits,
  PropLatestMetric: LatestMetric,
  PropProgress: Progress,
})
