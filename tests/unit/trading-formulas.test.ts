import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { conversionRate, type Quote } from '../../src/modules/market/domain/conversion'
import { groupQuote } from '../../src/modules/market/domain/pricing'
import {
  checkStops,
  checkVolume,
  directionClosed,
  mayFill,
  pendingExpiration,
  stopOutOrder,
  symbolClosed,
} from '../../src/modules/trading/domain/checks'
import {
  commission,
  marginInAccount,
  profitInAccount,
  swapCharge,
} from '../../src/modules/trading/domain/formulas'
import { DAY_MS, dayOf, settledThrough, swapDue } from '../../src/modules/trading/domain/swap'
import { scanDue, stopDue, TriggerBook } from '../../src/modules/trading/domain/triggers'
import { spec } from '../support/symbols'

const quotes: Record<string, Quote> = {
  EURUSD: { bid: 1.1, ask: 1.1002, time: 0 },
  USDJPY: { bid: 151, ask: 151.02, time: 0 },
  EURGBP: { bid: 0.86, ask: 0.8602, time: 0 },
  GBPUSD: { bid: 1.27, ask: 1.2702, time: 0 },
}
const lookup = (s: string) => quotes[s] ?? null

const EURUSD = spec({ symbol: 'EURUSD' })
const USDJPY = spec({
  symbol: 'USDJPY',
  digits: 3,
  marginCurrency: 'USD',
  currency: 'USD',
  quoteCurrency: 'JPY',
})

describe('margin (MetaTrader margin modes)', () => {
  test('forex, USD account: 1 lot EURUSD at 1:100 = 100000 / 100 = 1000 EUR, x EURUSD bid 1.1 = 1100 USD', () => {
    expect(marginInAccount(EURUSD, 100, 1.1002, 100, 'USD', lookup)).toBeCloseTo(1100, 6)
  })
  test('forex, EUR account: the margin currency is the account currency, 1000 EUR', () => {
    expect(marginInAccount(EURUSD, 100, 1.1002, 100, 'EUR', lookup)).toBeCloseTo(1000, 6)
  })
  test('forex, margin_divider 2 halves it: 0.5 lot EURUSD = 50000/100/2 = 250 EUR', () => {
    expect(marginInAccount(EURUSD, 50, 1.1, 100, 'EUR', lookup, 2)).toBeCloseTo(250, 6)
  })
  test('CFD: 1 lot oil, contract 1000 x 75.5 / divider 10 = 7550 USD', () => {
    const oil = spec({ marginMode: 1, contractSize: 1000, marginCurrency: 'USD', marginDivider: 10 })
    expect(marginInAccount(oil, 100, 75.5, 100, 'USD', lookup)).toBeCloseTo(7550, 6)
  })
  test('CFD leverage: 1 lot US500 at 4950, contract 1, 1:100 = 49.5 USD; in EUR / EURUSD ask 1.1002', () => {
    const idx = spec({ marginMode: 4, contractSize: 1, marginCurrency: 'USD' })
    expect(marginInAccount(idx, 100, 4950, 100, 'USD', lookup)).toBeCloseTo(49.5, 6)
    expect(marginInAccount(idx, 100, 4950, 100, 'EUR', lookup)).toBeCloseTo(49.5 / 1.1002, 6)
  })
  test('CFD index: lots x contract x price x tick_value / tick_size = 1 x 1 x 17000 x 0.5/0.1 = 85000', () => {
    const idx = spec({ marginMode: 3, contractSize: 1, tickSize: 0.1, tickValue: 0.5, marginCurrency: 'USD' })
    expect(marginInAccount(idx, 100, 17000, 100, 'USD', lookup)).toBeCloseTo(85000, 6)
  })
  test('futures: lots x margin_initial = 2 x 2500 = 5000', () => {
    const ng = spec({ marginMode: 2, marginInitial: 2500, marginCurrency: 'USD' })
    expect(marginInAccount(ng, 200, 2.55, 100, 'USD', lookup)).toBeCloseTo(5000, 6)
  })
})

