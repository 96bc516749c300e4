import { Elysia } from 'elysia'
import type { Brand } from '../../kernel/brand/registry'
import { defineModule, definePort } from '../../kernel/module'
import { AccountsPort } from '../accounts'
import { cabinetRoutes } from './cabinet/routes'
import { cabinetShell } from './cabinet/shell'
import { AffiliateTokens } from './cabinet/tokens'
import { affiliateConsumers } from './consumers'
import type { AffiliateCtx } from './context'
import { seedAffiliateDemo } from './demo'
import { integrationRoutes } from './integration/routes'
import { affiliateStaffRoutes } from './routes'
import * as schema from './schema'
import { AffiliateDirectory, type CodeMatch } from './service/directory'
import { sendDuePostbacks } from './service/postbacks'

export { DEMO_AFFILIATES } from './demo'
export * from './events'
export type { CodeMatch }

/** What attribution asks: the active affiliate or link behind a code of a brand. */
export interface AffiliateCodes {
  affiliate(brandId: number, code: string): Promise<CodeMatch | null>
  link(brandId: number, code: string): Promise<CodeMatch | null>
}
export const AffiliateCodesPort = definePort<AffiliateCodes>('affiliate.codes')

/** A click of an affiliate (a touch attributed to it, not a bot), as the cabinet lists it. */
export interface ClickRow {
  id: number
  time: number
  source: string
  link_id: number | null
  landing_path: string
  values: Record<string, string>
}

/**
 * The clicks of an affiliate's funnel: an extension point the attribution module (listed after this one)
 * fills; without it the funnel has no clicks.
 */
export interface AffiliateClicks {
  /** per UTC day (epoch days) in [from, to) */
  perDay(
    brandId: number,
    affiliateId: number,
    from: number,
    to: number,
  ): Promise<{ day: number; clicks: number }[]>
  /** newest first, keyset below (time, id) */
  list(
    brandId: number,
    affiliateId: number,
    from: number,
    to: number,
    below: { time: number; id: number } | null,
    limit: number,
  ): Promise<ClickRow[]>
}
/** The cabinet's page for the root of an affiliate host (attribution serves `/` on every host). */
export interface Cabinet {
  shell(brand: Brand): Response
}
export const CabinetPort = definePort<Cabinet>('affiliate.cabinet')

export const AffiliateClicksPort = definePort<AffiliateClicks>('affiliate.clicks')

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
      name: 'Affiliate integration API',
      description:
        'Referred customers and their transactions for a partner system, by integration token (spec 4.18)',
    },
  ],
  tables: schema,
  setup(k, ports) {
    const ctx: AffiliateCtx = {
      ...k,
      accounts: ports.get(AccountsPort),
      fetch: globalThis.fetch.bind(globalThis),
    }
    const dir = ports.provide(AffiliateCodesPort, new AffiliateDirectory(ctx))
    ports.provide(CabinetPort, { shell: cabinetShell })
    const tokens = new AffiliateTokens(ctx)
    const clicks = ports.lazy(AffiliateClicksPort)
    const funnelCtx = { ...ctx, clicks: () => (ports.has(AffiliateClicksPort) ? clicks() : null) }
    return {
      routes: new Elysia({ name: 'affiliate', seed: k.instanceId })
        .use(affiliateStaffRoutes(ctx, dir as AffiliateDirectory))
        .use(cabinetRoutes(funnelCtx, tokens))
        .use(integrationRoutes(ctx, tokens)),
      consumers: affiliateConsumers(ctx),
      jobs: [
        {
          name: 'affiliate.postbacks',
          every: 2_000,
          scope: 'cluster',
          run: ({ now }) => sendDuePostbacks(ctx, now),
        },
      ],
      seedDemo: () => seedAffiliateDemo(ctx),
    }
  },
})
