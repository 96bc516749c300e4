import { Elysia } from 'elysia'
import { defineModule, definePort } from '../../kernel/module'
import { AccountsPort } from '../accounts'
import { marketAdminRoutes } from './admin-routes'
import { CandleStore } from './candle-store'
import type { MarketCtx } from './context'
import { seedDemoMarket } from './demo'
import type { Quote, QuoteLookup } from './domain/conversion'
import { groupPrice, quoteLookup } from './prices'
import { QuoteHub } from './quotes'
import { type GroupSymbol, ReferenceData } from './reference'
import { marketRoutes } from './routes'
import * as schema from './schema'
import { bumpWatchVersion } from './service'
import { QuoteSimulator } from './simulator-source'
import { watchConsumer } from './watch-defaults'

export { conversionRate, type Quote, type QuoteLookup } from './domain/conversion'
export { isTradingOpen } from './domain/sessions'
export type { Tick, TickListener } from './quotes'
export { type GroupSymbol, type GroupSymbols, quoteForGroup, type SymbolInfo } from './reference'

/** What other modules ask of market. */
export interface MarketApi {
  /** Symbols, group securities and overrides, in memory (every instance sees a change within a second). */
  refdata: ReferenceData
  /** The latest quotes, and the tick stream (`quotes.onTicks`). */
  quotes: QuoteHub
  /** The group's quote of a symbol now, or null without a price. */
  groupPrice(gs: GroupSymbol): Promise<Quote | null>
  /** Every symbol's latest quote, looked up without awaiting (cross rates for conversions). */
  quoteLookup(): Promise<QuoteLookup>
}

export const MarketPort = definePort<MarketApi>('market')

/** Symbols, quotes, candles, market watch lists and reference data (README.md of this folder). */
export const marketModule = defineModule({
  name: 'market',
  tables: schema,
  setup(k, ports) {
    const refdata = new ReferenceData(k.db, k.store, k.clock)
    const candles = new CandleStore(k.db)
    const quotes = new QuoteHub(k.db, k.store, refdata, candles, k.clock, k.logger)
    const ctx: MarketCtx = { ...k, accounts: ports.get(AccountsPort), refdata, candles, quotes }
    // When an hourly candle closes, cached watch lists expire (their key holds the candle version).
    candles.onBarClosed((_symbol, _bar, hourClosed) => {
      if (hourClosed) void bumpWatchVersion(ctx)
    })
    ports.provide(MarketPort, {
      refdata,
      quotes,
      groupPrice: (gs) => groupPrice(quotes, gs),
      quoteLookup: () => quoteLookup(quotes),
    })
    const simulator = new QuoteSimulator(
      quotes,
      refdata,
      k.clock,
      k.config.quotes.seed,
      async (s) => (await candles.last(s, 'M1', 1))[0]?.close ?? null,
    )
    return {
      routes: new Elysia({ name: 'market', seed: k.instanceId })
        .use(marketRoutes(ctx))
        .use(marketAdminRoutes(ctx)),
      consumers: [watchConsumer()],
      jobs: [
        ...(k.config.quotes.simulator
          ? [
              {
                name: 'market.simulator',
                every: k.config.quotes.tickMs,
                scope: 'cluster' as const,
                run: () => simulator.tick(),
              },
            ]
          : []),
        {
          name: 'market.quote-snapshot',
          every: 5000,
          scope: 'instance' as const,
          run: () => quotes.saveLatest(),
        },
      ],
      start: () => quotes.loadSaved(),
      async stop() {
        await candles.flush()
        await quotes.saveLatest()
      },
      seedDemo: () => seedDemoMarket(ctx),
    }
  },
})
