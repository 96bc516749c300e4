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

  /**
   * One credential check under the guard. The identity's attempt is counted before `check` runs, as the
   * failure it may turn out to be: attempts sent at once each see the ones before them, so a burst cannot
   * have more passwords of one identity checked than the limit allows (counted after the check, every
   * attempt of a burst passed the read before any failure was written). An attempt refused unchecked keeps
   * its count, so a flood cannot wear the lock down; a check that throws (refused as busy, a 503) gives
   * its count back. The address counts failures only, after the check: sign-ins that succeed at once from
   * one address (an office, a server) are never refused as failures.
   */
  async attempt<T extends { ok: boolean }>(
    brandId: number,
    identity: string,
    ip: string,
    check: () => Promise<T>,
  ): Promise<T> {
    const { maxFailures, maxFailuresPerIp, lockSeconds } = this.ctx.config.signin
    const ttl = lockSeconds * 1000
    const id = this.identityKey(brandId, identity)
    const addr = this.ipKey(ip)
    const [byIdentity, byIp] = await Promise.all([this.ctx.store.incr(id, ttl), this.ctx.store.get(addr)])
    if (byIdentity > maxFailures) throw locked()
    if (Number(byIp ?? 0) >= maxFailuresPerIp) {
      await this.ctx.store.incr(id, ttl, -1)
      throw locked()
    }
    let result: T
    try {
      result = await check()
    } catch (e) {
      await this.ctx.store.incr(id, ttl, -1)
      throw e
    }
    if (!result.ok) {
      const failures = await this.ctx.store.incr(addr, ttl)
      // the lock lasts lockSeconds from the failure that reached the limit (its expiry only: the count
      // stays what the attempts made it)
      await Promise.all([
        byIdentity >= maxFailures ? this.ctx.store.expire(id, ttl) : null,
        failures >= maxFailuresPerIp ? this.ctx.store.expire(addr, ttl) : null,
      ])
      throw this.refusal()
    }
    // a valid account of its own does not let an address reset what it sprayed
    await this.ctx.store.del(id)
    return result
  }
}
