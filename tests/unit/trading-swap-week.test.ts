// The nights of swap a position owes (domain/swap.ts): any 7 consecutive nights charge exactly 7 days,
// whatever the symbol's sessions and its triple-swap weekday; a symbol rolling every night charges one a
// night. The weekend's nights are charged in advance with the triple weekday's rollover.
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { weekSessions } from '../../src/modules/market/domain/sessions'
import { dayOf, nightMultipliers, rolloverNights, swapDue } from '../../src/modules/trading/domain/swap'
import { spec } from '../support/symbols'

// the demo universe's sessions (market/demo-symbols.ts), server time UTC
const FOREX = weekSessions([[0, 0, 24, 0]], { sunday: [[22, 0, 24, 0]], friday: [[0, 0, 22, 0]] })
const METALS = weekSessions(
  [
    [0, 0, 21, 0],
    [22, 0, 24, 0],
  ],
  { sunday: [[23, 0, 24, 0]], friday: [[0, 0, 21, 0]] },
)
const CFD = weekSessions(
  [
    [1, 0, 21, 0],
    [22, 0, 24, 0],
  ],
  { sunday: [[23, 0, 24, 0]], friday: [[1, 0, 21, 0]] },
)
const CRYPTO = weekSessions([[0, 0, 24, 0]], { sunday: [[0, 0, 24, 0]], saturday: [[0, 0, 24, 0]] })
const STOCKS = weekSessions([[14, 30, 21, 0]])
// a server on GMT+2 sees forex as Monday 00:00 to Friday 24:00
const FOREX_MON_FRI = weekSessions([[0, 0, 24, 0]])

const lookup = () => null
const monday = dayOf(Date.UTC(2026, 0, 5))
// EURUSD long: -6.5 points a lot a night = -6.50 USD
const rolled = (sessionList: typeof FOREX, swapRollover3days = 3) => ({
  ...spec({ swapLong: -6.5, swapShort: 1.2 }),
  swapEnable: 1,
  swapRollover3days,
  sessionList,
})
const nights = (sp: ReturnType<typeof rolled>, from: number, today: number) =>
  swapDue(sp, { cmd: 0, volume: 100 }, from, today, 1.1, 'USD', lookup) / -6.5

describe('which nights roll, and how many days each charges (Sunday first)', () => {
  test('forex, metals, CFDs: Monday to Friday nights, Wednesday x3; the Sunday evening is Monday trading', () => {
    for (const s of [FOREX, METALS, CFD, FOREX_MON_FRI]) {
      expect(rolloverNights(s)).toEqual([false, true, true, true, true, true, false])
      expect(nightMultipliers({ sessionList: s, swapRollover3days: 3 })).toEqual([0, 1, 1, 3, 1, 1, 0])
    }
  })
  test('stocks: Monday to Friday nights; triple Friday as some brokers set it', () => {
    expect(nightMultipliers({ sessionList: STOCKS, swapRollover3days: 3 })).toEqual([0, 1, 1, 3, 1, 1, 0])
    expect(nightMultipliers({ sessionList: STOCKS, swapRollover3days: 5 })).toEqual([0, 1, 1, 1, 1, 3, 0])
  })
  test('a symbol trading every day: one day every night, no triple on top', () => {
    expect(nightMultipliers({ sessionList: CRYPTO, swapRollover3days: 3 })).toEqual([1, 1, 1, 1, 1, 1, 1])
  })
  test('no triple weekday: the nights without a rollover are not charged; no trading day: nothing', () => {
    expect(nightMultipliers({ sessionList: FOREX, swapRollover3days: 7 })).toEqual([0, 1, 1, 1, 1, 1, 0])
    expect(nightMultipliers({ sessionList: weekSessions([]), swapRollover3days: 3 })).toEqual([
      0, 0, 0, 0, 0, 0, 0,
    ])
  })
  test('a week held, Monday to Monday: 7 nights (forex 8 and 24/7 9 before)', () => {
    expect(nights(rolled(FOREX), monday, monday + 7)).toBeCloseTo(7, 9)
    expect(nights(rolled(CRYPTO), monday, monday + 7)).toBeCloseTo(7, 9)
    // Friday to Monday, forex: the Friday night only (the weekend was charged on Wednesday)
    expect(nights(rolled(FOREX), monday + 4, monday + 7)).toBeCloseTo(1, 9)
  })
})

// a day's sessions: none, or up to 3 intervals inside the day
const interval = fc
  .tuple(fc.integer({ min: 0, max: 24 * 60 - 1 }), fc.integer({ min: 1, max: 24 * 60 }))
  .map(([a, len]) => {
    const close = Math.min(24 * 60, a + len)
    return {
      open_hour: Math.floor(a / 60),
      open_min: a % 60,
      close_hour: Math.floor(close / 60),
      close_min: close % 60,
    }
  })
const week = fc.array(
  fc.array(interval, { maxLength: 3 }).map((trade) => ({ trade_overnight: trade.length > 0 ? 1 : 0, trade })),
  { minLength: 7, maxLength: 7 },
)

describe('invariants', () => {
  test('any 7k consecutive nights charge exactly 7k days (a symbol trading some day, a triple weekday)', () => {
    fc.assert(
      fc.property(
        week,
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 1, max: 4 }),
        (sessions, triple, offset, k) => {
          fc.pre(sessions.some((d) => d.trade.length > 0))
          const from = monday + offset
          expect(nights(rolled(sessions, triple), from, from + 7 * k)).toBeCloseTo(7 * k, 9)
        },
      ),
    )
  })
  test('a symbol rolling every night: any N nights charge exactly N days', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 0, max: 40 }),
        fc.integer({ min: 0, max: 6 }),
        (triple, n, offset) => {
          const from = monday + offset
          expect(nights(rolled(CRYPTO, triple), from, from + n)).toBeCloseTo(n, 9)
        },
      ),
    )
  })
  test('any N nights charge no fewer than the rollovers held through, nor more than N + the week carried', () => {
    fc.assert(
      fc.property(
        week,
        fc.integer({ min: 0, max: 6 }),
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 0, max: 6 }),
        (sessions, triple, n, offset) => {
          const sp = rolled(sessions, triple)
          const from = monday + offset
          const got = nights(sp, from, from + n)
          const rolls = rolloverNights(sessions)
          let held = 0
          for (let d = from + 1; d <= from + n; d++)
            if (rolls[new Date((d - 1) * 86_400_000).getUTCDay()]) held++
          expect(got).toBeGreaterThanOrEqual(held - 1e-9)
          expect(got).toBeLessThanOrEqual(n + 6 + 1e-9)
        },
      ),
    )
  })
})
