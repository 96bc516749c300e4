import type { AffiliateCtx } from '../context'

/** Who referred a customer: the affiliate and link its registration was attributed to (attribution module). */
export interface Referral {
  brandId: number
  customerId: number
  affiliateId: number
  linkId: number | null
}

const positive = (v: unknown) => {
  const n = Number(v)
  return Number.isSafeInteger(n) && n > 0 ? n : null
}

/**
 * Read from the customer's record (the shared cache): the attribution is written with the customer in
 * the registration's transaction, so it is there before any later event of the customer can be, in
 * whatever order the events arrive.
 */
export async function referralOf(ctx: AffiliateCtx, customerId: number | null): Promise<Referral | null> {
  if (!customerId) return null
  const c = await ctx.accounts.read.customer(customerId)
  if (!c?.attribution) return null
  let a: Record<string, unknown>
  try {
    a = JSON.parse(c.attribution)
  } catch {
    return null
  }
  const affiliateId = positive(a.affiliate_id)
  if (!affiliateId) return null
  return { brandId: c.brandId, customerId: c.id, affiliateId, linkId: positive(a.link_id) }
}

/** The referral of the customer owning an account (trade events carry the login). */
export async function referralOfLogin(ctx: AffiliateCtx, login: number) {
  const account = await ctx.accounts.read.account(login)
  return referralOf(ctx, account?.customerId ?? null)
}
