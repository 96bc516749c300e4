import { Elysia } from 'elysia'
import { defineModule } from '../../kernel/module'
import { AccountsPort } from '../accounts'
import { KycPort } from '../kyc'
import { expireSessions, reconcile, retryCredits } from './backoffice'
import { CashierEnv, cashierConfig, sandboxAllowed } from './config'
import type { CashierCtx } from './context'
import { seedCashierDemo } from './demo'
import { cashierManagerRoutes } from './manager-routes'
import { checkoutProvider } from './providers/checkout'
import type { PaymentProvider } from './providers/port'
import { sandboxProvider } from './providers/sandbox'
import { wireProvider } from './providers/wire'
import { cashierRoutes } from './routes'
import { SandboxGateway, sandboxRoutes } from './sandbox-page'
import * as schema from './schema'
import { drainInbox } from './webhooks'

export * from './events'

/** Deposits, withdrawals, provider modules and their webhooks (README.md of this folder). */
export const cashierModule = defineModule({
  name: 'cashier',
  tags: [
    { name: 'Cashier', description: 'Deposits, withdrawals, payment methods, provider webhooks (spec 4.11)' },
    {
      name: 'Cashier back office',
      description: 'Back office: transactions, reviews, wires, payouts, refunds',
    },
  ],
  env: CashierEnv,
  tables: schema,
  setup(k, ports) {
    const ctx: CashierCtx = {
      ...k,
      accounts: ports.get(AccountsPort),
      kyc: ports.get(KycPort),
      providers: new Map<string, PaymentProvider>(),
      settings: cashierConfig(k.config),
    }
    // the simulated providers take no money (their payment page is this app's own): loaded outside
    // production, or where CASHIER_SANDBOX says the deployment is a sandbox (config.ts)
    const gateway = sandboxAllowed(k.config) ? new SandboxGateway(ctx) : null
    for (const p of [
      ...(gateway ? [sandboxProvider(gateway), checkoutProvider(gateway)] : []),
      wireProvider(ctx.settings.wireBank),
    ])
      ctx.providers.set(p.id, p)
    const routes = new Elysia({ name: 'cashier', seed: k.instanceId })
      .use(cashierRoutes(ctx))
      .use(cashierManagerRoutes(ctx))
    return {
      routes: gateway ? routes.use(sandboxRoutes(ctx, gateway)) : routes,
      jobs: [
        // webhooks stored but not applied (a crash between the inbox write and the credit, a failure)
        { name: 'cashier.inbox', every: 1000, scope: 'cluster', run: () => drainInbox(ctx) },
        { name: 'cashier.credit-retry', every: 30_000, scope: 'cluster', run: () => retryCredits({ ctx }) },
        { name: 'cashier.reconcile', every: 60_000, scope: 'cluster', run: () => reconcile({ ctx }) },
        // payment sessions left unpaid past their age end (after asking the provider)
        { name: 'cashier.expire', every: 300_000, scope: 'cluster', run: () => expireSessions({ ctx }) },
        // the sandbox provider's own retries of webhooks the merchant did not acknowledge
        ...(gateway
          ? [
              {
                name: 'cashier.sandbox-deliver',
                every: 2000,
                scope: 'cluster' as const,
                run: () => gateway.redeliver(),
              },
            ]
          : []),
      ],
      seedDemo: () => seedCashierDemo(ctx),
    }
  },
})

// its routes, for the type of the whole API (src/main/app-type.ts: Eden treaty)
export { cashierManagerRoutes } from './manager-routes'
export { cashierRoutes } from './routes'
export { sandboxRoutes } from './sandbox-page'
