import { Elysia } from 'elysia'
import pLimit from 'p-limit'
import { defineModule } from '../../kernel/module'
import { AccountsPort } from '../accounts'
import { MarketPort } from '../market'
import { ManualTradeGuardPort, TradingPort } from '../trading'
import type { CopyCtx } from './context'
import { copyConsumers } from './copier/consumers'
import { runEquityStop } from './copier/equity-stop'
import { runEquityFees } from './copier/fees'
import { manualGuard } from './copier/manual-guard'
import { audit, reconcile } from './copier/reconcile'
import { accrueSubscriptionFees, settleRewards } from './copier/rewards'
import { seedCopyDemo, seedDemoHistory } from './demo'
import { copyRoutes, copyStaffRoutes } from './routes'
import * as schema from './schema'

/** Trades the copier runs at once: enough to fill a group commit, few enough for a remote database. */
const COPY_CONCURRENCY = 500

/** Copy trading: masters, followers, subscriptions, the copier and rewards (README.md of this folder). */
export const copytradeModule = defineModule({
  name: 'copytrade',
  tags: [
    {
      name: 'Copy trading',
      description: 'Masters, followers, subscriptions, the marketplace, copies and rewards (spec 4.12)',
    },
    { name: 'Copy trading back office', description: 'Staff: list and disable masters and subscriptions' },
  ],
  tables: schema,
  setup(k, ports) {
    const market = ports.get(MarketPort)
    const ctx: CopyCtx = {
      ...k,
      accounts: ports.get(AccountsPort),
      market,
      trading: ports.get(TradingPort),
      forgetManual: async () => {},
      limit: k.edge ? (fn) => fn() : pLimit(COPY_CONCURRENCY),
    }
    const manual = manualGuard(ctx)
    ctx.forgetManual = manual.forget
    ports.provide(ManualTradeGuardPort, manual.guard)
    return {
      routes: new Elysia({ name: 'copytrade', seed: k.instanceId })
        .use(copyRoutes(ctx))
        .use(copyStaffRoutes(ctx)),
      consumers: copyConsumers(ctx),
      jobs: [
        // the copier's safety net: missed opens and closes, links against trading's positions
        { name: 'copytrade.reconcile', every: 5_000, scope: 'cluster', run: () => reconcile(ctx) },
        // open links against trading's positions (a close event missed, a part closed meanwhile)
        { name: 'copytrade.audit', every: 30_000, scope: 'cluster', run: () => audit(ctx) },
        // equity stops: a copy that lost its limit closes and pauses
        { name: 'copytrade.equity-stops', every: 5_000, scope: 'cluster', run: () => runEquityStop(ctx) },
        // the demo master's history once the simulator has prices (the embedded default's demo data only)
        ...(k.config.seedDemo && market.simulated && k.config.env === 'development'
          ? [
              {
                name: 'copytrade.demo-history',
                every: 30_000,
                scope: 'cluster' as const,
                run: () => seedDemoHistory(ctx),
              },
            ]
          : []),
        // subscription fees that came due, and accruals a settlement left pending
        {
          name: 'copytrade.settle',
          every: 60_000,
          scope: 'cluster',
          run: async ({ now }) => {
            await accrueSubscriptionFees(ctx, now)
            await runEquityFees(ctx, now)
            await settleRewards(ctx)
          },
        },
      ],
      seedDemo: () => seedCopyDemo(ctx),
    }
  },
})

// its routes, for the type of the whole API (src/main/app-type.ts: Eden treaty)
export { copyRoutes, copyStaffRoutes } from './routes'
