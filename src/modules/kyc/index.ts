import type { Queryable } from '../../kernel/db/client'
import { defineModule, definePort } from '../../kernel/module'
import { UploadsPort } from '../uploads'
import type { KycCtx } from './context'
import { kycRoutes } from './routes'
import * as schema from './schema'
import { expireDocuments, gatesFor, recomputeProfiles } from './service'

export * from './events'

/** What other modules ask of KYC. */
export interface KycApi {
  /** What KYC allows a customer now: the deposit limit before approval (null: none; 0 once rejected) and withdrawals. */
  gates: (brandId: number, customerId: number, q?: Queryable) => ReturnType<typeof gatesFor>
}

export const KycPort = definePort<KycApi>('kyc')

/** Customer verification: profiles, steps, documents, staff review, tiers (README.md of this folder). */
export const kycModule = defineModule({
  name: 'kyc',
  tags: [
    { name: 'KYC', description: "The customer's verification: profile, steps, documents (spec 4.10)" },
    {
      name: 'KYC review',
      description: 'Back office: review KYC profiles, steps and documents; risk; settings',
    },
  ],
  tables: schema,
  setup(k, ports) {
    const ctx: KycCtx = { ...k, uploads: ports.get(UploadsPort) }
    ports.provide(KycPort, { gates: (brandId, customerId, q) => gatesFor({ ctx, brandId, customerId, q }) })
    return {
      routes: kycRoutes(ctx),
      // documents past their validity date expire, and the steps approved on them
      // and profiles stored before the settings were saved get their status under them
      jobs: [
        { name: 'kyc.expire', every: 60_000, scope: 'cluster', run: () => expireDocuments({ ctx }) },
        { name: 'kyc.recompute', every: 60_000, scope: 'cluster', run: () => recomputeProfiles({ ctx }) },
      ],
    }
  },
})

// its routes, for the type of the whole API (src/main/app-type.ts: Eden treaty)
export { kycRoutes } from './routes'
