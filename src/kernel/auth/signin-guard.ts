import { ApiError } from '../http/errors'
import type { Kernel } from '../kernel'

const locked = () => new ApiError(429, 'TOO_MANY_ATTEMPTS', 'too many failed sign-ins; try again later')

/**
 * Brute-force guard, counted in the shared cache so every instance agrees:
 * - per identity (a login or an email of the brand), from any address: after `maxFailures` failures
 *   every attempt answers 429 TOO_MANY_ATTEMPTS for `lockSeconds`, so moving to another address does
 *   not reopen a locked login;
 * - per address, over any identities: after `maxFailuresPerIp` failures the address is throttled the
 *   same way, so one password tried on many logins (spraying) stops.
 * A success clears its identity's counter only: a valid account of its own does not let an address
 * reset what it sprayed.
 */
export class SignInGuard {
  constructor(
    private readonly ctx: Pick<Kernel, 'store' | 'config'>,
    /** counters of another kind of identity (affiliates) are kept apart from accounts' */
    private readonly prefix = 'auth',
    /** the answer to wrong credentials */
    private readonly refusal: () => Error = () =>
      new ApiError(403, 'USER_NOT_FOUND_OR_INCORRECT', 'login or password is incorrect'),
  ) {}

  private identityKey(brandId: number, identity: string) {
    return `${this.prefix}:fail:id:${brandId}:${identity}`
  }

  private ipKey(ip: string) {
    return `auth:fail:ip:${ip}`
  }

  async assertAllowed(brandId: number, identity: string, ip: string) {
    const { maxFailures, maxFailuresPerIp } = this.ctx.config.signin
    const [byIdentity, byIp] = await Promise.all([
      this.ctx.store.get(this.identityKey(brandId, identity)),
      this.ctx.store.get(this.ipKey(ip)),
    ])
    if (Number(byIdentity ?? 0) >= maxFailures || Number(byIp ?? 0) >= maxFailuresPerIp) throw locked()
  }

  private async count(key: string, limit: number) {
    const ttl = this.ctx.config.signin.lockSeconds * 1000
    const n = await this.ctx.store.incr(key, ttl)
    // The lock lasts lockSeconds from the failure that reached the limit.
    if (n >= limit) await this.ctx.store.set(key, String(n), ttl)
  }

  async failed(brandId: number, identity: string, ip: string) {
    const { maxFailures, maxFailuresPerIp } = this.ctx.config.signin
    await Promise.all([
      this.count(this.identityKey(brandId, identity), maxFailures),
      this.count(this.ipKey(ip), maxFailuresPerIp),
    ])
  }

  succeeded(brandId: number, identity: string) {
    return this.ctx.store.del(this.identityKey(brandId, identity))
  }

  /** Records the outcome of a credential check; a failure throws the refusal. */
  async settle(brandId: number, identity: string, ip: string, ok: boolean) {
    if (!ok) {
      await this.failed(brandId, identity, ip)
      throw this.refusal()
    }
    await this.succeeded(brandId, identity)
  }
}