describe('profit (MetaTrader profit modes) and conversion', () => {
  test('forex BUY EURUSD 1 lot 1.1000 -> 1.1050: 0.005 x 100000 = 500 USD', () => {
    expect(profitInAccount(EURUSD, 0, 100, 1.1, 1.105, 'USD', lookup)).toBeCloseTo(500, 6)
  })
  test('SELL is negated: -500 USD', () => {
    expect(profitInAccount(EURUSD, 1, 100, 1.1, 1.105, 'USD', lookup)).toBeCloseTo(-500, 6)
  })
  test('cross currency: BUY USDJPY 1 lot 150 -> 151 = 100000 JPY; to USD divide by USDJPY ask 151.02', () => {
    expect(profitInAccount(USDJPY, 0, 100, 150, 151, 'USD', lookup)).toBeCloseTo(100000 / 151.02, 6)
  })
  test('EUR account, USD profit: 500 USD / EURUSD ask 1.1002', () => {
    expect(profitInAccount(EURUSD, 0, 100, 1.1, 1.105, 'EUR', lookup)).toBeCloseTo(500 / 1.1002, 6)
  })
  test('futures: (2.60 - 2.55) / 0.001 x 10 x 1 lot = 500', () => {
    const ng = spec({ profitMode: 2, tickSize: 0.001, tickValue: 10, contractSize: 10000 })
    expect(profitInAccount(ng, 0, 100, 2.55, 2.6, 'USD', lookup)).toBeCloseTo(500, 6)
  })
  test('JPY -> EUR through USD: (1 / 151.02) x (1 / 1.1002); GBP -> EUR by the inverse EURGBP ask', () => {
    expect(conversionRate('JPY', 'EUR', lookup)).toBeCloseTo(1 / 151.02 / 1.1002, 10)
    expect(conversionRate('GBP', 'EUR', lookup)).toBeCloseTo(1 / 0.8602, 10)
    expect(conversionRate('CHF', 'EUR', lookup)).toBeNull()
  })
})

describe('commission and swap', () => {
  test('money per lot: 7 x 0.5 lot = -3.5; per deal: -7', () => {
    expect(commission(EURUSD, { commBase: 7, commType: 0, commLots: 0 }, 50, 1.1, 'USD', lookup)).toBeCloseTo(
      -3.5,
      9,
    )
    expect(commission(EURUSD, { commBase: 7, commType: 0, commLots: 1 }, 50, 1.1, 'USD', lookup)).toBeCloseTo(
      -7,
      9,
    )
  })
  test('pips: 2 x point 0.01 x contract 1000 x 1 lot = -20 USD', () => {
    const oil = spec({ digits: 2, contractSize: 1000 })
    expect(commission(oil, { commBase: 2, commType: 1, commLots: 0 }, 100, 75, 'USD', lookup)).toBeCloseTo(
      -20,
      9,
    )
  })
  test('percent: 0.05% of 1 lot x 1 x 43000 = -21.5 USD', () => {
    const btc = spec({ digits: 2, contractSize: 1 })
    expect(
      commission(btc, { commBase: 0.05, commType: 2, commLots: 0 }, 100, 43000, 'USD', lookup),
    ).toBeCloseTo(-21.5, 9)
  })
  test('swap in points: -6.5 x 0.00001 x 100000 x 1 lot = -6.5 USD; triple day -19.5', () => {
    const s = spec({ swapLong: -6.5, swapShort: 1.2 })
    expect(swapCharge(s, 0, 100, 1.1, 1, 'USD', lookup)).toBeCloseTo(-6.5, 9)
    expect(swapCharge(s, 0, 100, 1.1, 3, 'USD', lookup)).toBeCloseTo(-19.5, 9)
    expect(swapCharge(s, 1, 100, 1.1, 1, 'USD', lookup)).toBeCloseTo(1.2, 9)
  })
  test('swap by interest: -20% a year on 1 lot x 43000 = 43000 x -20 / 100 / 360 = -23.888...', () => {
    const btc = spec({ digits: 2, contractSize: 1, swapType: 2, swapLong: -20 })
    expect(swapCharge(btc, 0, 100, 43000, 1, 'USD', lookup)).toBeCloseTo((43000 * -20) / 100 / 360, 9)
  })
})

