import { jwt } from '@elysiajs/jwt'
import { eq, inArray, lt } from 'drizzle-orm'
import { z } from 'zod'
import type { KeyValueStore } from '../cache'
import { type Clock, epochSeconds } from '../clock'
import type { Config } from '../config'
import type { Db } from '../db/client'
import { MAX_ID } from '../limits'
import { revokedTokens } from './schema'
import { SESSION_TYPES, type Session, type SessionType } from './session'

/** Header `typ` of client access tokens; other token classes (affiliate, integration) use their own. */
export const ACCESS_TYP = 'tcs-access+jwt'

const id = z.number().int().min(1).max(MAX_ID)
/**
 * The claims a valid token carries, checked after the signature: a well-signed token of another shape
 * (a missing login, a login as text, an unknown session type) is refused like a forged one.
 */
const Claims = z
  .object({
    st: z.enum(SESSION_TYPES),
    bid: id,
    login: z.number().int().min(0).max(MAX_ID).optional(),
    cid: id.optional(),
    sid: id.optional(),
    // tokens issued before session epochs existed carry none: epoch 0
    se: z.number().int().min(0).max(MAX_ID).default(0),
    jti: z.string().uuid(),
    exp: z.number().int().positive(),
  })
  .refine((c) => {
    if (c.st === 'SESSION_USER') return c.login !== undefined && c.cid === undefined && c.sid === undefined
    if (c.st === 'SESSION_CUSTOMER')
      return c.cid !== undefined && c.login === undefined && c.sid === undefined
    return c.sid !== undefined && c.login !== undefined && c.cid === undefined
  })
type Claims = z.infer<typeof Claims>

/** Cache markers of a token id: revoked, or verified as not revoked (re-checked against the table after a while). */
const REVOKED = 'R'
const VALID = 'V'
const markerKey = (jti: string) => `auth:rev:v2:${jti}`
/**
 * How long "not revoked" is believed from the cache. A sign-out overwrites the marker at once; this
 * only bounds the case where the cache was unreachable when the sign-out tried to.
 */
const VALID_MARKER_MS = 60_000

/**
 * Issues and verifies access tokens: HS256 pinned, iss/aud/exp/jti required, a distinct `typ` per token
 * class, the claims' shape checked, and revocation by jti: durable in `revoked_tokens`, with the shared
 * cache in front. A token the cache knows nothing about is checked against the table (fail-closed: a
 * database error fails the request). Verified tokens are memoized (bounded) because the HMAC check
 * dominates the cost of a cached read; expiry and revocation are still checked every time.
 */
export class AccessTokens {
  private readonly signer
  private readonly verified = new Map<string, Session>()
  private static readonly MEMO_LIMIT = 20_000

  constructor(
    private readonly config: Config['jwt'],
    private readonly db: Db,
    private readonly store: KeyValueStore,
    private readonly clock: Clock,
  ) {
    this.signer = jwt({
      name: 'accessJwt',
      secret: config.secret,
      alg: 'HS256',
      typ: ACCESS_TYP,
      iss: config.issuer,
      aud: config.audience,
    }).decorator.accessJwt
  }

  async issue(s: Omit<Session, 'jti' | 'exp'>): Promise<{ token: string; session: Session }> {
    const jti = crypto.randomUUID()
    const exp = epochSeconds(this.clock.now()) + this.config.ttlSeconds
    const claims: Claims = { st: s.type, bid: s.brandId, se: s.epoch, jti, exp }
    if (s.login !== undefined) claims.login = s.login
    if (s.customerId !== undefined) claims.cid = s.customerId
    if (s.staffId !== undefined) claims.sid = s.staffId
    const token = await this.signer.sign({
      ...claims,
      sub: `${s.type}:${s.login ?? s.customerId ?? s.staffId}`,
    })
    return { token, session: { ...s, jti, exp } }
  }

  /** The session of a valid, well-formed, unexpired, unrevoked token; null otherwise. */
  async verify(token: string): Promise<Session | null> {
    const nowSec = epochSeconds(this.clock.now())
    let session = this.verified.get(token)
    if (!session) {
      const payload = await this.signer.verify(token, {
        algorithms: ['HS256'],
        typ: ACCESS_TYP,
        issuer: this.config.issuer,
        audience: this.config.audience,
        requiredClaims: ['exp', 'jti', 'iss', 'aud'],
        currentDate: new Date(this.clock.now()),
      })
      if (!payload) return null
      const parsed = Claims.safeParse(payload)
      if (!parsed.success) return null
      const p = parsed.data
      session = {
        type: p.st as SessionType,
        brandId: p.bid,
        login: p.login,
        customerId: p.cid,
        staffId: p.sid,
        epoch: p.se,
        jti: p.jti,
        exp: p.exp,
      }
      if (this.verified.size >= AccessTokens.MEMO_LIMIT)
        this.verified.delete(this.verified.keys().next().value!)
      this.verified.set(token, session)
    }
    if (session.exp <= nowSec) {
      this.verified.delete(token)
      return null
    }
    if (await this.isRevoked(session)) return null
    return session
  }

  private async isRevoked(session: Session): Promise<boolean> {
    const key = markerKey(session.jti)
    const marker = await this.store.get(key)
    if (marker === REVOKED) return true
    if (marker === VALID) return false
    const [row] = await this.db
      .select({ jti: revokedTokens.jti })
      .from(revokedTokens)
      .where(eq(revokedTokens.jti, session.jti))
    const ttl = (session.exp - epochSeconds(this.clock.now())) * 1000
    if (row) {
      if (ttl > 0) await this.store.set(key, REVOKED, ttl)
      return true
    }
    // NX: a sign-out that wrote its marker meanwhile must not be overwritten
    if (ttl > 0) await this.store.setNX(key, VALID, Math.min(ttl, VALID_MARKER_MS))
    return false
  }

  /** Revokes until the token would have expired anyway: in the table first, then in the cache. */
  async revoke(session: Session) {
    const nowSec = epochSeconds(this.clock.now())
    const ttlMs = (session.exp - nowSec) * 1000
    if (ttlMs <= 0) return
    await this.db.transaction(async (tx) => {
      await tx
        .insert(revokedTokens)
        .values({ jti: session.jti, expiresAt: session.exp })
        .onConflictDoNothing()
      // rows of expired tokens are useless; each sign-out clears a few
      const stale = tx
        .select({ jti: revokedTokens.jti })
        .from(revokedTokens)
        .where(lt(revokedTokens.expiresAt, nowSec))
        .limit(100)
      await tx.delete(revokedTokens).where(inArray(revokedTokens.jti, stale))
    })
    await this.store.set(markerKey(session.jti), REVOKED, ttlMs)
  }
}
