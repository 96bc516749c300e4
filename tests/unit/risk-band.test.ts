import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import type { Quote } from '../../src/modules/market/domain/conversion'
import { groupQuote, type SpreadSettings } from '../../src/modules/market/domain/pricing'
import {
  isBuy,
  marginInAccount,
  profitInAccount,
  type SymbolSpec,
} from '../../src/modules/trading/domain/formulas'
import { averagePrice, type Holding } from '../../src/modules/trading/domain/holdings'
import {
  type HeldSymbol,
  leaves,
  type PriceBand,
  riskBands,
} from '../../src/modules/trading/domain/risk-band'
import { RiskBook } from '../../src/modules/trading/domain/risk-book'
import { spec } from '../support/symbols'

// the kinds of dependence an equity can have on quotes: none (USD quote), the held symbol itself (JPY
// through USDJPY), other symbols (GBP through GBPUSD, CHF through USDCHF), two of them (JPY into EUR)
const SPECS: Record<string, SymbolSpec> = {
  EURUSD: spec({ symbol: 'EURUSD' }),
  GBPUSD: spec({ symbol: 'GBPUSD', marginCurrency: 'GBP' }),
  USDJPY: spec({ symbol: 'USDJPY', digits: 3, marginCurrency: 'USD', quoteCurrency: 'JPY' }),
  USDCHF: spec({ symbol: 'USDCHF', marginCurrency: 'USD', quoteCurrency: 'CHF' }),
  EURGBP: spec({ symbol: 'EURGBP', quoteCurrency: 'GBP' }),
  GBPJPY: spec({ symbol: 'GBPJPY', digits: 3, marginCurrency: 'GBP', quoteCurrency: 'JPY' }),
  XAUUSD: spec({ symbol: 'XAUUSD', digits: 2, contractSize: 100, profitMode: 1 }),
  GER40: spec({ symbol: 'GER40', digits: 1, contractSize: 1, quoteCurrency: 'EUR', profitMode: 1 }),
  XNGUSD: spec({ symbol: 'XNGUSD', digits: 3, tickSize: 0.001, tickValue: 10, profitMode: 2 }),
}
const MID: Record<string, number> = {
  EURUSD: 1.1,
  GBPUSD: 1.27,
  USDJPY: 151,
  USDCHF: 0.88,
  EURGBP: 0.86,
  GBPJPY: 192,
  XAUUSD: 2400,
  GER40: 18500,
  XNGUSD: 2.5,
}
const NAMES = Object.keys(SPECS)

/** Floating profit and margin (account currency) of holdings at raw quotes, as the engine prices them. */
function figuresAt(
  holdings: Holding[],
  quotes: Record<string, Quote>,
  spread: Omit<SpreadSettings, 'digits'>,
  currency: string,
  leverage = LEVERAGE,
) {
  const lookup = (s: string) => quotes[s] ?? null
  let profit = 0
  let margin = 0
  for (const h of holdings) {
    const s = SPECS[h.symbol]!
    const q = groupQuote(quotes[h.symbol]!, { ...spread, digits: s.digits })
    const buy = isBuy(h.cmd)
    const p = profitInAccount(s, h.cmd, h.volume, averagePrice(h), buy ? q.bid : q.ask, currency, lookup)
    const m = marginInAccount(s, h.volume, buy ? q.ask : q.bid, leverage, currency, lookup)
    if (p === null || m === null) return null
    profit += p
    margin += m
  }
  return { profit, margin }
}
const LEVERAGE = 100
const heldIn =
  (quotes: Record<string, Quote>, spread: Omit<SpreadSettings, 'digits'>) =>
  (h: Holding): HeldSymbol => {
    const s = SPECS[h.symbol]!
    const raw = quotes[h.symbol]!
    const q = groupQuote(raw, { ...spread, digits: s.digits })
    const buy = isBuy(h.cmd)
    return { spec: s, raw, close: buy ? q.bid : q.ask, open: buy ? q.ask : q.bid, marginDivider: 1 }
  }
const limits = (fall: number, equity = 1e12, marginRatio = 0) => ({
  equity,
  fall,
  marginRatio,
  leverage: LEVERAGE,
})

const quoteArb = (name: string) =>
  fc
    .record({
      move: fc.double({ min: -0.05, max: 0.05, noNaN: true }),
      spread: fc.integer({ min: 0, max: 40 }),
    })
    .map(({ move, spread }) => {
      const d = SPECS[name]!.digits
      const r = (x: number) => Math.round(x * 10 ** d) / 10 ** d
      const bid = r(MID[name]! * (1 + move))
      return { bid, ask: r(bid + spread * 10 ** -d), time: 0 }
    })
const quotesArb = fc.record(Object.fromEntries(NAMES.map((n) => [n, quoteArb(n)]))) as fc.Arbitrary<
  Record<string, Quote>
