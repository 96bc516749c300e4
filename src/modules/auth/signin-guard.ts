import type { AppContext } from '../../context'
import { ApiError } from '../../platform/errors'

/**
 * Brute-force guard: after `maxFailures` consecutive failures for one identity from one IP, every attempt
 * answers 429 TOO_MANY_ATTEMPTS for `lockSeconds` (counted in the shared cache, so all instances agree).
 */
export class SignInGuard {
  constructor(private readonly ctx: AppContext) {}

  private key(brandId: number, identity: string, ip: string) {
    return `auth:fail:${brandId}:${identity}:${ip}`
  }

  async assertAllowed(brandId: number, identity: string, ip: string) {
    const n = Number((await this.ctx.store.get(this.key(brandId, identity, ip))) ?? 0)
    if (n >= this.ctx.config.signin.maxFailures)
      throw new ApiError(429, 'TOO_MANY_ATTEMPTS', 'too many failed sign-ins; try again later')
  }

  async failed(brandId: number, identity: string, ip: string) {
    const ttl = this.ctx.config.signin.lockSeconds * 1000
    const key = this.key(brandId, identity, ip)
    const n = await this.ctx.store.incr(key, ttl)
    // The lock lasts lockSeconds from the failure that reached the limit.
    if (n >= this.ctx.config.signin.maxFailures) await this.ctx.store.set(key, String(n), ttl)
  }

  succeeded(brandId: number, identity: string, ip: string) {
    return this.ctx.store.del(this.key(brandId, identity, ip))
  }

  /** Records the outcome of a credential check; a failure throws USER_NOT_FOUND_OR_INCORRECT. */
  async settle(brandId: number, identity: string, ip: string, ok: boolean) {
    if (!ok) {
      await this.failed(brandId, identity, ip)
      throw new ApiError(403, 'USER_NOT_FOUND_OR_INCORRECT', 'login or password is incorrect')
    }
    await this.succeeded(brandId, identity, ip)
  }
}
