import type { Clock } from '../clock'
import type { Config } from '../config'
import type { Logger } from '../logger'
import { MemoryStore } from './memory'
import { RedisStore } from './redis'
import { ResilientStore } from './resilient'
import type { KeyValueStore } from './store'
import { UpstashStore } from './upstash'

export type { KeyValueStore } from './store'

/** Picks the adapter from configuration; remote adapters are wrapped so an outage degrades, not fails. */
export function createStore(config: Config, logger: Logger, clock: Clock): KeyValueStore {
  const c = config.cache
  if (c.kind === 'redis') return new ResilientStore(new RedisStore(c.url), logger, config.cacheTimeoutMs)
  if (c.kind === 'upstash')
    return new ResilientStore(new UpstashStore(c.url, c.token), logger, config.cacheTimeoutMs)
  return new MemoryStore(clock)
}
