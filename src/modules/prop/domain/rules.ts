import { z } from 'zod'

/**
 * The rules of one phase (versioned with the program) and their evaluation. Pure: money in minor units,
 * times in epoch ms, the program's IANA zone for "day".
 *
 * Definitions (after FTMO, The5ers and FundedNext, whose published rules they follow):
 * - daily loss: equity, floating profit and loss included, may not reach the day's start equity minus
 *   `daily_loss_pct` of the initial balance. The day's start equity is snapshotted by the first evaluator
 *   pass of the local day.
 * - total loss, `static`: equity may not reach the initial balance minus `total_loss_pct` of it.
 *   `trailing`: the floor follows the highest end-of-day balance seen (never the initial balance less),
 *   minus the same amount.
 * - profit target: closed profit (balance minus initial balance) of at least `profit_target_pct` of the
 *   initial balance, with no position open, and `min_trading_days` trading days.
 * - trading day: a local day on which a position was opened (`position_opened`), or on which one was opened
 *   or closed (`any_trade`).
 * - `max_trading_days`: the phase's time limit in local calendar days (the start day is day 1); 0 is none.
 * Reaching a limit exactly is a breach: the limit is what may be lost, not a little more.
 */
export const PhaseRules = z.object({
  profit_target_pct: z.number().min(0).max(1000).describe('0: no target (the funded phase)'),
  daily_loss_pct: z.number().gt(0).max(100),
  total_loss_pct: z.number().gt(0).max(100),
  total_loss_mode: z.enum(['static', 'trailing']).default('static'),
  min_trading_days: z.number().int().min(0).max(365).default(0),
  max_trading_days: z.number().int().min(0).max(3650).default(0),
  max_positions: z.number().int().min(0).max(1000).default(0).describe('0: no limit'),
  trading_day: z.enum(['position_opened', 'any_trade']).default('position_opened'),
  warn_at_pct: z.array(z.number().gt(0).lt(100)).max(5).default([80]),
})
export type PhaseRules = z.infer<typeof PhaseRules>

/** What the evaluation needs of a phase at one instant. */
export interface PhaseState {
  initialBalance: number
  balance: number
  equity: number
  /** The day's start equity (the snapshot), or the initial balance before the first one. */
  dayStartEquity: number
  /** The highest end-of-day balance so far (trailing total loss); the initial balance at first. */
  highestEodBalance: number
  openPositions: number
  tradingDays: number
  /** Local calendar days since the phase started, the start day being 1. */
  daysElapsed: number
}

type Rule = 'daily_loss' | 'total_loss' | 'max_trading_days'

export interface Breach {
  rule: Rule
  /** The amount that may be lost (minor units). */
  limit: number
  /** The equity the limit is measured from (minor units). */
  anchor: number
  /** The equity observed (minor units). */
  observed: number
}

const pctOf = (base: number, pct: number) => Math.round((base * pct) / 100)

function dailyFloor(r: PhaseRules, s: PhaseState) {
  const limit = pctOf(s.initialBalance, r.daily_loss_pct)
  return { anchor: s.dayStartEquity, limit, floor: s.dayStartEquity - limit }
}

/** The total loss limit's anchor and floor (trailing: from the highest end-of-day balance). */
export function totalFloor(r: PhaseRules, s: Pick<PhaseState, 'initialBalance' | 'highestEodBalance'>) {
  const limit = pctOf(s.initialBalance, r.total_loss_pct)
  const anchor =
    r.total_loss_mode === 'trailing' ? Math.max(s.initialBalance, s.highestEodBalance) : s.initialBalance
  return { anchor, limit, floor: anchor - limit }
}

/** The loss limits the equity breaks, daily first (it is the nearer one on the day it is hit). */
export function lossBreach(r: PhaseRules, s: PhaseState): Breach | null {
  const d = dailyFloor(r, s)
  if (s.equity <= d.floor) return { rule: 'daily_loss', limit: d.limit, anchor: d.anchor, observed: s.equity }
  const t = totalFloor(r, s)
  if (s.equity <= t.floor) return { rule: 'total_loss', limit: t.limit, anchor: t.anchor, observed: s.equity }
  return null
}

