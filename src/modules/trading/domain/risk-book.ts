import { lowerBound, upperBound } from '../../../kernel/sorted'
import type { PriceBand } from './risk-band'

interface Level {
  level: number
  login: number
}

/** Inserts keeping `a` sorted by level. */
function insert(a: Level[], e: Level) {
  a.splice(upperBound(a, e.level), 0, e)
}

/** Removes the entry of `login` at `level`. */
function remove(a: Level[], level: number, login: number) {
  for (let i = lowerBound(a, level); i < a.length && a[i].level === level; i++)
    if (a[i].login === login) {
      a.splice(i, 1)
      return
    }
}

/**
 * The risk bands of watched accounts, per symbol (see risk-band.ts): a tick finds the accounts whose band
 * it leaves by two binary searches, the lower edges above its bid and the upper edges below its ask.
 */
export class RiskBook {
  private readonly lows = new Map<string, Level[]>()
  private readonly highs = new Map<string, Level[]>()
  private readonly byLogin = new Map<number, PriceBand[]>()

  /** Logins with bands. */
  get size() {
    return this.byLogin.size
  }

  set(login: number, bands: PriceBand[]) {
    this.delete(login)
    this.byLogin.set(login, bands)
    for (const b of bands) {
      const lows = this.lows.get(b.symbol) ?? []
      const highs = this.highs.get(b.symbol) ?? []
      insert(lows, { level: b.lo, login })
      insert(highs, { level: b.hi, login })
      this.lows.set(b.symbol, lows)
      this.highs.set(b.symbol, highs)
    }
  }

  delete(login: number) {
    const bands = this.byLogin.get(login)
    if (!bands) return
    this.byLogin.delete(login)
    for (const b of bands) {
      remove(this.lows.get(b.symbol) ?? [], b.lo, login)
      remove(this.highs.get(b.symbol) ?? [], b.hi, login)
    }
  }

  clear() {
    this.lows.clear()
    this.highs.clear()
    this.byLogin.clear()
  }

  /**
   * Calls `out` with each login whose band of `symbol` a tick at (bid, ask) leaves (a login may come twice),
   * the one the tick leaves furthest behind first: an account near a limit has a narrow band, so a move
   * passes its edge by the most, and the monitor looks at logins in this order (a 1 % move left 1,400 of
   * 10,000 challenges' bands; the one it breached waited behind the others). Bands that hold on no tick
   * (edges at infinity) come first.
   */
  leaving(symbol: string, bid: number, ask: number, out: (login: number) => void) {
    const lows = this.lows.get(symbol)
    if (lows) for (let i = lows.length - 1, end = upperBound(lows, bid); i >= end; i--) out(lows[i].login)
    const highs = this.highs.get(symbol)
    if (highs) for (let i = 0, end = lowerBound(highs, ask); i < end; i++) out(highs[i].login)
  }
}
