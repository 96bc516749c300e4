import type { Kernel } from '../../kernel/kernel'
import type { AccountReadModel, AccountsApi } from '../accounts'
import type { MarketApi } from '../market'
import type { PositionReadModel } from './book/positions'

/** What the trading module's engine and services work with. */
export interface TradingCtx extends Kernel {
  accounts: AccountsApi
  accountsRead: AccountReadModel
  market: MarketApi
  refdata: MarketApi['refdata']
  quotes: MarketApi['quotes']
  positions: PositionReadModel
}