>
const holdingArb = fc
  .record({
    symbol: fc.constantFrom(...NAMES),
    cmd: fc.integer({ min: 0, max: 1 }),
    volume: fc.integer({ min: 1, max: 500 }),
    openMove: fc.double({ min: -0.03, max: 0.03, noNaN: true }),
  })
  .map(
    (h): Holding => ({
      symbol: h.symbol,
      cmd: h.cmd,
      volume: h.volume,
      volumePrice: h.volume * MID[h.symbol]! * (1 + h.openMove),
      commission: 0,
      storage: 0,
    }),
  )
const spreadArb = fc.record({
  spread: fc.constantFrom(0, 0, 5, 20),
  spreadBalance: fc.integer({ min: -3, max: 3 }),
  spreadDiff: fc.integer({ min: 0, max: 6 }),
})

/** A point inside a band: bid >= lo, ask <= hi, bid <= ask (t1, t2 in [0, 1] pick it). */
function inside(b: PriceBand, t1: number, t2: number): Quote {
  const bid = b.lo + (b.hi - b.lo) * t1
  return { bid, ask: bid + (b.hi - bid) * t2, time: 0 }
}

describe('risk bands: inside them the equity cannot fall by the budget', () => {
  test('random holdings, quotes, group spreads, limits and accounts in USD or EUR: every point inside every band', () => {
    let bounded = 0
    let withMargin = 0
    fc.assert(
      fc.property(
        fc.array(holdingArb, { minLength: 1, maxLength: 4 }),
        quotesArb,
        spreadArb,
        fc.constantFrom('USD', 'EUR'),
        fc.oneof(fc.double({ min: 0.5, max: 20_000, noNaN: true }), fc.constant(Number.POSITIVE_INFINITY)),
        // balance plus credit, and the margin-call level (0: none)
        fc.double({ min: 1_000, max: 200_000, noNaN: true }),
        fc.constantFrom(0, 0.5, 1, 1.5),
        fc.constantFrom(1, 5, 100),
        fc.array(
          fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true })),
          { minLength: 20, maxLength: 20 },
        ),
        (holdings, quotes, spread, currency, fall, funds, marginRatio, leverage, points) => {
          const now = figuresAt(holdings, quotes, spread, currency, leverage)!
          const equity = funds + now.profit
          const bands = riskBands(holdings, heldIn(quotes, spread), currency, (s) => quotes[s] ?? null, {
            ...limits(fall, equity, marginRatio),
            leverage,
          })
          // every held symbol has a band
          for (const h of holdings) expect(bands.some((b) => b.symbol === h.symbol)).toBe(true)
          if (bands.some((b) => b.lo === Number.POSITIVE_INFINITY)) return
          bounded++
          if (marginRatio > 0) withMargin++
          // the corners of the boxes and random points inside them
          const corners: [number, number][] = [
            [0, 0],
            [0, 1],
            [1, 1],
          ]
          for (const [t1, t2] of [...corners, ...points]) {
            const moved = { ...quotes }
            for (const [i, b] of bands.entries()) {
              const flip = i % 2 === 1
              moved[b.symbol] = inside(b, flip ? 1 - t1 : t1, t2)
              expect(leaves(b, moved[b.symbol]!.bid, moved[b.symbol]!.ask)).toBe(false)
            }
            const after = figuresAt(holdings, moved, spread, currency, leverage)!
            expect(now.profit - after.profit).toBeLessThan(fall)
            if (marginRatio > 0) expect(funds + after.profit).toBeGreaterThan(marginRatio * after.margin)
          }
        },
      ),
      { numRuns: 2000, seed: 20261123 },
    )
    // most runs give real bands (the property is not checked on the every-tick fallback alone)
    expect(bounded).toBeGreaterThan(700)
    expect(withMargin).toBeGreaterThan(300)
  })

  test('a worked example: 1 lot EURUSD bought at 1.1000, bid 1.1000 ask 1.1002, 400 USD of room', () => {
    // N = 100,000 per unit of price, rate 1: ρ solves 100000 x (ρ x 1.1002 + 0.00001) = 400, ρ = 0.0036265;
    // f = ((1+ρ) 1.1 - 1.1002) / ((1+ρ) 1.1 + 1.1002) = 0.0017223, lo = 1.1 (1 - f) = 1.098105
    const h: Holding = { symbol: 'EURUSD', cmd: 0, volume: 100, volumePrice: 110, commission: 0, storage: 0 }
    const raw = { bid: 1.1, ask: 1.1002, time: 0 }
    const held = () => ({ spec: SPECS.EURUSD!, raw, close: 1.1, open: 1.1002, marginDivider: 1 })
    const [b] = riskBands([h], held, 'USD', () => raw, limits(400))
    expect(b!.symbol).toBe('EURUSD')
    expect(b!.lo).toBeCloseTo(1.098105, 5)
    // at that bid the fall is only (1.1 - 1.098105) x 100,000 = 190 USD of the 400: the box is symmetric
    // in relative moves and counts the spread, so it is conservative, never generous
    expect(b!.lo).toBeGreaterThan(1.1 - 0.004)
    // with a margin-call level of 100% and 1,500 USD of equity (margin 1,100.2): the margin side is nearer
    const [m] = riskBands([h], held, 'USD', () => raw, { ...limits(400, 1500, 1) })
    expect(m!.lo).toBeGreaterThan(b!.lo)
  })

  test('room too small for the rounding, or no quote: every tick leaves the band', () => {
    const h: Holding = { symbol: 'EURUSD', cmd: 0, volume: 100, volumePrice: 110, commission: 0, storage: 0 }
    const raw = { bid: 1.1, ask: 1.1002, time: 0 }
    const held = () => ({ spec: SPECS.EURUSD!, raw, close: 1.1, open: 1.1002, marginDivider: 1 })
    const [tight] = riskBands([h], held, 'USD', () => raw, limits(0.5))
    expect(leaves(tight!, 1.1, 1.1002)).toBe(true)
    const [unquoted] = riskBands(
      [h],
      () => null,
      'USD',
      () => null,
      limits(400),
    )
    expect(leaves(unquoted!, 1.1, 1.1002)).toBe(true)
  })

  test('a cross reads its conversion symbol: EURGBP in a USD account has a band on GBPUSD too', () => {
    const h: Holding = { symbol: 'EURGBP', cmd: 1, volume: 10, volumePrice: 8.6, commission: 0, storage: 0 }
    const quotes: Record<string, Quote> = {
      EURGBP: { bid: 0.86, ask: 0.8602, time: 0 },
      GBPUSD: { bid: 1.27, ask: 1.2702, time: 0 },
    }
    const bands = riskBands(
      [h],
      () => ({ spec: SPECS.EURGBP!, raw: quotes.EURGBP!, close: 0.8602, open: 0.86, marginDivider: 1 }),
      'USD',
      (s) => quotes[s] ?? null,
      limits(300),
    )
    expect(bands.map((b) => b.symbol).sort()).toEqual(['EURGBP', 'GBPUSD'])
  })
})

