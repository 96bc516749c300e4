import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'
import type { CustomerAttributions } from './ports'

/** What the affiliate services work with: the kernel, accounts (customers) and their attribution. */
export interface AffiliateCtx extends Kernel {
  accounts: AccountsApi
  /** who referred a customer (the attribution module fills it; null without it: nobody is referred) */
  attributions: () => CustomerAttributions | null
  /** Postbacks go out through this (tests and the bench point it at a receiver on loopback). */
  fetch: typeof fetch
  /** AFFILIATE_POSTBACK_PRIVATE: postbacks may go to loopback and private addresses (development only). */
  allowPrivatePostbacks: boolean
  /** AFFILIATE_API_RATE_PER_MINUTE: requests per minute of one integration token, across instances. */
  apiRatePerMinute: number
  /** AFFILIATE_PERIOD_GRACE_DAYS: days after a month before the job closes its period. */
  periodGraceDays: number
  /** AFFILIATE_PERIOD_AUTO_CLOSE: the job closes periods (else staff do). */
  periodAutoClose: boolean
}
