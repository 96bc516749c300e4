import { describe, expect, test } from 'bun:test'
import {
  afterPayout,
  confirmBreach,
  daysInclusive,
  headroom,
  localDay,
  lossBreach,
  nextDayStart,
  type PhaseRules,
  type PhaseState,
  progress,
  PhaseRules as Rules,
  usedPct,
  verdict,
  warningsDue,
} from './rules'

// Worked examples derived from the published definitions (money in cents):
// - FTMO, Maximum Daily Loss: "the equity ... must not decline below the balance at the start of the day
//   minus 5% of the initial account balance", floating losses included.
// - FTMO, Maximum Loss (static): equity may not go below 90% of the initial balance.
// - The5ers / FundedNext trailing drawdown: the floor moves up with the highest end-of-day balance.
// - Trading days: a day with at least one position opened (FTMO's "trading day").

const rules = (r: Partial<PhaseRules> = {}): PhaseRules =>
  Rules.parse({ profit_target_pct: 10, daily_loss_pct: 5, total_loss_pct: 10, ...r })

const state = (s: Partial<PhaseState> = {}): PhaseState => ({
  initialBalance: 10_000_00,
  balance: 10_000_00,
  equity: 10_000_00,
  dayStartEquity: 10_000_00,
  highestEodBalance: 10_000_00,
  openPositions: 0,
  tradingDays: 0,
  daysElapsed: 1,
  ...s,
})

describe('daily loss: against the day start equity, floating loss included', () => {
  // initial 100,000; yesterday closed with equity 102,000 (the snapshot). The limit is 5% of the initial
  // balance = 5,000, so the floor is 102,000 - 5,000 = 97,000. An open trade floating -5,000 with a
  // closed balance still at 102,000 gives equity 97,000: the floor is reached, a breach although the
  // balance never fell.
  const r = rules()
  const base = { initialBalance: 100_000_00, dayStartEquity: 102_000_00, highestEodBalance: 102_000_00 }

  test('equity 97,000.01 is allowed, 97,000 is a breach', () => {
    expect(lossBreach(r, state({ ...base, balance: 102_000_00, equity: 97_000_01 }))).toBeNull()
    expect(lossBreach(r, state({ ...base, balance: 102_000_00, equity: 97_000_00 }))).toEqual({
      rule: 'daily_loss',
      limit: 5_000_00,
      anchor: 102_000_00,
      observed: 97_000_00,
    })
  })

  test('warnings at 80% of the limit: a loss of 4,000 of the 5,000 warns once per rule', () => {
    expect(warningsDue(r, state({ ...base, equity: 98_000_01 }))).toEqual([])
    expect(warningsDue(r, state({ ...base, equity: 98_000_00 }))).toEqual([{ rule: 'daily_loss', level: 80 }])
  })
})

describe('headroom: the equity that may be lost before the next warning or limit', () => {
  // initial 100,000, day start equity 102,000, equity 101,000: the daily floor is 97,000 and its 80% warning
  // 102,000 - 4,000 = 98,000; the static total floor is 90,000 and its warning 100,000 - 8,000 = 92,000.
  // The highest of these below the equity is the daily warning: 101,000 - 98,000 = 3,000 may be lost.
  const r = rules()
  const s = state({ initialBalance: 100_000_00, dayStartEquity: 102_000_00, equity: 101_000_00 })
  test('the nearest level below the equity decides', () => {
    expect(headroom(r, s, () => false)).toBe(3_000_00)
  })
  test('a warning sent today no longer counts: then the daily floor, 101,000 - 97,000 = 4,000', () => {
    expect(headroom(r, s, (rule, level) => rule === 'daily_loss' && level === 80)).toBe(4_000_00)
  })
  test('past the warning level (equity 97,500), the floor: 500 left', () => {
    expect(headroom(r, { ...s, equity: 97_500_00 }, () => false)).toBe(500_00)
  })
})

describe('total loss: static against trailing', () => {
  // initial 100,000, limit 10% = 10,000. The account made 8,000 (highest end-of-day balance 108,000), then
  // lost: equity 95,000 intraday, from a day start of 99,000 (a daily loss of 4,000, within its 5,000).
  // Static: floor 90,000, 95,000 is fine. Trailing: floor 108,000 - 10,000 = 98,000: a breach.
  const s = { initialBalance: 100_000_00, dayStartEquity: 99_000_00, highestEodBalance: 108_000_00 }

  test('static: 95,000 stays above 90,000', () => {
    expect(lossBreach(rules(), state({ ...s, equity: 95_000_00 }))).toBeNull()
    expect(lossBreach(rules(), state({ ...s, equity: 90_000_00, dayStartEquity: 94_000_00 }))).toMatchObject({
      rule: 'total_loss',
      anchor: 100_000_00,
    })
  })

  test('trailing: the floor is 98,000, so 95,000 is a breach anchored at 108,000', () => {
    expect(lossBreach(rules({ total_loss_mode: 'trailing' }), state({ ...s, equity: 95_000_00 }))).toEqual({
      rule: 'total_loss',
      limit: 10_000_00,
      anchor: 108_000_00,
      observed: 95_000_00,
    })
  })

  test('trailing never anchors below the initial balance', () => {
    const r = rules({ total_loss_mode: 'trailing' })
    expect(
      lossBreach(
        r,
        state({ ...s, highestEodBalance: 97_000_00, equity: 90_000_01, dayStartEquity: 91_000_00 }),
      ),
    ).toBeNull()
  })
})

