import type { CustomerAttributions } from '../../affiliate'
import type { AttributionCtx } from '../context'
import { fromRecord, toRecord } from '../domain/record'

/**
 * Customers' attribution for the affiliate module (its CustomerAttributionPort): the record registration
 * wrote with the customer (accounts keeps it; read through the shared cache), typed.
 */
export function customerAttributions(ctx: AttributionCtx): CustomerAttributions {
  return {
    async of(customerId) {
      const c = await ctx.accounts.read.customer(customerId)
      const a = c ? fromRecord(c.attribution) : null
      if (!c || !a) return null
      return {
        brandId: c.brandId,
        customerId: c.id,
        affiliateId: a.affiliateId,
        linkId: a.linkId,
        values: a.values,
      }
    },
    recordOf: (r) =>
      toRecord({
        values: r.values,
        affiliateId: r.affiliateId,
        linkId: r.linkId,
        installationId: null,
        touchId: null,
        wonBy: r.wonBy,
        decisionId: null,
      }),
  }
}
