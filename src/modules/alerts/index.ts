import { defineModule } from '../../kernel/module'
import { AccountsPort } from '../accounts'
import { MarketPort } from '../market'
import type { AlertsCtx } from './context'
import { AlertEngine } from './engine'
import { alertRoutes } from './routes'
import * as schema from './schema'

export { describeFiring, type FiredAlert } from './domain/describe'
export * from './events'

/** Price alerts evaluated on every tick (README.md of this folder). */
export const alertsModule = defineModule({
  name: 'alerts',
  tables: schema,
  setup(k, ports) {
    const market = ports.get(MarketPort)
    const ctx: AlertsCtx = {
      ...k,
      accounts: ports.get(AccountsPort),
      refdata: market.refdata,
      quotes: market.quotes,
    }
    const alerts = new AlertEngine(ctx)
    market.quotes.onTicks((ticks) => alerts.onTicks(ticks))
    return {
      routes: alertRoutes({ ...ctx, alerts }),
      jobs: [
        // every instance evaluates the ticks it applies, so it keeps every alert in its book
        { name: 'alerts.sync', every: 2000, scope: 'instance', run: () => alerts.load() },
        // alerts past expires_at are disabled even when their symbol does not tick
        { name: 'alerts.expire', every: 2000, scope: 'cluster', run: () => alerts.expireDue() },
      ],
      start: () => alerts.load(),
    }
  },
})
