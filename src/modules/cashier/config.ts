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

/**
 * The providers simulated inside this app: their payment page is served by this app itself
 * (sandbox-page.ts), so whoever reaches it pays nothing and is credited. Never loaded in production
 * unless `CASHIER_SANDBOX` says the deployment is a sandbox (staging, a public demo) with no real money.
 */
export const SIMULATED_PROVIDERS = ['sandbox', 'checkout'] as const

const Flag = z.enum(['0', '1', 'false', 'true']).optional()
const on = (v: string | undefined) => v === '1' || v === 'true'

/** The cashier's environment variables (README: configuration). */
export const CashierEnv = z
  .object({
    APP_ENV: z.string().optional(),
    /** JSON `{"<brand>": {"<provider>": ["secret", …]}}`: webhook secrets, several during a rotation. */
    CASHIER_SECRETS: z.string().optional(),
    /** JSON `{"name","iban","bic","holder"}`: the bank shown for wire deposits. */
    CASHIER_WIRE_BANK: z.string().optional(),
    /** JSON `{"<brand>": "https://host"}`: where providers send a brand's webhooks and customers pay. */
    CASHIER_PUBLIC_URLS: z.string().optional(),
    /**
     * `1`: this deployment is a sandbox (no real money), so the simulated providers and their in-app
     * payment page are loaded in production too. Outside production they always are.
     */
    CASHIER_SANDBOX: Flag,
  })
  .superRefine((e, ctx) => {
    // an operator who configured a simulated provider's secrets in production believes it is real: a
    // customer would pay on this app's own page and be credited with money nobody paid. Refused at start.
    if (e.APP_ENV !== 'production' || on(e.CASHIER_SANDBOX) || !e.CASHIER_SECRETS) return
    let secrets: unknown
    try {
      secrets = JSON.parse(e.CASHIER_SECRETS)
    } catch {
      return // parseJsonSetting names it at setup
    }
    if (!secrets || typeof secrets !== 'object') return
    for (const [brand, providers] of Object.entries(secrets))
      for (const p of SIMULATED_PROVIDERS)
        if (providers && typeof providers === 'object' && p in providers)
          ctx.addIssue({
            code: 'custom',
            path: ['CASHIER_SECRETS', brand, p],
            message: `${p} is a simulated provider whose payment page this app serves (no money is taken): it is not loaded in production; remove it, or set CASHIER_SANDBOX=1 if this deployment is a sandbox`,
          })
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
  /**
   * A payout's send lease (ms; backoffice/shared.ts: PAYOUT_SEND_LEASE_MS when unset). Not read from the
   * environment: tests shorten it to reach the payout call's deadline.
   */
  payoutSendLeaseMs?: number
}

/**
 * Whether the simulated providers (SIMULATED_PROVIDERS) and their hosted payment page are loaded:
 * outside production, or where `CASHIER_SANDBOX=1` declares the deployment a sandbox.
 */
export function sandboxAllowed(config: Config) {
  return !config.production || on(moduleConfig(config, CashierEnv).CASHIER_SANDBOX)
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
export function publicOrigin(
  settings: Pick<CashierConfig, 'publicUrls' | 'production'>,
  brandName: string,
  requestUrl: string,
) {
  const configured = settings.publicUrls[brandName]
  if (configured) return configured.replace(/\/$/, '')
  const url = new URL(requestUrl)
  return settings.production ? `https://${url.hostname}` : url.origin
}
