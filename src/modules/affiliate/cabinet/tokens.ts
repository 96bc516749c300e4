import { createHash } from 'node:crypto'
import { jwt } from '@elysiajs/jwt'
import { and, eq, gt, isNull } from 'drizzle-orm'
import { z } from 'zod'
import type { Brand } from '../../../kernel/brand/registry'
import { epochSeconds } from '../../../kernel/clock'
import type { Tx } from '../../../kernel/db/client'
import { ApiError } from '../../../kernel/http/errors'
import type { AffiliateCtx } from '../context'
import { affiliateAccess, affiliates, affiliateTokens } from '../schema'

/** `cabinet`: a browser session of the affiliate cabinet; `api`: an integration token (spec 5.4, 5.5). */
type TokenKind = 'cabinet' | 'api'
export const SCOPES = ['customers:read', 'transactions:read', 'commissions:read'] as const
export type Scope = (typeof SCOPES)[number]

export interface AffiliatePrincipal {
  tokenId: string
  kind: TokenKind
  brandId: number
  scopes: string[]
  /** `homeBrandId`: the brand that owns the affiliate's own fields (its email). */
  affiliate: { id: number; email: string; code: string; name: string; homeBrandId: number }
}

const Claims = z.object({
  tid: z.string().max(40),
  aff: z.number().int().positive(),
  bid: z.number().int().positive(),
  scp: z.array(z.string()).max(10),
  exp: z.number().int(),
})

const refuse = (status: number, code: string, message: string) => new ApiError(status, code, message)
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')
const randomId = (prefix: string) =>
  `${prefix}_${Buffer.from(crypto.getRandomValues(new Uint8Array(12))).toString('base64url')}`

/** The refusals of a token check, per status (documented on the routes that use it). */
export const TOKEN_REFUSALS = {
  401: ['UNAUTHORIZED', 'TOKEN_EXPIRED', 'TOKEN_REVOKED'],
  403: ['AFFILIATE_SUSPENDED', 'BRAND_ACCESS_REVOKED', 'INSUFFICIENT_SCOPE'],
}

/**
 * Affiliate JWTs, apart from every other token of the deployment: their own audience and `typ` per kind,
 * so a manager, customer or account token is refused here and these are refused everywhere else. Every
 * check reads the token's row and the affiliate's status and brand access (no cache): a revocation or a
 * suspension applies from the next request on every instance.
 */
export class AffiliateTokens {
  private readonly signers

  constructor(private readonly ctx: AffiliateCtx) {
    const signer = (kind: TokenKind) =>
      jwt({
        name: 'affiliateJwt',
        secret: ctx.config.jwt.secret,
        alg: 'HS256',
        typ: `tcs-affiliate-${kind}+jwt`,
        iss: ctx.config.jwt.issuer,
        aud: `${ctx.config.jwt.audience}:affiliate-${kind}`,
      }).decorator.affiliateJwt
    this.signers = { cabinet: signer('cabinet'), api: signer('api') }
  }

  /** A new token, stored through `db` (a transaction that checks what the token may be issued on). */
  async issue(
    kind: TokenKind,
    o: { affiliateId: number; brandId: number; scopes: string[]; ttlSeconds: number; createdBy?: number },
    db: Pick<Tx, 'insert'> = this.ctx.db,
  ) {
    const id = randomId(kind === 'api' ? 'tok' : 'ses')
    const now = this.ctx.clock.now()
    const exp = epochSeconds(now) + o.ttlSeconds
    const token = await this.signers[kind].sign({
      tid: id,
      aff: o.affiliateId,
      bid: o.brandId,
      scp: o.scopes,
      exp,
      sub: `affiliate:${o.affiliateId}`,
    })
    await db.insert(affiliateTokens).values({
      id,
      kind,
      affiliateId: o.affiliateId,
      brandId: o.brandId,
      prefix: id.slice(0, 10),
      tokenHash: sha256(token),
      scopes: JSON.stringify(o.scopes),
      createdBy: o.createdBy ?? 0,
      createdAt: now,
      expiresAt: exp * 1000,
    })
    return { id, token, prefix: id.slice(0, 10), expiresAt: exp * 1000 }
  }

