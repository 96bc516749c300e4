/**
 * An extension point of the engine: a module that holds accounts to limits of its own (prop challenges'
 * loss limits) sees their equity, on the engine role, whenever a tick could have brought one of them to
 * a limit, and may have the engine close every position of an account at the quote that broke it.
 *
 * The engine does not price every watched account on every tick: after each look the watcher says how
 * much equity the account may lose before it must look again (`headroom`), and the engine turns that
 * into price bands (domain/risk-band.ts) that a tick must leave for the account to be looked at again.
 */
export interface RiskWatcher {
  /** Whether a login is watched now. */
  watches(login: number): boolean
  /** The engine's hook for a login to be looked at again whatever the price (its limits or balance changed). */
  listen(recheck: (login: number) => void): void
  /**
   * Balance and equity (minor units of the account currency, floating profit included) at the tick of
   * `tickTime`: `close` when every position of the account must be closed now (the watcher has recorded
   * why, and disabled the account's trading, before answering), else the room left.
   */
  check(
    login: number,
    figures: { balance: number; equity: number },
    tickTime: number,
  ): Promise<'close' | RiskRoom>
  /** The engine closed the account's positions (`closed` of them) after a `close`. */
  closedOut(login: number, closed: number): void
}

export interface RiskRoom {
  /** Equity (minor units) the account may lose before the watcher must look again. */
  headroom: number
  /** Epoch ms after which the watcher must look again whatever the price (e.g. its day ends). */
  until: number
}