describe('profit target, trading days, time limit', () => {
  // target 10% of 10,000 = 1,000 closed profit, 4 trading days at least, 30 days at most
  const r = rules({ min_trading_days: 4, max_trading_days: 30 })

  test('the target needs closed profit, no open position and the minimum trading days', () => {
    const met = { balance: 11_000_00, equity: 11_000_00, tradingDays: 4 }
    expect(verdict(r, state(met)).outcome).toBe('passed')
    expect(verdict(r, state({ ...met, tradingDays: 3 })).outcome).toBe('running')
    expect(verdict(r, state({ ...met, openPositions: 1 })).outcome).toBe('running')
    expect(verdict(r, state({ ...met, balance: 10_999_99 })).outcome).toBe('running')
  })

  test('day 31 without the target fails on the time limit; a loss breach wins over everything', () => {
    expect(verdict(r, state({ daysElapsed: 30 })).outcome).toBe('running')
    expect(verdict(r, state({ daysElapsed: 31 }))).toMatchObject({
      outcome: 'failed',
      breach: { rule: 'max_trading_days', limit: 30 },
    })
    expect(verdict(r, state({ balance: 11_000_00, tradingDays: 9, equity: 9_000_00 }))).toMatchObject({
      breach: { rule: 'daily_loss' },
    })
  })

  test('on the day after the limit the time limit fails the phase, its target met or not', () => {
    const met = { balance: 11_000_00, equity: 11_000_00, tradingDays: 4 }
    expect(verdict(r, state({ ...met, daysElapsed: 30 })).outcome).toBe('passed')
    expect(verdict(r, state({ ...met, daysElapsed: 31 }))).toMatchObject({
      outcome: 'failed',
      breach: { rule: 'max_trading_days', limit: 30 },
    })
    // no time limit: the target passes whenever it is met
    expect(verdict(rules({ min_trading_days: 4 }), state({ ...met, daysElapsed: 400 })).outcome).toBe(
      'passed',
    )
  })

  test('progress figures of 2.15', () => {
    const p = progress(
      r,
      state({ balance: 10_500_00, equity: 10_400_00, dayStartEquity: 10_600_00, tradingDays: 2 }),
    )
    expect(p).toEqual({
      profit_pct: 5,
      profit_target_pct: 10,
      profit_target_progress_pct: 50,
      daily_loss_pct: 2,
      daily_loss_limit_pct: 5,
      total_loss_pct: 0,
      total_loss_limit_pct: 10,
      trading_days: 2,
      min_trading_days: 4,
      max_trading_days: 30,
      max_positions: 0,
    })
  })
})

describe("the program's zone decides the day, DST included", () => {
  test('Europe/Prague, the spring change (29 March 2026, a 23-hour day)', () => {
    // 2026-03-28 23:30 UTC is 00:30 CET on the 29th; 2026-03-29 21:59 UTC is 23:59 CEST on the 29th, and
    // 22:00 UTC is already the 30th (CEST, UTC+2). A UTC day boundary would put 22:00-24:00 UTC wrongly
    // on the 29th.
    const zone = 'Europe/Prague'
    expect(localDay(Date.UTC(2026, 2, 28, 23, 30), zone)).toBe('2026-03-29')
    expect(localDay(Date.UTC(2026, 2, 29, 21, 59), zone)).toBe('2026-03-29')
    expect(localDay(Date.UTC(2026, 2, 29, 22, 0), zone)).toBe('2026-03-30')
  })

  test('America/New_York, the autumn change (1 November 2026, a 25-hour day)', () => {
    // EDT (UTC-4) until 06:00 UTC, then EST (UTC-5): the day runs 04:00 UTC on the 1st to 05:00 UTC on the 2nd
    const zone = 'America/New_York'
    expect(localDay(Date.UTC(2026, 10, 1, 4, 0), zone)).toBe('2026-11-01')
    expect(localDay(Date.UTC(2026, 10, 2, 4, 59), zone)).toBe('2026-11-01')
    expect(localDay(Date.UTC(2026, 10, 2, 5, 0), zone)).toBe('2026-11-02')
  })

  test('the next day starts at local midnight: 23 hours after the Prague spring midnight, 25 after New York autumn', () => {
    // Prague 29 March 2026 starts at 23:00 UTC on the 28th (CET) and ends at 22:00 UTC on the 29th (CEST)
    expect(nextDayStart(Date.UTC(2026, 2, 28, 23, 30), 'Europe/Prague')).toBe(Date.UTC(2026, 2, 29, 22, 0))
    // New York 1 November 2026 starts at 04:00 UTC (EDT) and ends at 05:00 UTC on the 2nd (EST)
    expect(nextDayStart(Date.UTC(2026, 10, 1, 4, 0), 'America/New_York')).toBe(Date.UTC(2026, 10, 2, 5, 0))
    // from the last millisecond of a day, the next millisecond
    expect(nextDayStart(Date.UTC(2026, 10, 2, 4, 59, 59, 999), 'America/New_York')).toBe(
      Date.UTC(2026, 10, 2, 5, 0),
    )
  })

  test('days elapsed count calendar days, the first being 1', () => {
    expect(daysInclusive('2026-03-29', '2026-03-29')).toBe(1)
    expect(daysInclusive('2026-03-28', '2026-03-30')).toBe(3)
    expect(daysInclusive('2026-10-31', '2026-11-02')).toBe(3)
  })
})

