import { and, eq, or, sql } from 'drizzle-orm'
import { dummyHash, verifyPassword } from '../../../kernel/auth/passwords'
import { SignInGuard } from '../../../kernel/auth/signin-guard'
import type { Brand } from '../../../kernel/brand/registry'
import type { AffiliateCtx } from '../context'
import { refuse } from '../errors'
import { affiliateAccess, affiliates } from '../schema'
import type { AffiliatePrincipal, AffiliateTokens } from './tokens'

/** A cabinet session lasts as long as a staff or customer session (TOKEN_TTL_SECONDS). */
export const CABINET_COOKIE = 'tcs_aff'

/**
 * POST /api/affiliate/login: an affiliate's email or code and its password on this brand (spec 5.4).
 * Wrong credentials, an unknown login, a suspended affiliate and an affiliate without access to the brand
 * all answer the same 401, counted by the sign-in guard (a locked login answers 429).
 */
export async function cabinetLogin(
  ctx: AffiliateCtx,
  tokens: AffiliateTokens,
  brand: Brand,
  input: { login: string; password: string },
  ip: string,
) {
  const guard = new SignInGuard(ctx, 'affiliate', () =>
    refuse('INVALID_CREDENTIALS', 'login or password is incorrect'),
  )
  const login = input.login.trim()
  const named = or(
    eq(affiliates.email, login.toLowerCase()),
    sql`${affiliates.code} = ${login} collate nocase`,
  )
  // failures count per affiliate, whether it is named by its email or its code (per login text, each
  // name had a lock window of its own)
  const [known] = await ctx.db.select({ id: affiliates.id }).from(affiliates).where(named).limit(1)
  const lockKey = known ? `#${known.id}` : login.toLowerCase()
  const { row } = await guard.attempt(brand.id, lockKey, ip, async () => {
    const [row] = await ctx.db
      .select({ a: affiliates, access: affiliateAccess })
      .from(affiliates)
      .innerJoin(
        affiliateAccess,
        and(eq(affiliateAccess.affiliateId, affiliates.id), eq(affiliateAccess.brandId, brand.id)),
      )
      .where(named)
    // an unknown login checks a fixed hash, so that answer takes as long as a wrong password
    const hash = row?.access.passwordHash || (await dummyHash())
    // a stored value that is not a hash checks as false; a check refused as busy is a 503, not a failure
    const passwordOk = await verifyPassword(input.password, hash)
    // an access without a password (one granted, revoked, granted again without one) never signs in
    const stored = !!row?.access.passwordHash
    return { ok: stored && passwordOk && row!.a.status === 'active' && row!.access.status === 'active', row }
  })
  // issued only while the password checked and both statuses are still the stored ones: a reset, a
  // suspension or a revoked access written during the check ended the sessions already, not this one
  const { a, access } = row!
  const issued = await ctx.db.transaction(async (tx) => {
    const [still] = await tx
      .select({ id: affiliateAccess.affiliateId })
      .from(affiliateAccess)
      .innerJoin(affiliates, eq(affiliates.id, affiliateAccess.affiliateId))
      .where(
        and(
          eq(affiliateAccess.affiliateId, a.id),
          eq(affiliateAccess.brandId, brand.id),
          eq(affiliateAccess.passwordHash, access.passwordHash),
          eq(affiliateAccess.status, 'active'),
          eq(affiliates.status, 'active'),
        ),
      )
    if (!still) return null
    return tokens.issue(
      'cabinet',
      { affiliateId: a.id, brandId: brand.id, scopes: [], ttlSeconds: ctx.config.jwt.ttlSeconds },
      tx,
    )
  })
  if (!issued) throw refuse('INVALID_CREDENTIALS', 'login or password is incorrect')
  return {
    token: issued.token,
    expiresAt: issued.expiresAt,
    me: meView({ ...row!.a, homeBrandId: row!.a.brandId }, brand),
  }
}

/** The cabinet's own view; on another brand than its home, without the home brand's fields (its email). */
const meView = (
  a: { id: number; email: string; code: string; name: string; homeBrandId: number },
  brand: Brand,
) => ({
  id: a.id,
  email: a.homeBrandId === brand.id ? a.email : '',
  code: a.code,
  name: a.name,
  brand: { id: brand.id, name: brand.name },
})

export const principalMe = (p: AffiliatePrincipal, brand: Brand) => meView(p.affiliate, brand)
