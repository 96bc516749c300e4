import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'
import type { MarketApi } from '../market'

/** What the alerts engine works with. */
export interface AlertsCtx extends Kernel {
  accounts: AccountsApi
  refdata: MarketApi['refdata']
  quotes: MarketApi['quotes']
}
