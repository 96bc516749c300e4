import { onChannel } from '../../kernel/bus/channel'
import { defineModule } from '../../kernel/module'
import { AccountsPort, AccountUpdated } from '../accounts'
import { MarketPort } from '../market'
import type { AlertsCtx } from './context'
import { ALERTS_CHANGED, AlertEngine } from './engine'
import { alertRoutes } from './routes'
import * as schema from './schema'

export { describeFiring, type FiredAlert } from './domain/describe'
export * from './events'

/** Price alerts evaluated on every tick (README.md of this folder). */
export const alertsModule = defineModule({
  name: 'alerts',
  tags: [{ name: 'Price alerts', description: 'Price alerts of an account login, evaluated on every tick' }],
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
    market.quotes.onEngineTicks((ticks, meta) => alerts.onTicks(ticks, { replay: meta.replay }))
    return {
      engine: {
        load: async () => {
          alerts.reset()
          await alerts.load()
        },
        unload: () => alerts.reset(),
        handlers: [onChannel(ALERTS_CHANGED, (entries) => alerts.onChangedEntries(entries))],
      },
      routes: alertRoutes({ ...ctx, alerts }),
      consumers: [
        {
          name: 'alerts.account-moved',
          topic: AccountUpdated,
          // the account's alerts watch its new group's price (its spread settings); a disabled account's
          // alerts rest (kept) until it is enabled again
          accepts: (event) => 'group' in event.payload.changes || 'enable' in event.payload.changes,
          after: (event) => alerts.accountMoved(event.payload.login),
        },
      ],
      jobs: [
        // changes reach the engine through the bus at once; this re-read is the safety net
        { name: 'alerts.sync', every: 2000, scope: 'engine', run: () => alerts.load() },
        // alerts past expires_at are disabled even when their symbol does not tick
        { name: 'alerts.expire', every: 2000, scope: 'engine', run: () => alerts.expireDue() },
      ],
    }
  },
})

// its routes, for the type of the whole API (src/main/app-type.ts: Eden treaty)
export { alertRoutes } from './routes'