/**
 * A loss breach judged again against its rule's anchor as it is now (a payout may have moved it since the
 * equity was compared): the breach with that anchor, or null when the equity no longer reaches the limit.
 * `dayStartEquity` null: no row of the day, the anchor compared stands. The time limit has no anchor.
 */
export function confirmBreach(
  r: PhaseRules,
  b: Breach,
  now: { initialBalance: number; highestEodBalance: number; dayStartEquity: number | null },
): Breach | null {
  if (b.rule === 'max_trading_days') return b
  const anchor =
    b.rule === 'daily_loss'
      ? (now.dayStartEquity ?? b.anchor)
      : r.total_loss_mode === 'trailing'
        ? Math.max(now.initialBalance, now.highestEodBalance)
        : now.initialBalance
  return b.observed <= anchor - b.limit ? { ...b, anchor } : null
}

/** Share (percent) of each loss limit used at this equity: 0 at the anchor, 100 at the floor. */
export function usedPct(r: PhaseRules, s: PhaseState) {
  const used = (f: { anchor: number; limit: number }) =>
    f.limit <= 0 ? 0 : Math.max(0, ((f.anchor - s.equity) / f.limit) * 100)
  return { daily_loss: used(dailyFloor(r, s)), total_loss: used(totalFloor(r, s)) }
}

/** The warning levels reached now, per rule (each is sent once per local day and rule). */
export function warningsDue(r: PhaseRules, s: PhaseState) {
  const used = usedPct(r, s)
  const out: { rule: 'daily_loss' | 'total_loss'; level: number }[] = []
  for (const rule of ['daily_loss', 'total_loss'] as const)
    for (const level of r.warn_at_pct) if (used[rule] >= level && used[rule] < 100) out.push({ rule, level })
  return out
}

/**
 * Equity the phase may lose before a warning not yet sent (`warned` says which were) or a loss limit is
 * reached: the distance to the highest such level below the equity now (Infinity when there is none).
 */
export function headroom(
  r: PhaseRules,
  s: PhaseState,
  warned: (rule: 'daily_loss' | 'total_loss', level: number) => boolean,
): number {
  let level = Number.NEGATIVE_INFINITY
  const consider = (x: number) => {
    if (x < s.equity && x > level) level = x
  }
  for (const [rule, f] of [
    ['daily_loss', dailyFloor(r, s)],
    ['total_loss', totalFloor(r, s)],
  ] as const) {
    consider(f.floor)
    for (const pct of r.warn_at_pct) if (!warned(rule, pct)) consider(f.anchor - (f.limit * pct) / 100)
  }
  return s.equity - level
}

function profitTargetMet(r: PhaseRules, s: PhaseState) {
  return (
    r.profit_target_pct > 0 && s.balance - s.initialBalance >= pctOf(s.initialBalance, r.profit_target_pct)
  )
}

/** The evaluator's verdict at the end of a pass: passed, failed (time limit or loss), or still running. */
export function verdict(
  r: PhaseRules,
  s: PhaseState,
): { outcome: 'passed' | 'running' } | { outcome: 'failed'; breach: Breach } {
  const loss = lossBreach(r, s)
  if (loss) return { outcome: 'failed', breach: loss }
  // the time limit before the target: a target first looked at on the day after the last one is late
  if (r.max_trading_days > 0 && s.daysElapsed > r.max_trading_days)
    return {
      outcome: 'failed',
      breach: {
        rule: 'max_trading_days',
        limit: r.max_trading_days,
        anchor: s.initialBalance,
        observed: s.equity,
      },
    }
  if (profitTargetMet(r, s) && s.openPositions === 0 && s.tradingDays >= r.min_trading_days)
    return { outcome: 'passed' }
  return { outcome: 'running' }
}

/** The figures a funded phase's loss limits are measured from (minor units). */
export interface Anchors {
  initialBalance: number
  /** The highest end-of-day balance (the trailing total loss's anchor). */
  highestEodBalance: number
  /** Today's row: its start (the daily loss's anchor is its equity) and minimum equity. */
  day: { startBalance: number; startEquity: number; minEquity: number }
}

