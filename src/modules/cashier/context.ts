import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'
import type { KycApi } from '../kyc'
import type { CashierConfig } from './config'
import type { PaymentProvider } from './providers/port'

/** What the cashier services work with. */
export interface CashierCtx extends Kernel {
  accounts: AccountsApi
  kyc: KycApi
  /** The loaded provider modules, by id. */
  providers: Map<string, PaymentProvider>
  settings: CashierConfig
}

/** A provider's webhook secrets for a brand (empty: not configured there, its methods are not offered). */
export const secretsOf = (ctx: CashierCtx, brandName: string, provider: string) =>
  ctx.settings.secrets[brandName]?.[provider] ?? []

/** Whether a provider can serve a brand: loaded, and configured when it sends webhooks. */
export function providerReady(ctx: CashierCtx, brandName: string, provider: string) {
  const p = ctx.providers.get(provider)
  return !!p && (!p.webhooks || secretsOf(ctx, brandName, provider).length > 0)
}
