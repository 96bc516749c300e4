import { Elysia } from 'elysia'
import { defineModule, definePort } from '../../kernel/module'
import { AccountsPort } from '../accounts'
import { affiliateConsumers } from './consumers'
import type { AffiliateCtx } from './context'
import { seedAffiliateDemo } from './demo'
import { affiliateStaffRoutes } from './routes'
import * as schema from './schema'
import { AffiliateDirectory, type CodeMatch } from './service/directory'
import { sendDuePostbacks } from './service/postbacks'

export * from './events'
export type { CodeMatch }

/** What attribution asks: the active affiliate or link behind a code of a brand. */
export interface AffiliateCodes {
  affiliate(brandId: number, code: string): Promise<CodeMatch | null>
  link(brandId: number, code: string): Promise<CodeMatch | null>
}
export const AffiliateCodesPort = definePort<AffiliateCodes>('affiliate.codes')

/** Affiliates, brand access, tracking links, the conversion ledger and postbacks (README.md of this folder). */
export const affiliateModule = defineModule({
  name: 'affiliate',
  tags: [
    {
      name: 'Affiliates back office',
      description:
        'Staff: affiliates, their brand access and postbacks, tracking links, settings, conversions',
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
    return {
      routes: new Elysia({ name: 'affiliate', seed: k.instanceId }).use(
        affiliateStaffRoutes(ctx, dir as AffiliateDirectory),
      ),
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
