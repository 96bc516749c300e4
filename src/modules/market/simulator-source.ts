import type { Clock } from '../../kernel/clock'
import { gbmStep, normal, rng, symbolSeed } from './domain/simulator'
import type { QuoteHub } from './quotes'
import type { ReferenceData, SymbolInfo } from './reference'

interface PathState {
  price: number
  z: () => number
}

/** Mid price -> raw two-sided quote with the symbol's spread (at least one point). */
function simulatedQuote(info: SymbolInfo, mid: number) {
  const pt = 10 ** -info.digits
  const spread = Math.max(1, info.spread || info.simSpread) * pt
  const f = 10 ** info.digits
  const bid = Math.round((mid - spread / 2) * f) / f
  return { bid, ask: Math.round((bid + spread) * f) / f }
}

/**
 * Quote source: a seeded geometric Brownian motion per symbol (the symbol's annual volatility), so the
 * same seed replays the same prices. It continues from the last stored close. It runs as a cluster job
 * (one instance at a time, QUOTE_SIMULATOR); a broker with a real feed turns it off and posts to the ingest route.
 */
export class QuoteSimulator {
  private readonly paths = new Map<string, PathState>()
  private lastMs = 0

  constructor(
    private readonly hub: QuoteHub,
    private readonly refdata: ReferenceData,
    private readonly clock: Clock,
    private readonly seed: number,
    private readonly lastClose: (symbol: string) => Promise<number | null>,
  ) {}

  /** One step of every symbol to `nowMs`; returns the ticks (not yet applied). */
  async step(nowMs: number) {
    await this.refdata.fresh()
    const dt = this.lastMs ? Math.max(1, (nowMs - this.lastMs) / 1000) : 1
    this.lastMs = nowMs
    const ticks = []
    for (const info of this.refdata.all()) {
      let p = this.paths.get(info.symbol)
      if (!p) {
        p = {
          price: (await this.lastClose(info.symbol)) ?? info.simPrice,
          z: normal(rng(symbolSeed(this.seed ^ Math.floor(nowMs / 1000), info.symbol))),
        }
        this.paths.set(info.symbol, p)
      }
      p.price = gbmStep(p.price, info.simVolatility, dt, p.z())
      ticks.push({ symbol: info.symbol, ...simulatedQuote(info, p.price), time: nowMs })
    }
    return ticks
  }

  /** Steps every symbol to now and applies the ticks (the `market.simulator` job, one instance at a time). */
  async tick() {
    await this.hub.apply(await this.step(this.clock.now()))
  }
}