describe('swap owed for the midnights a position was held through (swapDue)', () => {
  // Monday to Friday trade, the weekend does not; Wednesday's rollover is charged three days
  const weekdays = [0, 1, 1, 1, 1, 1, 0].map((n) => ({ trade: n ? [{}] : [] }))
  const s = {
    ...spec({ swapLong: -6.5, swapShort: 1.2 }),
    swapEnable: 1,
    swapRollover3days: 3,
    sessionList: weekdays,
  }
  const monday = dayOf(Date.UTC(2026, 0, 5))
  const owed = (from: number, today: number, sp = s, cmd = 0) =>
    swapDue(sp, { cmd, volume: 100 }, from, today, 1.1, 'USD', lookup)
  test('nothing on the day it was opened or last rolled', () => {
    expect(owed(monday, monday)).toBe(0)
    expect(owed(monday + 1, monday)).toBe(0)
  })
  test('one day per midnight, for the day that ended; three for Wednesday; none for a day without trading', () => {
    expect(owed(monday, monday + 1)).toBeCloseTo(-6.5, 9) // Monday
    expect(owed(monday + 2, monday + 3)).toBeCloseTo(-19.5, 9) // Wednesday
    expect(owed(monday + 5, monday + 7)).toBe(0) // Saturday and Sunday
    // Monday to the next Monday: Mon, Tue, Wed x3, Thu, Fri = 7 days
    expect(owed(monday, monday + 7)).toBeCloseTo(-45.5, 9)
    expect(owed(monday, monday + 1, s, 1)).toBeCloseTo(1.2, 9)
  })
  test('a swap-free symbol owes nothing, whatever the days', () => {
    expect(owed(monday, monday + 7, { ...s, swapEnable: 0 })).toBe(0)
  })
  test('a position owes nothing for the days before it was opened, whatever its row says', () => {
    const openTime = Date.UTC(2026, 0, 7, 10)
    expect(settledThrough({ rolloverDay: 0, openTime })).toBe(monday + 2)
    expect(settledThrough({ rolloverDay: monday + 4, openTime })).toBe(monday + 4)
  })
  test('a day is the UTC day of a time', () => {
    expect(dayOf(Date.UTC(2026, 0, 5, 23, 59, 59, 999))).toBe(monday)
    expect(dayOf(Date.UTC(2026, 0, 6))).toBe(monday + 1)
    expect(DAY_MS).toBe(86_400_000)
  })
})