/**
 * The anchors after a payout of `paid`: money the firm paid out at the trader's request is no trading
 * loss, so every figure a limit is measured from moves down by it (the day's start and minimum, the
 * highest end-of-day balance, never below the initial balance, as the trailing anchor never is).
 */
export function afterPayout(a: Anchors, paid: number): Anchors {
  return {
    initialBalance: a.initialBalance,
    highestEodBalance: Math.max(a.initialBalance, a.highestEodBalance - paid),
    day: {
      startBalance: a.day.startBalance - paid,
      startEquity: a.day.startEquity - paid,
      minEquity: a.day.minEquity - paid,
    },
  }
}

/** Progress figures of 2.15 (percent of the initial balance). */
export function progress(r: PhaseRules, s: PhaseState) {
  const pct = (x: number) => Math.round((x / s.initialBalance) * 10_000) / 100
  const profit = s.balance - s.initialBalance
  const target = pctOf(s.initialBalance, r.profit_target_pct)
  return {
    profit_pct: pct(profit),
    profit_target_pct: r.profit_target_pct,
    profit_target_progress_pct:
      target > 0 ? Math.max(0, Math.min(100, Math.round((profit / target) * 10_000) / 100)) : 0,
    daily_loss_pct: pct(Math.max(0, s.dayStartEquity - s.equity)),
    daily_loss_limit_pct: r.daily_loss_pct,
    total_loss_pct: pct(Math.max(0, totalFloor(r, s).anchor - s.equity)),
    total_loss_limit_pct: r.total_loss_pct,
    trading_days: s.tradingDays,
    min_trading_days: r.min_trading_days,
    max_trading_days: r.max_trading_days,
    max_positions: r.max_positions,
  }
}

const dayFormats = new Map<string, Intl.DateTimeFormat>()

/** The local calendar day (YYYY-MM-DD) of an instant in an IANA zone; DST-correct (the zone's own rules). */
export function localDay(ms: number, zone: string): string {
  let f = dayFormats.get(zone)
  if (!f) {
    f = new Intl.DateTimeFormat('en-CA', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    })
    dayFormats.set(zone, f)
  }
  return f.format(ms)
}

/**
 * The first instant (epoch ms) of the local day after the one `ms` falls on, in an IANA zone: hour steps
 * to the next day (a DST day has 23 or 25 hours), then bisection to the millisecond.
 */
export function nextDayStart(ms: number, zone: string): number {
  const day = localDay(ms, zone)
  let lo = ms
  let hi = ms + 3_600_000
  while (localDay(hi, zone) === day) {
    lo = hi
    hi += 3_600_000
  }
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2)
    if (localDay(mid, zone) === day) lo = mid
    else hi = mid
  }
  return hi
}

/**
 * Calendar days from one local day to another (both YYYY-MM-DD), counting both: the same day is 1.
 * `number` may be a memo of `dayNumber` (a pass asks it for thousands of phases of a few dates).
 */
export function daysInclusive(from: string, to: string, number: (day: string) => number = dayNumber) {
  return number(to) - number(from) + 1
}

/** Days since 1970-01-01 of a date (`YYYY-MM-DD`). */
export const dayNumber = (day: string) => Math.round(Date.parse(`${day}T00:00:00Z`) / 86_400_000)

/**
 * Whether `zone` is an IANA zone this runtime knows (`Intl.supportedValuesOf('timeZone')`, UTC, and the
 * IANA links it accepts: Etc/UTC, Asia/Calcutta…). An offset (+05:07, -0500), which Intl also accepts, is
 * no zone: an IANA name starts with a letter. Every zone's offset is then whole quarter hours now, which
 * the evaluator's day cache relies on (an offset of +05:07 would split a quarter hour over two days).
 */
export function isZone(zone: string) {
  if (!/^[A-Za-z]/.test(zone)) return false
  try {
    new Intl.DateTimeFormat('en', { timeZone: zone })
    return true
  } catch {
    return false
  }
}
