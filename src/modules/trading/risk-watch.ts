/**
 * An extension point of the engine: a module that holds accounts to limits of its own (prop challenges'
 * loss limits) sees their equity on every tick that moves one of their positions, on the engine role,
 * and may have the engine close every position of an account at the quote that broke the limit.
 */
export interface RiskWatcher {
  /** Whether a login is watched now (its positions are priced when their symbols move). */
  watches(login: number): boolean
  /**
   * Balance and equity (minor units of the account currency, floating profit included) at the tick of
   * `tickTime`; `close` when every position of the account must be closed now (the watcher has recorded
   * why, and disabled the account's trading, before answering).
   */
  check(
    login: number,
    figures: { balance: number; equity: number },
    tickTime: number,
  ): Promise<'close' | null>
  /** The engine closed the account's positions (`closed` of them) after a `close`. */
  closedOut(login: number, closed: number): void
}