describe("a symbol's rules for new orders", () => {
  const week = [0, 1, 1, 1, 1, 1, 0].map((n) => ({
    trade_overnight: 0,
    trade: n ? [{ open_hour: 8, open_min: 0, close_hour: 20, close_min: 0 }] : [],
  }))
  const gs = (
    info: { trade?: number; longOnly?: number } = {},
    sec: { show?: number; trade?: number } = {},
  ) => ({
    info: { symbol: 'GBPUSD', trade: 2, longOnly: 0, sessionList: week, ...info },
    sec: { show: 1, trade: 1, ...sec },
  })
  const monday = (h: number) => Date.UTC(2026, 0, 5, h)
  test('hidden, not tradable (symbol or group), outside the session', () => {
    expect(symbolClosed(gs(), 'demo', monday(12))).toBeNull()
    expect(symbolClosed(gs({}, { show: 0 }), 'demo', monday(12))).toBe(
      'symbol GBPUSD is not available for group demo',
    )
    expect(symbolClosed(gs({ trade: 0 }), 'demo', monday(12))).toBe(
      'symbol GBPUSD is not tradable for group demo',
    )
    expect(symbolClosed(gs({}, { trade: 0 }), 'demo', monday(12))).toBe(
      'symbol GBPUSD is not tradable for group demo',
    )
    expect(symbolClosed(gs(), 'demo', monday(21))).toBe(
      'market closed: GBPUSD is outside its trading session',
    )
    expect(symbolClosed(gs(), 'demo', Date.UTC(2026, 0, 4, 12))).not.toBeNull() // a Sunday
  })
  test('close-only refuses both directions, long only refuses sells', () => {
    expect(directionClosed(gs({ trade: 1 }).info, 0)).toBe('symbol GBPUSD is close-only')
    expect(directionClosed(gs({ longOnly: 1 }).info, 0)).toBeNull()
    expect(directionClosed(gs({ longOnly: 1 }).info, 2)).toBeNull()
    for (const sell of [1, 3, 5]) expect(directionClosed(gs({ longOnly: 1 }).info, sell)).not.toBeNull()
  })
  test('a pending order fills only where a market order of its direction would', () => {
    expect(mayFill(gs(), 3, monday(12))).toBe(true)
    expect(mayFill(gs({ longOnly: 1 }), 3, monday(12))).toBe(false)
    expect(mayFill(gs({ longOnly: 1 }), 4, monday(12))).toBe(true)
    expect(mayFill(gs({ trade: 1 }), 2, monday(12))).toBe(false)
    expect(mayFill(gs(), 2, monday(22))).toBe(false)
  })
  test("max_volume caps a new order's volume; 0 is none", () => {
    const lots = { lotMin: 1, lotMax: 10000, lotStep: 1 }
    expect(checkVolume(30, lots, 20)).toEqual({ ok: false, message: 'volume: 30 is above max_volume 20' })
    expect(checkVolume(20, lots, 20).ok).toBe(true)
    expect(checkVolume(30, lots, 0).ok).toBe(true)
  })
  test('gtc_pendings 0: no expiration asked is the end of the UTC day; a later one is refused', () => {
    const now = monday(12)
    const end = Date.UTC(2026, 0, 6) / 1000
    expect(pendingExpiration(1, 0, now)).toEqual({ ok: true, expiration: 0 })
    expect(pendingExpiration(1, end + 999, now)).toEqual({ ok: true, expiration: end + 999 })
    expect(pendingExpiration(0, 0, now)).toEqual({ ok: true, expiration: end })
    expect(pendingExpiration(0, end - 1, now)).toEqual({ ok: true, expiration: end - 1 })
    expect(pendingExpiration(0, end + 1, now).ok).toBe(false)
  })
})

describe('checks and pricing', () => {
  test('volume limits and step', () => {
    const g = { lotMin: 10, lotMax: 1000, lotStep: 10 }
    expect(checkVolume(10, g).ok).toBe(true)
    expect(checkVolume(15, g).ok).toBe(false)
    expect(checkVolume(5, g).ok).toBe(false)
    expect(checkVolume(1010, g).ok).toBe(false)
  })
  test('SL/TP side and stops_level (10 points = 0.0001)', () => {
    expect(checkStops(0, 1.0999, 1.1001, 1.1, 0, 5).ok).toBe(true)
    expect(checkStops(0, 1.0999, 0, 1.1, 10, 5).ok).toBe(true)
    expect(checkStops(0, 1.09995, 0, 1.1, 10, 5).ok).toBe(false)
    expect(checkStops(1, 1.0999, 0, 1.1, 0, 5).ok).toBe(false)
  })
  test('stop-out picks the largest loss first', () => {
    expect(
      stopOutOrder([
        { ticket: 1, profit: -5 },
        { ticket: 2, profit: -50 },
        { ticket: 3, profit: 10 },
      ]).map((p) => p.ticket),
    ).toEqual([2, 1, 3])
  })
  test('group spread: fixed 8 points around the mid, then spread_diff 3 (1 bid, 2 ask)', () => {
    expect(
      groupQuote(
        { bid: 1.1, ask: 1.1002, time: 0 },
        { digits: 5, spread: 8, spreadBalance: 0, spreadDiff: 0 },
      ),
    ).toEqual({ bid: 1.10006, ask: 1.10014, time: 0 })
    expect(
      groupQuote(
        { bid: 1.1, ask: 1.1002, time: 0 },
        { digits: 5, spread: 0, spreadBalance: 0, spreadDiff: 3 },
      ),
    ).toEqual({ bid: 1.09999, ask: 1.10022, time: 0 })
  })
})

