import { z } from 'zod'
import { type Config, moduleConfig } from '../../kernel/config'

/** The affiliate module's environment variables (README: configuration). */
export const AffiliateEnv = z.object({
  /** Postbacks to loopback and private addresses (a receiver on this machine): development only. */
  AFFILIATE_POSTBACK_PRIVATE: z
    .enum(['true', 'false', '1', '0'])
    .default('false')
    .transform((v) => v === 'true' || v === '1'),
  /** Requests per minute of one integration token, across instances (spec 4.18). */
  AFFILIATE_API_RATE_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(600),
  /** Days after a month ends before the job closes its commission period (late events still land in it). */
  AFFILIATE_PERIOD_GRACE_DAYS: z.coerce.number().int().min(0).max(60).default(5),
  /** Whether the job closes periods by itself; false: staff close them (POST /manager/affiliate-periods/…). */
  AFFILIATE_PERIOD_AUTO_CLOSE: z
    .enum(['true', 'false', '1', '0'])
    .default('true')
    .transform((v) => v === 'true' || v === '1'),
})

interface AffiliateConfig {
  allowPrivatePostbacks: boolean
  apiRatePerMinute: number
  periodGraceDays: number
  periodAutoClose: boolean
}

/** The affiliate module's settings, read from the environment the kernel read its own from. */
export function affiliateConfig(config: Config): AffiliateConfig {
  const e = moduleConfig(config, AffiliateEnv)
  return {
    allowPrivatePostbacks: e.AFFILIATE_POSTBACK_PRIVATE,
    apiRatePerMinute: e.AFFILIATE_API_RATE_PER_MINUTE,
    periodGraceDays: e.AFFILIATE_PERIOD_GRACE_DAYS,
    periodAutoClose: e.AFFILIATE_PERIOD_AUTO_CLOSE,
  }
}
