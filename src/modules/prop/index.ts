import { Elysia } from 'elysia'
import { onChannel } from '../../kernel/bus/channel'
import { defineModule, definePort } from '../../kernel/module'
import { AccountsPort, GroupNamesPort, ManagedFundsPort } from '../accounts'
import { TradingPort } from '../trading'
import type { PropCtx, PurchaseSteps } from './context'
import { seedPropDemo } from './demo'
import { evaluateAll } from './evaluator'
import { propGroupNames } from './group-names'
import { PHASES_CHANGED, PropWatch } from './live'
import { propFunds } from './managed-funds'
import { recoverPurchases } from './purchase-rollback'
import { propManagerRoutes, propRoutes } from './routes'
import * as schema from './schema'
import { defaultSteps } from './steps'

export * from './events'

/** What other modules (and tests) reach of prop. */
export interface PropApi {
  /** The steps of a purchase; a test replaces one to make it fail (4.19). */
  steps: PurchaseSteps
  /** The engine's watch of active phase accounts. */
  watch: PropWatch
}

export const PropPort = definePort<PropApi>('prop')

/** Prop challenges: programs, purchases, phases evaluated on ticks and daily (README.md of this folder). */
export const propModule = defineModule({
  name: 'prop',
  tags: [
    {
      name: 'Prop',
      description: 'Prop challenges: programs, purchase, challenges, metrics, breaches (spec 4.13-4.15)',
    },
    { name: 'Prop back office', description: 'Back office: prop programs' },
  ],
  tables: schema,
  setup(k, ports) {
    const accounts = ports.get(AccountsPort)
    const trading = ports.get(TradingPort)
    const ctx = { ...k, accounts } as PropCtx
    ctx.steps = defaultSteps(ctx, accounts)
    // a failed phase is watched for its close-out while its account holds positions
    const watch = new PropWatch(ctx, async (logins) => {
      const open = await trading.recentPositionsOf(logins, Number.MAX_SAFE_INTEGER)
      return new Set([...open].filter(([, ps]) => ps.some((p) => p.closeTime === 0)).map(([login]) => login))
    })
    ports.provide(PropPort, { steps: ctx.steps, watch })
    ports.provide(ManagedFundsPort, propFunds(ctx))
    // a group its programs or running challenges name is not renamed under them (409 GROUP_IN_USE)
    ports.provide(GroupNamesPort, propGroupNames)
    trading.watchRisk(watch)
    return {
      engine: {
        load: () => watch.load(),
        unload: () => watch.reset(),
        handlers: [
          onChannel(PHASES_CHANGED, async (entries) => {
            await watch.reload(entries.flatMap((e) => e.data))
          }),
        ],
      },
      routes: new Elysia({ name: 'prop', seed: k.instanceId })
        .use(propRoutes(ctx))
        .use(propManagerRoutes(ctx)),
      jobs: [
        // the day's work: snapshots, trading days, time limits, targets (also POST /cron/prop.evaluate)
        { name: 'prop.evaluate', every: 60_000, scope: 'cluster', run: () => evaluateAll(ctx, trading) },
        // the engine closes out every phase failed lately with positions left (a PHASES_CHANGED lost)
        { name: 'prop.closeouts', every: 60_000, scope: 'engine', run: () => watch.closeOutFailed() },
        // ends a purchase a crash left between steps, as if its next step had failed (4.19's rollbacks)
        { name: 'prop.purchases.recover', every: 60_000, scope: 'cluster', run: () => recoverPurchases(ctx) },
      ],
      seedDemo: () => seedPropDemo(ctx),
    }
  },
})

// its routes, for the type of the whole API (src/main/app-type.ts: Eden treaty)
export { propManagerRoutes, propRoutes } from './routes'
