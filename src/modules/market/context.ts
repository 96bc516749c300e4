import type { Queryable } from '../../kernel/db/client'
import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'
import type { CandleStore } from './candle-store'
import type { MarketConfig } from './config'
import type { QuoteHub } from './quotes'
import type { ReferenceData } from './reference'

/**
 * The groups of the accounts holding open positions or pending orders in a symbol, the orders read in `q`
 * (the caller's write transaction): the trading module provides it (SymbolHoldersPort).
 */
export type SymbolHolders = (q: Queryable, symbol: string) => Promise<number[]>

/** What the market module's services work with. */
export interface MarketCtx extends Kernel {
  accounts: AccountsApi
  settings: MarketConfig
  refdata: ReferenceData
  candles: CandleStore
  quotes: QuoteHub
  /** SymbolHoldersPort, read when used (trading is set up after market); none without it. */
  holderGroups: SymbolHolders
}
