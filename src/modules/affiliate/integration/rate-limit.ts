import { ApiError } from '../../../kernel/http/errors'
import type { AffiliateCtx } from '../context'

/**
 * Requests per minute of one integration token, counted in the shared store (Redis when configured), so
 * every instance counts together; a fixed window of the clock's minute. Answers the X-RateLimit-*
 * headers on every call and 429 RATE_LIMITED with Retry-After past the limit.
 */
export async function rateLimit(
  ctx: Pick<AffiliateCtx, 'store' | 'clock' | 'apiRatePerMinute'>,
  tokenId: string,
) {
  const limit = ctx.apiRatePerMinute
  const now = ctx.clock.now()
  const window = Math.floor(now / 60_000)
  const reset = (window + 1) * 60
  const used = await ctx.store.incr(`rl:affapi:${tokenId}:${window}`, 61_000)
  const headers = {
    'x-ratelimit-limit': String(limit),
    'x-ratelimit-remaining': String(Math.max(0, limit - used)),
    'x-ratelimit-reset': String(reset),
  }
  if (used > limit)
    // an HTTP answer of its own: its headers tell the client when to come back
    throw new ApiError(429, 'RATE_LIMITED', `at most ${limit} requests a minute per token`, {
      ...headers,
      'retry-after': String(Math.max(1, reset - Math.floor(now / 1000))),
    })
  return headers
}
