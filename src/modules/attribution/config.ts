import { z } from 'zod'
import { type Config, moduleConfig } from '../../kernel/config'

/** The attribution module's environment variables (README: configuration). */
export const AttributionEnv = z.object({
  /** Days a marketing touch can win a registration (spec 4.16). */
  ATTRIBUTION_WINDOW_DAYS: z.coerce.number().int().min(1).max(365).default(30),
  /** Days touches are kept one by one (at least the attribution window); older ones are rolled up per day. */
  ATTRIBUTION_TOUCH_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(180),
})

interface AttributionConfig {
  windowMs: number
  retentionDays: number
}

/** The attribution module's settings, read from the environment the kernel read its own from. */
export function attributionConfig(config: Config): AttributionConfig {
  const e = moduleConfig(config, AttributionEnv)
  return {
    windowMs: e.ATTRIBUTION_WINDOW_DAYS * 86_400_000,
    retentionDays: e.ATTRIBUTION_TOUCH_RETENTION_DAYS,
  }
}
