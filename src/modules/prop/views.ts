import { fromMinor } from '../accounts'
import { CHALLENGE_NAMES, PHASE_NAMES, PURCHASE_NAMES } from './domain/purchase'
import { type PhaseRules, type PhaseState, progress, totalFloor } from './domain/rules'
import type { propBreaches, propChallenges, propDays, propPhases, propPurchases } from './schema'

type PurchaseRow = typeof propPurchases.$inferSelect
type ChallengeRow = typeof propChallenges.$inferSelect
type PhaseRow = typeof propPhases.$inferSelect
type DayRow = typeof propDays.$inferSelect
type BreachRow = typeof propBreaches.$inferSelect

const sec = (ms: number) => Math.floor(ms / 1000)

/** 2.14. amount_account_currency equals amount: a purchase needs the payer in the program currency. */
export function purchaseView(p: PurchaseRow) {
  const amount = fromMinor(p.amountMinor, p.currency)
  return {
    id: p.id,
    program_id: p.programId,
    customer_id: p.customerId,
    payer_login: p.payerLogin,
    account_login: p.accountLogin ?? 0,
    status: p.status,
    status_name: PURCHASE_NAMES[p.status]!,
    next_action: p.nextAction,
    comment: p.comment,
    idempotency_key: p.idempotencyKey ?? '',
    payment_status: p.paymentStatus,
    activation_status: p.activationStatus,
    failure_reason: p.failureReason,
    currency: p.currency,
    can_retry: p.canRetry === 1,
    can_cancel: p.canCancel === 1,
    amount,
    conversion_rate: p.conversionRate / 1_000_000,
    amount_account_currency: amount,
    created_time: sec(p.createdAt),
    updated_time: sec(p.updatedAt),
  }
}

/** 2.15 */
export function challengeView(c: ChallengeRow) {
  return {
    id: c.id,
    purchase_id: c.purchaseId,
    program_id: c.programId,
    customer_id: c.customerId,
    account_login: c.accountLogin,
    current_phase_index: c.currentPhaseIndex,
    status: c.status,
    status_name: CHALLENGE_NAMES[c.status]!,
    start_time: sec(c.startTime),
    end_time: sec(c.endTime),
    created_time: sec(c.createdAt),
    updated_time: sec(c.updatedAt),
  }
}

/** latest_metric of 2.15: the figures now, in the account currency. */
function latestMetric(rules: PhaseRules, s: PhaseState, currency: string) {
  const m = (x: number) => fromMinor(x, currency)
  return {
    balance: m(s.balance),
    equity: m(s.equity),
    profit_target: m(Math.round((s.initialBalance * rules.profit_target_pct) / 100)),
    daily_loss: m(Math.max(0, s.dayStartEquity - s.equity)),
    // from the limit's own anchor (trailing: the highest end-of-day balance), as progress.total_loss_pct
    total_loss: m(Math.max(0, totalFloor(rules, s).anchor - s.equity)),
    trading_days: s.tradingDays,
  }
}

export function phaseView(p: PhaseRow, rules: PhaseRules, s: PhaseState | null) {
  const m = (x: number | null) => (x === null ? null : fromMinor(x, p.currency))
  return {
    id: p.id,
    challenge_id: p.challengeId,
    program_id: p.programId,
    phase_index: p.phaseIndex,
    phase_type: p.phaseType,
    account_login: p.accountLogin,
    account_group: p.accountGroup,
    status: p.status,
    status_name: PHASE_NAMES[p.status]!,
    initial_balance: m(p.initialBalance)!,
    initial_equity: m(p.initialEquity)!,
    final_balance: m(p.finalBalance),
    final_equity: m(p.finalEquity),
    start_time: sec(p.startTime),
    end_time: sec(p.endTime),
    created_time: sec(p.createdAt),
    updated_time: sec(p.updatedAt),
    rules,
    latest_metric: s ? latestMetric(rules, s, p.currency) : null,
    progress: s ? progress(rules, s) : null,
  }
}

/**
 * One metrics row per phase and local day (GET /prop/challenges/{id}/metrics). A day ends where the next
 * one of its phase starts (`next`): until then, and on a phase's last day, its end figures are null.
 */
export function dayView(
  d: DayRow,
  currency: string,
  phaseIndex: number,
  next?: Pick<DayRow, 'startBalance' | 'startEquity'>,
) {
  const m = (x: number) => fromMinor(x, currency)
  return {
    phase_index: phaseIndex,
    day: d.day,
    start_balance: m(d.startBalance),
    start_equity: m(d.startEquity),
    end_balance: next ? m(next.startBalance) : null,
    end_equity: next ? m(next.startEquity) : null,
    min_equity: m(d.minEquity),
    profit: next ? m(next.startBalance - d.startBalance) : null,
    positions_opened: d.positionsOpened,
    trading_day: d.tradingDay === 1,
  }
}

export function breachView(b: BreachRow, currency: string, phaseIndex: number) {
  const m = (x: number) => fromMinor(x, currency)
  return {
    id: b.id,
    phase_index: phaseIndex,
    rule: b.rule,
    limit: b.rule === 'max_trading_days' ? b.limitValue : m(b.limitValue),
    anchor: m(b.anchor),
    observed_equity: m(b.observed),
    tick_time: Math.floor(b.tickTime / 1000),
    detected_time: Math.floor(b.detectedAt / 1000),
    tick_time_ms: b.tickTime,
    detected_time_ms: b.detectedAt,
  }
}
