import { Elysia } from 'elysia'
import { defineModule } from '../../kernel/module'
import { AccountsPort } from '../accounts'
import { cabinetRoutes } from './cabinet/routes'
import { cabinetShell } from './cabinet/shell'
import { AffiliateTokens } from './cabinet/tokens'
import { commissionStaffRoutes } from './commission-routes'
import { AffiliateEnv, affiliateConfig } from './config'
import { affiliateConsumers } from './consumers'
import type { AffiliateCtx } from './context'
import { seedAffiliateDemo } from './demo'
import { integrationRoutes } from './integration/routes'
import { AffiliateClicksPort, AffiliateCodesPort, CabinetPort, CustomerAttributionPort } from './ports'
import { affiliateReportRoutes } from './report-routes'
import { affiliateStaffRoutes } from './routes'
import * as schema from './schema'
import { repairMixedCorrections } from './service/correction-repair'
import { AffiliateDirectory } from './service/directory'
import { repairFirstDeposits } from './service/first-deposit-repair'
import { closeDuePeriods } from './service/periods'
import { sendDuePostbacks } from './service/postbacks'
import { PARTNER_SITE } from './site'

export { DEMO_AFFILIATES } from './demo'
export * from './events'
export * from './ports'

/** Affiliates, brand access, tracking links, the conversion ledger and postbacks (README.md of this folder). */
export const affiliateModule = defineModule({
  name: 'affiliate',
  tags: [
    {
      name: 'Affiliates back office',
      description:
        'Staff: affiliates, their brand access and postbacks, tracking links, settings, conversions, tokens',
    },
    {
      name: 'Affiliate cabinet',
      description:
        "The partner cabinet on each brand's affiliate_host: sign-in, funnel, links, conversions (spec 4.17)",
    },
    {
      name: 'Affiliate commissions',
      description:
        'Staff: commission plans (CPA, qualified CPA, RevShare, tiered, hybrid, sub-affiliate), their assignment and preview, periods, statements and their approval and payment',
    },
    {
      name: 'Affiliate integration API',
      description:
        'Referred customers and their transactions for a partner system, by integration token (spec 4.18)',
    },
  ],
  securitySchemes: {
    AffiliateSession: {
      type: 'apiKey',
      in: 'cookie',
      name: 'tcs_aff',
      description:
        "The affiliate cabinet's session from POST /api/affiliate/login (its own audience: no other token is accepted).",
    },
    AffiliateToken: {
      type: 'apiKey',
      in: 'header',
      name: 'Authorization',
      description:
        'An affiliate integration token issued by staff, sent bare (no Bearer scheme), with the scope the route names.',
    },
  },
  env: AffiliateEnv,
  sites: [PARTNER_SITE],
  tables: schema,
  setup(k, ports) {
    const attributions = ports.lazy(CustomerAttributionPort)
    const ctx: AffiliateCtx = {
      ...k,
      accounts: ports.get(AccountsPort),
      attributions: () => (ports.has(CustomerAttributionPort) ? attributions() : null),
      fetch: globalThis.fetch.bind(globalThis),
      ...affiliateConfig(k.config),
    }
    const dir = ports.provide(AffiliateCodesPort, new AffiliateDirectory(ctx))
    ports.provide(CabinetPort, { site: PARTNER_SITE.name, shell: cabinetShell })
    const tokens = new AffiliateTokens(ctx)
    const clicks = ports.lazy(AffiliateClicksPort)
    const funnelCtx = { ...ctx, clicks: () => (ports.has(AffiliateClicksPort) ? clicks() : null) }
    return {
      routes: new Elysia({ name: 'affiliate', seed: k.instanceId })
        .use(affiliateStaffRoutes(ctx, dir as AffiliateDirectory))
        .use(commissionStaffRoutes(ctx))
        .use(cabinetRoutes(funnelCtx, tokens))
        .use(affiliateReportRoutes(funnelCtx))
        .use(integrationRoutes(ctx, tokens)),
      consumers: affiliateConsumers(ctx),
      jobs: [
        {
          name: 'affiliate.postbacks',
          every: 2_000,
          scope: 'cluster',
          run: ({ now }) => sendDuePostbacks(ctx, now),
        },
        // a month's commissions close once, on one instance, after the grace days
        {
          name: 'affiliate.period-close',
          every: 3_600_000,
          scope: 'cluster',
          run: async () => {
            if (ctx.periodAutoClose) await closeDuePeriods(ctx, ctx.periodGraceDays)
          },
        },
        // release 1.25.244's first-deposit rows: corrected, stamped and posted where still owed
        {
          name: 'affiliate.first-deposit-repair',
          every: 3_600_000,
          scope: 'cluster',
          run: async () => {
            await repairFirstDeposits(ctx)
          },
        },
        // corrections written before currencies were kept apart (0033): derived again in their currencies
        {
          name: 'affiliate.correction-repair',
          every: 3_600_000,
          scope: 'cluster',
          run: async () => {
            await repairMixedCorrections(ctx)
          },
        },
      ],
      seedDemo: () => seedAffiliateDemo(ctx),
    }
  },
})

// its routes, for the type of the whole API (src/main/app-type.ts: Eden treaty)
export { cabinetRoutes } from './cabinet/routes'
export { integrationRoutes } from './integration/routes'
export { affiliateStaffRoutes } from './routes'