describe('a payout moves the anchors down by what it paid', () => {
  // funded 10,000: yesterday ended at 10,793 (the day's start and the highest end-of-day balance)
  const before = {
    initialBalance: 10_000_00,
    highestEodBalance: 10_793_00,
    day: { startBalance: 10_793_00, startEquity: 10_793_00, minEquity: 10_750_00 },
  }

  test('the day start, its minimum and the highest end-of-day balance fall by the amount paid', () => {
    expect(afterPayout(before, 793_00)).toEqual({
      initialBalance: 10_000_00,
      highestEodBalance: 10_000_00,
      day: { startBalance: 10_000_00, startEquity: 10_000_00, minEquity: 9_957_00 },
    })
  })

  test('the paid-out balance is no loss: neither limit is nearer than before, in either mode', () => {
    for (const mode of ['static', 'trailing'] as const) {
      const r = rules({ profit_target_pct: 0, total_loss_mode: mode })
      const a = afterPayout(before, 793_00)
      const s = state({
        balance: 10_000_00,
        equity: 10_000_00,
        dayStartEquity: a.day.startEquity,
        highestEodBalance: a.highestEodBalance,
      })
      expect(lossBreach(r, s)).toBeNull()
      expect(usedPct(r, s)).toEqual({ daily_loss: 0, total_loss: 0 })
      // a real loss after it is measured from the moved anchor: 500 below the new start breaches
      expect(lossBreach(r, { ...s, equity: 9_500_00 })).toMatchObject({
        rule: 'daily_loss',
        anchor: 10_000_00,
      })
    }
  })

  test('the highest end-of-day balance never falls below the initial balance', () => {
    const a = afterPayout({ ...before, highestEodBalance: 10_500_00 }, 793_00)
    expect(a.highestEodBalance).toBe(10_000_00)
  })
})

describe('a breach is judged again against the anchors as they are when it is recorded', () => {
  const daily = { rule: 'daily_loss' as const, limit: 500_00, anchor: 10_793_00, observed: 10_000_00 }
  const now = { initialBalance: 10_000_00, highestEodBalance: 10_000_00, dayStartEquity: 10_000_00 }

  test('a daily breach against a day start a payout has moved since is none', () => {
    expect(confirmBreach(rules(), daily, now)).toBeNull()
    // with the start it was compared with, or no row of the day, it stands
    expect(confirmBreach(rules(), daily, { ...now, dayStartEquity: 10_793_00 })).toEqual(daily)
    expect(confirmBreach(rules(), daily, { ...now, dayStartEquity: null })).toEqual(daily)
    // a real loss from the moved start stands, with the anchor as it is now
    expect(confirmBreach(rules(), { ...daily, observed: 9_500_00 }, now)).toEqual({
      ...daily,
      observed: 9_500_00,
      anchor: 10_000_00,
    })
  })

  test('a trailing total breach follows the highest end-of-day balance now; a static one the initial balance', () => {
    const total = { rule: 'total_loss' as const, limit: 1_000_00, anchor: 10_793_00, observed: 9_793_00 }
    expect(confirmBreach(rules({ total_loss_mode: 'trailing' }), total, now)).toBeNull()
    expect(
      confirmBreach(rules({ total_loss_mode: 'trailing' }), total, { ...now, highestEodBalance: 10_793_00 }),
    ).toEqual(total)
    expect(confirmBreach(rules(), { ...total, anchor: 10_000_00, observed: 9_000_00 }, now)).toEqual({
      ...total,
      anchor: 10_000_00,
      observed: 9_000_00,
    })
  })

  test('the time limit stands as it was found', () => {
    const late = { rule: 'max_trading_days' as const, limit: 30, anchor: 10_000_00, observed: 10_500_00 }
    expect(confirmBreach(rules(), late, now)).toBe(late)
  })
})
