import type { Kernel } from '../../kernel/kernel'
import type { AccountsApi } from '../accounts'
import type { MarketApi } from '../market'
import type { TradingApi } from '../trading'

/** What the copy trading services work with: the kernel and the ports of accounts, market and trading. */
export interface CopyCtx extends Kernel {
  accounts: AccountsApi
  market: MarketApi
  trading: TradingApi
  /**
   * Bounds the trades the copier has in flight (a fan-out of 1,000 would otherwise send 1,000 requests
   * at once to a remote database: sqld answers 429 beyond its limit). At the edge none: a queue shared
   * by an isolate's requests is started from whichever request freed a place, and a place held by a
   * request that ended is never freed (docs/architecture.md, Workers).
   */
  limit: <T>(fn: () => Promise<T>) => Promise<T>
  /** Drops the cached manual_trading_mode of follower logins (copier/manual-guard.ts) after a change. */
  forgetManual(...logins: number[]): Promise<unknown>
}
