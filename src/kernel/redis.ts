import { RedisClient } from 'bun'

/**
 * A Redis connection that survives an outage: Bun's client reconnects for ever (its default gives up
 * after about 30 s and then fails every command until the process restarts), and a command sent while
 * disconnected fails at once instead of waiting in an offline queue: the caller's breaker and timeout
 * decide. Every Redis client of the app (cache, leases, bus) is made here, so they cannot disagree.
 */
export function openRedis(url: string, o: { pipelining?: boolean; connectionTimeoutMs?: number } = {}) {
  return new RedisClient(url, {
    connectionTimeout: o.connectionTimeoutMs ?? 2000,
    autoReconnect: true,
    maxRetries: 2 ** 32 - 1,
    enableOfflineQueue: false,
    enableAutoPipelining: o.pipelining ?? true,
  })
}

/**
 * The client, connected: Bun connects lazily, and without an offline queue a command must wait for the
 * connection itself. While Redis is away `connect()` waits until it is back, so callers bound this with
 * a timeout (Dependency.call).
 */
export async function connected(client: RedisClient): Promise<RedisClient> {
  if (!client.connected) await client.connect()
  return client
}