describe('risk book', () => {
  test('the logins a tick finds are exactly those whose band it leaves (random bands, updates and ticks)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            login: fc.integer({ min: 1, max: 30 }),
            symbol: fc.constantFrom('A', 'B'),
            lo: fc.oneof(fc.double({ min: 0.9, max: 1, noNaN: true }), fc.constant(Number.POSITIVE_INFINITY)),
            width: fc.double({ min: 0, max: 0.2, noNaN: true }),
          }),
          { maxLength: 80 },
        ),
        fc.array(
          fc.tuple(
            fc.double({ min: 0.85, max: 1.25, noNaN: true }),
            fc.double({ min: 0, max: 0.01, noNaN: true }),
          ),
          {
            maxLength: 20,
          },
        ),
        (updates, ticks) => {
          const book = new RiskBook()
          const truth = new Map<number, PriceBand[]>()
          for (const [i, u] of updates.entries()) {
            if (i % 7 === 6) {
              book.delete(u.login)
              truth.delete(u.login)
              continue
            }
            const hi = u.lo === Number.POSITIVE_INFINITY ? Number.NEGATIVE_INFINITY : u.lo + u.width
            const bands = [{ symbol: u.symbol, lo: u.lo, hi }]
            book.set(u.login, bands)
            truth.set(u.login, bands)
          }
          expect(book.size).toBe(truth.size)
          for (const [bid, spread] of ticks)
            for (const symbol of ['A', 'B']) {
              const found = new Set<number>()
              book.leaving(symbol, bid, bid + spread, (l) => found.add(l))
              const expected = new Set(
                [...truth]
                  .filter(([, bs]) => bs.some((b) => b.symbol === symbol && leaves(b, bid, bid + spread)))
                  .map(([l]) => l),
              )
              expect([...found].sort()).toEqual([...expected].sort())
            }
        },
      ),
      { numRuns: 500, seed: 7 },
    )
  })

  test('the login a tick leaves furthest behind comes first; bands that hold on no tick before any', () => {
    const book = new RiskBook()
    book.set(1, [{ symbol: 'A', lo: 1.06, hi: 1.2 }])
    book.set(2, [{ symbol: 'A', lo: 1.09, hi: 1.11 }])
    book.set(3, [{ symbol: 'A', lo: 1.07, hi: 1.3 }])
    book.set(4, [{ symbol: 'A', lo: Number.POSITIVE_INFINITY, hi: Number.NEGATIVE_INFINITY }])
    book.set(5, [{ symbol: 'A', lo: 1.0, hi: 1.4 }])
    const down: number[] = []
    book.leaving('A', 1.05, 1.0502, (l) => down.push(l))
    expect(down).toEqual([4, 2, 3, 1, 4])
    const up: number[] = []
    book.leaving('A', 1.25, 1.2502, (l) => up.push(l))
    expect(up).toEqual([4, 4, 2, 1])
  })
})
