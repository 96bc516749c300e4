import type { Config } from '../config'
import type { Logger } from '../logger'
import type { MessageBus } from './bus'
import { LocalBus } from './local'
import { RedisBus } from './redis'
import { UpstashBus } from './upstash'

export type { BusEntry, MessageBus } from './bus'

/** The bus beside the cache: a Redis stream when Redis is configured, else in this process. */
export function createBus(config: Config, logger: Logger): MessageBus {
  const c = config.cache
  if (c.kind === 'redis') return new RedisBus(c.url, logger)
  if (c.kind === 'upstash') return new UpstashBus(c.url, c.token, logger)
  return new LocalBus()
}
