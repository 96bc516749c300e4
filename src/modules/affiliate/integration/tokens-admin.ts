import { and, desc, eq } from 'drizzle-orm'
import type { AffiliateTokens } from '../cabinet/tokens'
import type { AffiliateCtx } from '../context'
import { refuse } from '../errors'
import { affiliateTokens } from '../schema'
import { affiliateOfBrand } from '../service/affiliates'

type TokenRow = typeof affiliateTokens.$inferSelect

const secs = (ms: number | null) => (ms === null ? 0 : Math.floor(ms / 1000))
const tokenView = (r: TokenRow, now: number) => ({
  id: r.id,
  prefix: r.prefix,
  affiliate_id: r.affiliateId,
  brand_id: r.brandId,
  scopes: JSON.parse(r.scopes) as string[],
  created_time: secs(r.createdAt),
  expires_time: secs(r.expiresAt),
  last_used_time: secs(r.lastUsedAt),
  revoked_time: secs(r.revokedAt),
  status: r.revokedAt !== null ? 'revoked' : r.expiresAt <= now ? 'expired' : 'active',
})

/** Issues an integration token of an affiliate for the staff's brand; the JWT is in this answer only. */
export async function issueToken(
  ctx: AffiliateCtx,
  tokens: AffiliateTokens,
  brandId: number,
  staffId: number,
  affiliateId: number,
  input: { scopes: string[]; expires_in_days: number },
) {
  const { access } = await affiliateOfBrand(ctx, brandId, affiliateId)
  if (access.status !== 'active')
    throw refuse('BRAND_ACCESS_REVOKED', "the affiliate's access to this brand is revoked")
  const scopes = [...new Set(input.scopes)].sort()
  const t = await tokens.issue('api', {
    affiliateId,
    brandId,
    scopes,
    ttlSeconds: input.expires_in_days * 86_400,
    createdBy: staffId,
  })
  const [row] = await ctx.db.select().from(affiliateTokens).where(eq(affiliateTokens.id, t.id))
  return { ...tokenView(row, ctx.clock.now()), token: t.token }
}

/** The affiliate's integration tokens on the brand: metadata only (never the token or its hash). */
export async function listTokens(ctx: AffiliateCtx, brandId: number, affiliateId: number) {
  await affiliateOfBrand(ctx, brandId, affiliateId)
  const rows = await ctx.db
    .select()
    .from(affiliateTokens)
    .where(
      and(
        eq(affiliateTokens.brandId, brandId),
        eq(affiliateTokens.affiliateId, affiliateId),
        eq(affiliateTokens.kind, 'api'),
      ),
    )
    .orderBy(desc(affiliateTokens.createdAt))
  return { rows: rows.map((r) => tokenView(r, ctx.clock.now())) }
}

export async function revokeToken(ctx: AffiliateCtx, tokens: AffiliateTokens, brandId: number, id: string) {
  const [row] = await ctx.db
    .select()
    .from(affiliateTokens)
    .where(
      and(eq(affiliateTokens.id, id), eq(affiliateTokens.brandId, brandId), eq(affiliateTokens.kind, 'api')),
    )
  if (!row) throw refuse('TOKEN_NOT_FOUND', 'token not found')
  await tokens.revoke(id, { kind: 'api', brandId })
  const [after] = await ctx.db.select().from(affiliateTokens).where(eq(affiliateTokens.id, id))
  return tokenView(after, ctx.clock.now())
}
