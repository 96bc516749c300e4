import { conversionRate, type Quote, type QuoteLookup } from '../../market/pure'
import { marginInAccount, rawProfit, type SymbolSpec } from './formulas'
import { averagePrice, type Holding } from './holdings'

/**
 * Price bands within which an account cannot reach a limit (pure).
 *
 * The engine must notice when an account with positions reaches its stop-out or margin-call level, or a
 * limit of a watcher (a prop phase's loss limits and warnings). Re-pricing every account on every tick of
 * its symbols costs in proportion to the number of accounts; instead, each account gets a band per symbol
 * its figures read (held symbols and the ones the conversion rates read) and is looked at again only when
 * a tick leaves one of them.
 *
 * The band is a box on the raw quote of each symbol: a tick with bid >= lo and ask <= hi is inside. For
 * the reference quote (B, A) and a relative move budget ρ, f = ((1+ρ)B - A) / ((1+ρ)B + A) and
 * lo = B(1-f), hi = A(1+f). Inside every box, any price p' (bid, ask, mid) lies in [B(1-f), A(1+f)], so
 * p'/p and p/p' are at most (1+ρ) for the reference price p in [B, A], and the mid moves by at most ρA.
 * - A holding's profit in the account currency is s·(c - o)·N·rate (N the money per unit of price, s the
 *   direction), with c the group's close price (the raw mid or side plus constants, rounded to a point)
 *   and rate a product of k quotes or their inverses, so
 *   |Δprofit| <= N·rate·((ρA + point)·(1+ρ)^k + |c - o|·((1+ρ)^k - 1)).
 * - Its margin is at most proportional to its open price times a conversion rate of k' quotes, so
 *   margin' <= margin·(1 + ρ + point/price)^(1+k').
 * ρ is the largest value (at most 1) for which the worst fall of the equity stays within the watcher's
 * headroom, and the worst equity stays above the margin-call ratio of the worst margin. A budget too small
 * for the rounding alone, a missing quote, or a price at or below zero gives bands that every tick leaves.
 */
export interface PriceBand {
  symbol: string
  /** A tick with a bid below `lo` or an ask above `hi` leaves the band. */
  lo: number
  hi: number
}

/** What a holding's sensitivity to the quotes is made of (see the bounds above). */
interface Exposed {
  /** Money per unit of the close price in the profit currency (contract size or tick value per tick size, by lots). */
  perUnit: number
  /** Conversion rate from the profit currency into the account currency, now. */
  rate: number
  /** Quotes the rate is a product of (0 when the profit currency is the account currency). */
  factors: number
  /** Raw ask of the held symbol now. */
  ask: number
  point: number
  /** |close price now - average open price|. */
  distance: number
  /** Margin now in the account currency, the quotes its conversion reads, and point / open price. */
  margin: number
  marginFactors: number
  marginPoint: number
}

/** A held symbol as the account's group sees it now. */
export interface HeldSymbol {
  spec: SymbolSpec
  raw: Quote
  /** The group's price the holding would close at now (bid for a buy, ask for a sell) and opens at (the other). */
  close: number
  open: number
  marginDivider: number
}

/** What the account must not reach while its quotes stay inside the bands. */
export interface BandLimits {
  /** Equity now (account currency). */
  equity: number
  /** Equity that may be lost before a watcher must look again (Infinity: no watcher). */
  fall: number
  /** The equity must stay above this share of the margin (the margin-call level / 100); 0 for none. */
  marginRatio: number
  leverage: number
}

const MAX_MOVE = 1

/** Largest equity fall (account currency) when every quote the holdings read moves by a relative ρ at most. */
function worstFall(xs: readonly Exposed[], rho: number): number {
  let sum = 0
  for (const x of xs) {
    const g = (1 + rho) ** x.factors
    sum += x.perUnit * x.rate * ((rho * x.ask + x.point) * g + x.distance * (g - 1))
  }
  return sum
}

