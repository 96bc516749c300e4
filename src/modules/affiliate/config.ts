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
})

interface AffiliateConfig {
  allowPrivatePostbacks: boolean
  apiRatePerMinute: number
}

/** The affiliate module's settings, read from the environment the kernel read its own from. */
export function affiliateConfig(config: Config): AffiliateConfig {
  const e = moduleConfig(config, AffiliateEnv)
  return {
    allowPrivatePostbacks: e.AFFILIATE_POSTBACK_PRIVATE,
    apiRatePerMinute: e.AFFILIATE_API_RATE_PER_MINUTE,
  }
}
