import { MemoryStore } from '../cache/memory'
import { ApiError } from '../http/errors'
import type { Kernel } from '../kernel'

const IN_FLIGHT_MS = 60_000

/** The counters of this process, for while the shared store is unreachable. */
const processCounters = new MemoryStore()

const locked = () => new ApiError(429, 'TOO_MANY_ATTEMPTS', 'too many failed sign-ins; try again later')
/** More sign-ins in flight from one address than its remaining allowance: a moment's wait, not a lock. */
const busy = () =>
  new ApiError(429, 'TOO_MANY_ATTEMPTS', 'too many sign-ins at once from this address; retry in a second')

/**
 * Brute-force guard, counted in the shared cache so every instance agrees (while it is unreachable, each
 * process counts alone):
 * - per identity (a login or an email of the brand), from any address: after `maxFailures` failures
 *   every attempt answers 429 TOO_MANY_ATTEMPTS for `lockSeconds`, so moving to another address does
 *   not reopen a locked login;
 * - per address, over any identities: its failures and its attempts in flight together may not pass
 *   `maxFailuresPerIp`, so one password tried on many logins (spraying), at once or in turn, stops. An
 *   address that cannot be known (`unknown`) is not limited: it would be every client's.
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
   * One credential check under the guard, counted before the check so that attempts sent at once each see
   * the ones before them (counted after it, every attempt of a burst passed the read of the counters
   * before any failure was written: 29 wrong passwords and the right one sent together were all checked):
   * - the address first: its failures plus its attempts in flight may not pass its limit, so a burst
   *   over many identities is bounded too; an attempt the address refuses never touches an identity's
   *   counter, so a locked address cannot lock other people's accounts;
   * - then the identity: its count, in flight included, may not pass its limit; a refused attempt gives
   *   its count back (nothing writes a count back over it: the lock is renewed by its expiry only).
   * A success clears the identity's counter (not the address's: a valid account of its own does not let
   * an address reset what it sprayed); a check that throws (refused as busy, a 503) is not a failure.
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
    const addr = ip === 'unknown' ? null : this.ipKey(ip)
    const pending = addr && `${addr}:pending`
    let store = this.ctx.store
    // a check takes seconds at most: an attempt a crash left in flight stops counting within a minute
    const start = (s: typeof store) =>
      Promise.all([
        addr ? s.get(addr) : null,
        pending ? s.incr(pending, IN_FLIGHT_MS) : 1,
        s.incr(id, ttl),
      ] as const)
    let [failed, inFlight, byIdentity] = await start(store)
    if (inFlight < 1 || byIdentity < 1) {
      // the shared store did not answer (its fallback counts 0): this process counts alone meanwhile, so
      // an outage of Redis is not an outage of the limit
      if (byIdentity >= 1) await store.incr(id, ttl, -1)
      store = processCounters
      ;[failed, inFlight, byIdentity] = await start(store)
    }
    const done = async () => {
      if (pending) await store.incr(pending, IN_FLIGHT_MS, -1)
    }
    const giveBack = () => Promise.all([store.incr(id, ttl, -1), done()])
    const failedHere = Number(failed ?? 0)
    const refusal =
      failedHere >= maxFailuresPerIp
        ? locked()
        : failedHere + inFlight > maxFailuresPerIp
          ? busy()
          : byIdentity > maxFailures
            ? locked()
            : null
    if (refusal) {
      await giveBack()
      throw refusal
    }
    let result: T
    try {
      result = await check()
    } catch (e) {
      await giveBack()
      throw e
    }
    if (!result.ok) {
      // counted as a failure before it stops counting as in flight, so it is never in neither count
      const failures = addr ? await store.incr(addr, ttl) : 0
      await done()
      // the lock lasts lockSeconds from the failure that reached the limit
      await Promise.all([
        byIdentity >= maxFailures ? store.expire(id, ttl) : null,
        addr && failures >= maxFailuresPerIp ? store.expire(addr, ttl) : null,
      ])
      throw this.refusal()
    }
    await store.del(id)
    await done()
    return result
  }
}
