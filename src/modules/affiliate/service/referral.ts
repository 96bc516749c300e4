import type { AffiliateCtx } from '../context'
import type { CustomerAttribution } from '../ports'

/** Who referred a customer: the affiliate and link its registration was attributed to (attribution module). */
export interface Referral {
  brandId: number
  customerId: number
  affiliateId: number
  linkId: number | null
  /** What the affiliate's tracker set on the winning touch: click_id, sub1..sub5, utm_*, campaign. */
  tracking: Record<string, string>
}

/** The values of a customer's attribution an affiliate's tracker matches conversions by. */
const TRACKING_KEYS = /^(click_id|sub[1-5]|utm_(source|medium|campaign|term|content)|campaign)$/

export function trackingOf(values: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(values)) if (TRACKING_KEYS.test(k) && v) out[k] = v
  return out
}

/**
 * Read with the customer (the shared cache): the attribution is written with the customer in the
 * registration's transaction, so it is there before any later event of the customer can be, in whatever
 * order the events arrive.
 */
export async function referralOf(ctx: AffiliateCtx, customerId: number | null): Promise<Referral | null> {
  if (!customerId) return null
  const a = await ctx.attributions()?.of(customerId)
  if (!a?.affiliateId) return null
  return {
    brandId: a.brandId,
    customerId: a.customerId,
    affiliateId: a.affiliateId,
    linkId: a.linkId,
    tracking: trackingOf(a.values),
  }
}

/** The referral of the customer owning an account (trade events carry the login). */
export async function referralOfLogin(ctx: AffiliateCtx, login: number) {
  const account = await ctx.accounts.read.account(login)
  return referralOf(ctx, account?.customerId ?? null)
}

/**
 * The tracking values of customers (the cabinet's and staff's conversion lists show them per row): one
 * read per brand of the page, not one per customer (at the edge each is a subrequest).
 */
export async function trackingOfCustomers(
  ctx: AffiliateCtx,
  rows: { brandId: number; customerId: number }[],
) {
  const out = new Map<number, Record<string, string>>()
  const port = ctx.attributions()
  const brands = new Set(rows.map((r) => r.brandId))
  for (const brandId of brands) {
    const ids = rows.filter((r) => r.brandId === brandId).map((r) => r.customerId)
    const found = port ? await port.ofMany(brandId, ids) : new Map<number, CustomerAttribution>()
    for (const id of ids) out.set(id, trackingOf(found.get(id)?.values ?? {}))
  }
  return out
}