  /** The caller of a token of `kind` on `brand`, or an ApiError saying which check failed. */
  async verify(
    kind: TokenKind,
    token: string | null,
    brand: Brand,
    scope?: Scope,
  ): Promise<AffiliatePrincipal> {
    if (!token) throw refuse(401, 'UNAUTHORIZED', 'an affiliate token is required')
    const now = this.ctx.clock.now()
    const check = (at: number) =>
      this.signers[kind].verify(token, {
        algorithms: ['HS256'],
        typ: `tcs-affiliate-${kind}+jwt`,
        issuer: this.ctx.config.jwt.issuer,
        audience: `${this.ctx.config.jwt.audience}:affiliate-${kind}`,
        requiredClaims: ['exp', 'iss', 'aud'],
        currentDate: new Date(at),
      })
    const payload = await check(now)
    const claims = payload ? Claims.safeParse(payload) : null
    if (!claims?.success) {
      // a genuine token whose time is past says so (a client renews it instead of retrying)
      const expired = Claims.safeParse(await check(0))
      if (expired.success && expired.data.exp * 1000 <= now)
        throw refuse(401, 'TOKEN_EXPIRED', 'the token has expired')
      throw refuse(401, 'UNAUTHORIZED', 'the token is not a valid affiliate token of this kind')
    }
    const c = claims.data
    const [row] = await this.ctx.db
      .select({ t: affiliateTokens, a: affiliates, access: affiliateAccess })
      .from(affiliateTokens)
      .innerJoin(affiliates, eq(affiliates.id, affiliateTokens.affiliateId))
      .leftJoin(
        affiliateAccess,
        and(
          eq(affiliateAccess.affiliateId, affiliateTokens.affiliateId),
          eq(affiliateAccess.brandId, affiliateTokens.brandId),
        ),
      )
      .where(and(eq(affiliateTokens.id, c.tid), eq(affiliateTokens.kind, kind)))
    if (!row || row.t.tokenHash !== sha256(token) || row.t.affiliateId !== c.aff || row.t.brandId !== c.bid)
      throw refuse(401, 'UNAUTHORIZED', 'the token is not known')
    if (row.t.brandId !== brand.id) throw refuse(401, 'UNAUTHORIZED', 'the token belongs to another brand')
    if (row.t.revokedAt !== null) throw refuse(401, 'TOKEN_REVOKED', 'the token was revoked')
    if (row.t.expiresAt <= now) throw refuse(401, 'TOKEN_EXPIRED', 'the token has expired')
    if (row.a.status !== 'active') throw refuse(403, 'AFFILIATE_SUSPENDED', 'the affiliate is suspended')
    if (row.access?.status !== 'active')
      throw refuse(403, 'BRAND_ACCESS_REVOKED', "the affiliate's access to this brand was revoked")
    const scopes = JSON.parse(row.t.scopes) as string[]
    if (scope && !scopes.includes(scope))
      throw refuse(403, 'INSUFFICIENT_SCOPE', `the token lacks the scope ${scope}`)
    if (kind === 'api' && (row.t.lastUsedAt ?? 0) < now - 60_000)
      // last use to the minute: a write per token and minute, not per request
      await this.ctx.db
        .update(affiliateTokens)
        .set({ lastUsedAt: now })
        .where(eq(affiliateTokens.id, row.t.id))
    return {
      tokenId: row.t.id,
      kind,
      brandId: row.t.brandId,
      scopes,
      affiliate: {
        id: row.a.id,
        email: row.a.email,
        code: row.a.code,
        name: row.a.name,
        homeBrandId: row.a.brandId,
      },
    }
  }

  /**
   * Ends every live token of `kind` an affiliate holds on a brand (sign-out everywhere): how many it ended.
   * A token of another kind (an integration's API key) is not touched.
   */
  async revokeAll(where: { kind: TokenKind; brandId: number; affiliateId: number }) {
    const now = this.ctx.clock.now()
    const done = await this.ctx.db
      .update(affiliateTokens)
      .set({ revokedAt: now })
      .where(
        and(
          isNull(affiliateTokens.revokedAt),
          // the count says what it ended: an expired token ended by itself
          gt(affiliateTokens.expiresAt, now),
          eq(affiliateTokens.kind, where.kind),
          eq(affiliateTokens.brandId, where.brandId),
          eq(affiliateTokens.affiliateId, where.affiliateId),
        ),
      )
      .returning({ id: affiliateTokens.id })
    return done.length
  }

  /** Ends a token from the next request on (logout, a manager's revocation); false when already ended. */
  async revoke(id: string, where: { kind: TokenKind; brandId: number; affiliateId?: number }) {
    const done = await this.ctx.db
      .update(affiliateTokens)
      .set({ revokedAt: this.ctx.clock.now() })
      .where(
        and(
          eq(affiliateTokens.id, id),
          isNull(affiliateTokens.revokedAt),
          eq(affiliateTokens.kind, where.kind),
          eq(affiliateTokens.brandId, where.brandId),
          where.affiliateId ? eq(affiliateTokens.affiliateId, where.affiliateId) : undefined,
        ),
      )
      .returning({ id: affiliateTokens.id, revokedAt: affiliateTokens.revokedAt })
    return done.length > 0
  }
}
