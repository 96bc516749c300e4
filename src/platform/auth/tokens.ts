import { jwt } from '@elysiajs/jwt'
import type { Config } from '../../config'
import type { KeyValueStore } from '../cache'
import { type Clock, epochSeconds } from '../clock'
import { SESSION_TYPES, type Session, type SessionType } from './session'

/** Header `typ` of client access tokens; other token classes (affiliate, integration) use their own. */
export const ACCESS_TYP = 'tcs-access+jwt'

interface Claims {
  st: SessionType
  bid: number
  login?: number
  cid?: number
  sid?: number
  jti: string
  exp: number
}

const revokedKey = (jti: string) => `auth:revoked:${jti}`

/**
 * Issues and verifies access tokens: HS256 pinned, iss/aud/exp/jti required, a distinct `typ` per token
 * class, and revocation by jti in the shared cache. Verified tokens are memoized (bounded) because the
 * HMAC check dominates the cost of a cached read; expiry and revocation are still checked every time.
 */
export class AccessTokens {
  private readonly signer
  private readonly verified = new Map<string, Session>()
  private static readonly MEMO_LIMIT = 20_000

  constructor(
    private readonly config: Config['jwt'],
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
    const claims: Claims = { st: s.type, bid: s.brandId, jti, exp }
    if (s.login !== undefined) claims.login = s.login
    if (s.customerId !== undefined) claims.cid = s.customerId
    if (s.staffId !== undefined) claims.sid = s.staffId
    const token = await this.signer.sign({
      ...claims,
      sub: `${s.type}:${s.login ?? s.customerId ?? s.staffId}`,
    })
    return { token, session: { ...s, jti, exp } }
  }

  /** The session of a valid, unexpired, unrevoked token; null otherwise. */
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
      const p = payload as unknown as Claims
      if (!SESSION_TYPES.includes(p.st) || !Number.isInteger(p.bid) || typeof p.jti !== 'string') return null
      session = {
        type: p.st,
        brandId: p.bid,
        login: p.login,
        customerId: p.cid,
        staffId: p.sid,
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
    if (await this.store.get(revokedKey(session.jti))) return null
    return session
  }

  /** Revokes until the token would have expired anyway. */
  async revoke(session: Session) {
    const ttlMs = (session.exp - epochSeconds(this.clock.now())) * 1000
    if (ttlMs > 0) await this.store.set(revokedKey(session.jti), '1', ttlMs)
  }
}