describe('trigger book', () => {
  test('agrees with a full scan for random orders and quotes (property)', () => {
    const order = fc.record({
      cmd: fc.integer({ min: 0, max: 5 }),
      openPrice: fc.integer({ min: 900, max: 1100 }),
      sl: fc.integer({ min: 0, max: 1100 }),
      tp: fc.integer({ min: 0, max: 1100 }),
    })
    fc.assert(
      fc.property(
        fc.array(order, { maxLength: 60 }),
        fc.integer({ min: 850, max: 1150 }),
        fc.integer({ min: 0, max: 5 }),
        (list, bid, spread) => {
          // blocks of 2-4 entries: the property covers lists that split and merge
          const book = new TriggerBook(2)
          const rows = list.map((o, i) => ({
            ...o,
            ticket: i + 1,
            symbol: 'S',
            state: o.cmd >= 2 ? 'pending' : 'open',
          }))
          for (const r of rows) book.upsert('S', r)
          // remove a third again to exercise removal
          for (const r of rows.filter((r) => r.ticket % 3 === 0)) book.remove(r.ticket)
          const kept = rows.filter((r) => r.ticket % 3 !== 0)
          const key = (t: { ticket: number; kind: string }) => `${t.ticket}:${t.kind}`
          const fromBook = book
            .due('S', bid, bid + spread)
            .map(key)
            .sort()
          const fromScan = scanDue(kept, 'S', bid, bid + spread)
            .map(key)
            .sort()
          expect(fromBook).toEqual(fromScan)
        },
      ),
      { numRuns: 300 },
    )
  })

  test("stopDue (a filled order's levels at its fill quote) finds what the book would, SL first (property)", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1 }),
        fc.integer({ min: 0, max: 1100 }),
        fc.integer({ min: 0, max: 1100 }),
        fc.integer({ min: 850, max: 1150 }),
        fc.integer({ min: 0, max: 5 }),
        (cmd, sl, tp, bid, spread) => {
          const o = { ticket: 1, cmd, state: 'open', openPrice: 1000, sl, tp }
          const book = new TriggerBook(2)
          book.upsert('S', o)
          const kinds = book.due('S', bid, bid + spread).map((t) => t.kind)
          const expected = kinds.includes('sl') ? 'sl' : kinds.includes('tp') ? 'tp' : null
          expect(stopDue(o, bid, bid + spread)).toBe(expected)
          expect(stopDue({ ...o, state: 'pending' }, bid, bid + spread)).toBeNull()
        },
      ),
      { numRuns: 300 },
    )
    // a BUY closes at the bid, a SELL at the ask
    expect(
      stopDue({ ticket: 1, cmd: 0, state: 'open', openPrice: 1.2755, sl: 1.274, tp: 0 }, 1.2735, 1.2755),
    ).toBe('sl')
    expect(
      stopDue({ ticket: 1, cmd: 1, state: 'open', openPrice: 1.107, sl: 1.106, tp: 0 }, 1.105, 1.1071),
    ).toBe('sl')
    expect(
      stopDue({ ticket: 1, cmd: 1, state: 'open', openPrice: 1.107, sl: 1.108, tp: 0 }, 1.105, 1.1071),
    ).toBeNull()
  })
})
