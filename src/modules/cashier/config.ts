import { z } from 'zod'
import { type Config, moduleConfig, parseJsonSetting } from '../../kernel/config'

/** Development secrets of the demo brands (README); production starts with none. */
export const DEV_CASHIER_SECRETS: Record<string, Record<string, string[]>> = {
  Demo: { sandbox: ['sandbox-demo-secret-dev-only'], checkout: ['checkout-demo-secret-dev-only'] },
  Beta: { sandbox: ['sandbox-beta-secret-dev-only'], checkout: ['checkout-beta-secret-dev-only'] },
}

const CashierSecrets = z.record(
  z.string().min(1),
  z.record(z.string().regex(/^[a-z][a-z0-9_]*$/), z.array(z.string().min(16)).min(1).max(5)),
)
const WireBank = z.object({
  name: z.string().min(1),
  iban: z.string().min(5),
  bic: z.string().min(8),
  holder: z.string().min(1),
})

/** The cashier's environment variables (README: configuration). */
export const CashierEnv = z.object({
  /** JSON `{"<brand>": {"<provider>": ["secret", …]}}`: webhook secrets, several during a rotation. */
  CASHIER_SECRETS: z.string().optional(),
  /** JSON `{"name","iban","bic","holder"}`: the bank shown for wire deposits. */
  CASHIER_WIRE_BANK: z.string().optional(),
  /** JSON `{"<brand>": "https://host"}`: where providers send a brand's webhooks and customers pay. */
  CASHIER_PUBLIC_URLS: z.string().optional(),
})

const PublicUrls = z.record(
  z.string().min(1),
  z
    .string()
    .url()
    .refine((u) => /^https?:\/\/[^/]+$/.test(u.replace(/\/$/, '')), 'an origin: scheme and host, no path'),
)

export interface CashierConfig {
  secrets: Record<string, Record<string, string[]>>
  wireBank: z.infer<typeof WireBank>
  /** Each brand's public origin for payment pages and webhooks (README: configuration). */
  publicUrls: Record<string, string>
  production: boolean
}

/** The cashier's settings, read from the environment the kernel read its own from. */
export function cashierConfig(config: Config): CashierConfig {
  const e = moduleConfig(config, CashierEnv)
  return {
    secrets: e.CASHIER_SECRETS
      ? parseJsonSetting('CASHIER_SECRETS', CashierSecrets, e.CASHIER_SECRETS)
      : config.production
        ? {}
        : DEV_CASHIER_SECRETS,
    wireBank: e.CASHIER_WIRE_BANK
      ? parseJsonSetting('CASHIER_WIRE_BANK', WireBank, e.CASHIER_WIRE_BANK)
      : { name: 'Sandbox Bank', iban: 'GB33BUKB20201555555555', bic: 'BUKBGB22', holder: 'Demo Broker Ltd' },
    publicUrls: e.CASHIER_PUBLIC_URLS
      ? parseJsonSetting('CASHIER_PUBLIC_URLS', PublicUrls, e.CASHIER_PUBLIC_URLS)
      : {},
    production: config.production,
  }
}

/**
 * The origin a brand's payment pages and provider webhooks are addressed to: the brand's configured one;
 * without it, in production, HTTPS on the request's host (an allowlisted host of the brand: never the
 * port or scheme a client sent, which would send signed webhooks where it listens); in development, the
 * request's origin (the demo on any port).
 */
export function publicOrigin(settings: CashierConfig, brandName: string, requestUrl: string) {
  const configured = settings.publicUrls[brandName]
  if (configured) return configured.replace(/\/$/, '')
  const url = new URL(requestUrl)
  return settings.production ? `https://${url.hostname}` : url.origin
}
