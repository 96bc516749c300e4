import type { KeyValueStore } from '../cache'
import { ApiError } from './errors'

interface Limit {
  /** Name of the counter, e.g. `register:ip`. */
  name: string
  max: number
  windowMs: number
}

/**
 * Fixed-window counters in the shared store (Redis when configured, so every instance counts together):
 * the request that would be number `max + 1` within the window answers 429 TOO_MANY_REQUESTS. A store
 * outage reads as 0 (ResilientStore), so limits degrade open rather than locking every client out.
 */
export async function consume(store: KeyValueStore, limit: Limit, subject: string | number) {
  const n = await store.incr(`rl:${limit.name}:${subject}`, limit.windowMs)
  if (n > limit.max)
    throw new ApiError(
      429,
      'TOO_MANY_REQUESTS',
      `too many requests of this kind; try again within ${Math.ceil(limit.windowMs / 60_000)} minutes`,
    )
}
