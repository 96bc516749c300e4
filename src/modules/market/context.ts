import type { Queryable } from '../../kernel/db/client'
import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'
import type { CandleStore } from './candle-store'
import type { MarketConfig } from './config'
import type { QuoteHub } from './quotes'
import type { ReferenceData } from './reference'

/**
 * Who holds open positions or pending orders, the orders read in `q` (the caller's write transaction): the
 * trading module provides it (SymbolHoldersPort).
 */
export interface SymbolHolders {
  /** The groups of the accounts holding them in a symbol. */
  groups(q: Queryable, symbol: string): Promise<number[]>
  /** Some (up to 10) of `symbols` that accounts of a group of the brand hold them in; bounded by the brand. */
  inGroup(q: Queryable, brandId: number, groupId: number, symbols: readonly string[]): Promise<string[]>
}

/** What the market module's services work with. */
export interface MarketCtx extends Kernel {
  accounts: AccountsApi
  settings: MarketConfig
  refdata: ReferenceData
  candles: CandleStore
  quotes: QuoteHub
  /** SymbolHoldersPort, read when used (trading is set up after market); none without it. */
  holders: SymbolHolders
}
