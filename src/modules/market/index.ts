import { Elysia } from 'elysia'
import { onChannel } from '../../kernel/bus/channel'
import { defineModule, definePort } from '../../kernel/module'
import { AccountsPort, CurrencyUsePort } from '../accounts'
import { marketAdminRoutes } from './admin-routes'
import { CandleStore } from './candle-store'
import { MarketEnv, marketConfig } from './config'
import type { MarketCtx, SymbolHolders } from './context'
import { currencyUse } from './currency-use'
import { seedDemoMarket } from './demo'
import type { Quote, QuoteLookup } from './domain/conversion'
import { checkOperatorBrands } from './operator'
import { groupPrice, quoteLookup, type TradeLookup, tradeLookup } from './prices'
import { QuoteHub, TICKS } from './quotes'
import { type GroupSymbol, ReferenceData } from './reference'
import { marketRoutes } from './routes'
import * as schema from './schema'
import { bumpWatchVersion } from './service'
import { QuoteSimulator } from './simulator-source'
import { watchConsumer } from './watch-defaults'

export type { SymbolHolders } from './context'
export {
  conversionRate,
  type DaySessions,
  isTradingOpen,
  type Quote,
  type QuoteLookup,
  quoteAgeOver,
} from './pure'
export type { Tick, TickListener } from './quotes'
export {
  type GroupSymbol,
  type GroupSymbols,
  pricedForGroup,
  quoteForGroup,
  type SymbolInfo,
  valuedForGroup,
} from './reference'

/** What other modules ask of market. */
export interface MarketApi {
  /**
   * Symbols, group securities and overrides, in memory: every instance sees a change within a second
   * while Redis answers, within 30 s in any case (shared-version.ts).
   */
  refdata: ReferenceData
  /** The latest quotes, and the tick stream (`quotes.onTicks`). */
  quotes: QuoteHub
  /** The group's quote of a symbol now, or null without a price. */
  groupPrice(gs: GroupSymbol): Promise<Quote | null>
  /** Every symbol's latest quote, looked up without awaiting (cross rates for conversions). */
  quoteLookup(): Promise<QuoteLookup>
  /**
   * The cross rates of a fill: a pair whose market is open and whose feed stopped (older than its
   * `max_quote_age`) is no rate, and is named by `staleLegs` (the trade answers 503 PRICE_STALE).
   */
  tradeLookup(): Promise<TradeLookup>
  /** Why this instance's prices may be stale now (null when current): no fill may use them. */
  staleness(): string | null
  /** Whether the quote simulator makes the prices (QUOTE_SIMULATOR). */
  simulated: boolean
}

export const MarketPort = definePort<MarketApi>('market')

/**
 * Extension point: who holds open positions or pending orders (the trading module provides it): the groups
 * of a symbol's holders (a symbol is not moved to a security group one of them has no settings for, nor
 * given a currency one of them cannot convert), and the symbols a group holds of a security group (it is
 * not hidden or stopped from trading for the group while any are).
 */
export const SymbolHoldersPort = definePort<SymbolHolders>('market.symbol-holders')

/** Symbols, quotes, candles, market watch lists and reference data (README.md of this folder). */
export const marketModule = defineModule({
  name: 'market',
  tags: [
    { name: 'Market', description: 'Market watch, symbols, quotes (SSE stream and ingest)' },
    {
      name: 'Reference data',
      description:
        'Staff maintenance of symbols (deployment-wide), group security settings and symbol overrides',
    },
  ],
  env: MarketEnv,
  tables: schema,
  setup(k, ports) {
    const settings = marketConfig(k.config)
    const refdata = new ReferenceData(k.db, k.store, k.clock, k.edge)
    const candles = new CandleStore(k.db)
    const quotes = new QuoteHub(
      k.db,
      k.store,
      k.bus,
      refdata,
      candles,
      k.clock,
      k.logger,
      settings.tickFilter,
      k.edge,
    )
    const ctx: MarketCtx = {
      ...k,
      accounts: ports.get(AccountsPort),
      settings,
      refdata,
      candles,
      quotes,
      holders: {
        groups: (q, symbol) =>
          ports.has(SymbolHoldersPort) ? ports.get(SymbolHoldersPort).groups(q, symbol) : Promise.resolve([]),
        inGroup: (q, brandId, groupId, symbols) =>
          ports.has(SymbolHoldersPort)
            ? ports.get(SymbolHoldersPort).inGroup(q, brandId, groupId, symbols)
            : Promise.resolve([]),
      },
    }
    // When an hourly candle closes, cached watch lists expire (their key holds the candle version).
    candles.onBarClosed((_symbol, _bar, hourClosed) => {
      if (hourClosed) void bumpWatchVersion(ctx)
    })
    ports.provide(CurrencyUsePort, (currency) => currencyUse(refdata, currency))
    ports.provide(MarketPort, {
      refdata,
      quotes,
      groupPrice: (gs) => groupPrice(quotes, gs),
      quoteLookup: () => quoteLookup(quotes),
      tradeLookup: () => tradeLookup(quotes, refdata, k.clock),
      staleness: () => quotes.staleness(),
      simulated: settings.simulator,
    })
    const simulator = new QuoteSimulator(quotes, refdata, k.clock, settings.seed, async (s) => {
      // a new engine continues the path where the last one left it
      const q = quotes.peek(s)
      return q ? (q.bid + q.ask) / 2 : ((await candles.last(s, 'M1', 1))[0]?.close ?? null)
    })
    return {
      // the engine aggregates candles, writes the shared quotes and runs its tick listeners
      engine: { handlers: [onChannel(TICKS, (entries, at) => quotes.onEngineEntries(entries, at))] },
      routes: new Elysia({ name: 'market', seed: k.instanceId })
        .use(marketRoutes(ctx))
        .use(marketAdminRoutes(ctx)),
      consumers: [watchConsumer()],
      jobs: [
        ...(settings.simulator
          ? [
              {
                name: 'market.simulator',
                every: settings.tickMs,
                // one price path: only the engine simulates
                scope: 'engine' as const,
                run: () => simulator.tick(),
              },
            ]
          : []),
        {
          // the edge's stale-price guard (quotes.ts staleness): the engine says it writes the shared quotes
          name: 'market.quotes-heartbeat',
          every: 1000,
          scope: 'engine' as const,
          run: () => quotes.heartbeat(),
        },
        {
          name: 'market.quote-snapshot',
          every: 5000,
          scope: 'engine' as const,
          run: () => quotes.saveLatest(),
        },
      ],
      async start() {
        await quotes.loadSaved()
        quotes.start()
        await checkOperatorBrands(ctx)
      },
      async stop() {
        await quotes.stop()
        if (k.engine.isLeader) {
          await candles.flush()
          await quotes.saveLatest()
        }
      },
      seedDemo: () => seedDemoMarket(ctx),
    }
  },
})

export { marketAdminRoutes } from './admin-routes'
// its routes, for the type of the whole API (src/main/app-type.ts: Eden treaty)
export { marketRoutes } from './routes'
