import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'

/** What the affiliate services work with: the kernel and accounts (customers, their attribution). */
export interface AffiliateCtx extends Kernel {
  accounts: AccountsApi
  /** Postbacks go out through this (tests and the bench point it at a receiver on loopback). */
  fetch: typeof fetch
  /** AFFILIATE_POSTBACK_PRIVATE: postbacks may go to loopback and private addresses (development only). */
  allowPrivatePostbacks: boolean
  /** AFFILIATE_API_RATE_PER_MINUTE: requests per minute of one integration token, across instances. */
  apiRatePerMinute: number
}
