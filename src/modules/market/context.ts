import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'
import type { CandleStore } from './candle-store'
import type { MarketConfig } from './config'
import type { QuoteHub } from './quotes'
import type { ReferenceData } from './reference'

/** What the market module's services work with. */
export interface MarketCtx extends Kernel {
  accounts: AccountsApi
  settings: MarketConfig
  refdata: ReferenceData
  candles: CandleStore
  quotes: QuoteHub
}
