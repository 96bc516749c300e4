import { fromMinor } from '../accounts'
import type { conversions } from './schema'

type ConversionRecord = typeof conversions.$inferSelect

/**
 * A conversion row as the API and postbacks show it: money kinds in the currency's units, active trader
 * in lots (the closed lots that made the customer active), registration and KYC approval without value.
 */
export function conversionView(r: ConversionRecord) {
  const value =
    r.valueMinor === null
      ? null
      : r.kind === 'active_trader'
        ? r.valueMinor / 100
        : fromMinor(r.valueMinor, r.currency || 'USD')
  return {
    id: r.id,
    kind: r.kind,
    value,
    currency: r.currency,
    reference_id: r.referenceId,
    event_time: Math.floor(r.eventTime / 1000),
    affiliate_id: r.affiliateId,
    link_id: r.linkId,
    customer_id: r.customerId,
    brand_id: r.brandId,
  }
}
