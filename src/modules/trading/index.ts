import { defineModule } from '../../kernel/module'
import { AccountsPort, ExposurePort } from '../accounts'
import { MarketPort } from '../market'
import type { TradingCtx } from './context'
import { TriggerEngine } from './engine'
import { accountExposure } from './exposure'
import { openCommitter } from './open-commit'
import { PositionReadModel } from './positions'
import { tradingRoutes } from './routes'
import * as schema from './schema'
import type { TradingServices } from './service'

export * from './events'

/** Orders, positions, triggers, stop-outs and swaps (README.md of this folder). */
export const tradingModule = defineModule({
  name: 'trading',
  tables: schema,
  setup(k, ports) {
    const accounts = ports.get(AccountsPort)
    const market = ports.get(MarketPort)
    const ctx: TradingCtx = {
      ...k,
      accounts,
      accountsRead: accounts.read,
      market,
      refdata: market.refdata,
      quotes: market.quotes,
      positions: new PositionReadModel(k.db, k.store, k.logger),
    }
    const engine = new TriggerEngine(ctx)
    const services: TradingServices = {
      ...ctx,
      engine,
      tradeOpens: openCommitter(ctx, (o, groupId) => engine.trackIn(o, groupId)),
    }
    // the accounts module prices open positions through this extension point (GET /account/me)
    ports.provide(ExposurePort, (account, group) => accountExposure(ctx, account, group))
    market.quotes.onTicks((ticks, meta) => engine.onTicks(ticks, { forceSweep: meta.explicit }))
    return {
      routes: tradingRoutes(services),
      jobs: [
        // other instances' order changes reach this instance's book (until the engine role, issue 18)
        { name: 'trading.resync', every: 2000, scope: 'instance', run: () => engine.resync() },
        // conditional on each position's rollover day, so a second run in a day charges nothing
        { name: 'trading.rollover', every: 60_000, scope: 'cluster', run: () => engine.rollover() },
      ],
      start: () => engine.resync(),
    }
  },
})
export { CMD_NAMES } from './domain/checks'
