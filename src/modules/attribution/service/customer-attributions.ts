import type { CustomerRecord } from '../../accounts'
import type { CustomerAttribution, CustomerAttributions } from '../../affiliate'
import type { AttributionCtx } from '../context'
import { fromRecord, toRecord } from '../domain/record'

/** What a customer's record says of its referral; null when nobody referred it. */
function attributionOf(
  c: Pick<CustomerRecord, 'id' | 'brandId' | 'attribution'>,
): CustomerAttribution | null {
  const a = fromRecord(c.attribution)
  if (!a) return null
  return {
    brandId: c.brandId,
    customerId: c.id,
    affiliateId: a.affiliateId,
    linkId: a.linkId,
    values: a.values,
  }
}

/**
 * Customers' attribution for the affiliate module (its CustomerAttributionPort): the record registration
 * wrote with the customer (accounts keeps it; read through the shared cache), typed.
 */
export function customerAttributions(ctx: AttributionCtx): CustomerAttributions {
  return {
    async of(customerId) {
      const c = await ctx.accounts.read.customer(customerId)
      return c ? attributionOf(c) : null
    },
    async ofMany(brandId, customerIds) {
      const out = new Map<number, CustomerAttribution>()
      for (const c of (await ctx.accounts.read.customersIn(brandId, customerIds)).values()) {
        const a = attributionOf(c)
        if (a) out.set(c.id, a)
      }
      return out
    },
    ofRecord: attributionOf,
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