/** Largest margin (account currency) under the same moves. */
function worstMargin(xs: readonly Exposed[], rho: number): number {
  let sum = 0
  for (const x of xs) sum += x.margin * (1 + rho + x.marginPoint) ** (1 + x.marginFactors)
  return sum
}

/** The largest ρ in [0, 1] with `fits(ρ)` (decreasing in ρ); null when not even ρ = 0 fits. */
function largestMove(fits: (rho: number) => boolean): number | null {
  if (!fits(0)) return null
  if (fits(MAX_MOVE)) return MAX_MOVE
  let lo = 0
  let hi = MAX_MOVE
  for (let i = 0; i < 40; i++) {
    const mid = (lo + hi) / 2
    if (fits(mid)) lo = mid
    else hi = mid
  }
  return lo
}

/** The box of raw quotes around `q` whose prices stay within a relative ρ of it; null when the spread alone exceeds it. */
function bandAround(q: Quote, rho: number): { lo: number; hi: number } | null {
  if (!(q.bid > 0) || !(q.ask >= q.bid)) return null
  const f = ((1 + rho) * q.bid - q.ask) / ((1 + rho) * q.bid + q.ask)
  return f > 0 ? { lo: q.bid * (1 - f), hi: q.ask * (1 + f) } : null
}

/** A band every tick of the symbol leaves. */
export const everyTick = (symbol: string): PriceBand => ({
  symbol,
  lo: Number.POSITIVE_INFINITY,
  hi: Number.NEGATIVE_INFINITY,
})

/**
 * The bands of an account's holdings: one per symbol its figures read. `held` gives each holding's symbol
 * as the group sees it now (null when it cannot be priced). No limits: bands every tick leaves (the
 * account is looked at on every tick of what it reads).
 */
export function riskBands(
  holdings: readonly Holding[],
  held: (h: Holding) => HeldSymbol | null,
  currency: string,
  lookup: QuoteLookup,
  limits: BandLimits | null,
): PriceBand[] {
  const read = new Map<string, Quote | null>()
  /** A lookup that remembers the quotes it found, and counts them. */
  const reading = () => {
    const found = { n: 0 }
    const f: QuoteLookup = (name) => {
      const q = lookup(name)
      if (q) {
        read.set(name, q)
        found.n++
      }
      return q
    }
    return { f, found }
  }
  const xs: Exposed[] = []
  let priced = true
  for (const h of holdings) {
    if (h.volume <= 0) continue
    read.set(h.symbol, lookup(h.symbol))
    const s = held(h)
    if (!s) {
      priced = false
      continue
    }
    const profit = reading()
    const rate = conversionRate(s.spec.quoteCurrency, currency, profit.f)
    const margin = reading()
    const leverage = limits?.leverage ?? 1
    const m = marginInAccount(s.spec, h.volume, s.open, leverage, currency, margin.f, s.marginDivider)
    if (rate === null || m === null || !(s.open > 0)) {
      priced = false
      continue
    }
    xs.push({
      perUnit: Math.abs(rawProfit(s.spec, 0, h.volume, 0, 1)),
      rate,
      factors: profit.found.n,
      ask: s.raw.ask,
      point: 10 ** -s.spec.digits,
      distance: Math.abs(s.close - averagePrice(h)),
      margin: m,
      marginFactors: margin.found.n,
      marginPoint: 10 ** -s.spec.digits / s.open,
    })
  }
  const rho =
    priced && limits
      ? largestMove(
          (r) =>
            worstFall(xs, r) < limits.fall &&
            (limits.marginRatio <= 0 ||
              limits.equity - worstFall(xs, r) > limits.marginRatio * worstMargin(xs, r)),
        )
      : null
  return [...read].map(([symbol, q]) => {
    const band = rho === null || !q ? null : bandAround(q, rho)
    return band ? { symbol, ...band } : everyTick(symbol)
  })
}

/** Whether a tick leaves a band (the definition the engine's book must agree with). */
export const leaves = (b: { lo: number; hi: number }, bid: number, ask: number) => bid < b.lo || ask > b.hi
