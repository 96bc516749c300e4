import { roundToCurrency } from './money'

/** Figures of an account in its currency (major units). */
interface MarginInputs {
  balance: number
  credit: number
  /** Floating profit of open positions, already converted to the account currency. */
  floatingProfit: number
  /** Margin held by open positions, in the account currency. */
  margin: number
  commission: number
  storage: number
}

export interface MarginSnapshot extends MarginInputs {
  equity: number
  margin_free: number
  margin_level: number
}

const round2 = (x: number) => Math.round(x * 100) / 100

/**
 * equity = balance + credit + floating profit (swap and commission of open positions are part of their
 * floating result); margin_level = equity / margin * 100, 0 without margin. Null when any figure is not a
 * finite number, which the sign-in route reports as INVALID_MARGIN_LEVEL.
 */
export function marginSnapshot(i: MarginInputs, currency: string): MarginSnapshot | null {
  const values = [i.balance, i.credit, i.floatingProfit, i.margin, i.commission, i.storage]
  if (!values.every(Number.isFinite) || i.margin < 0) return null
  // money at the currency's own decimals (0 for JPY, 8 for BTC); the level is a percentage
  const money = (x: number) => roundToCurrency(x, currency)
  const equity = money(i.balance + i.credit + i.floatingProfit + i.commission + i.storage)
  return {
    ...i,
    equity,
    margin: money(i.margin),
    margin_free: money(equity - i.margin),
    margin_level: i.margin > 0 ? round2((equity / i.margin) * 100) : 0,
  }
}

/**
 * The free margin that is the trader's own: without the broker's credit. What money leaving an account
 * (a withdrawal, a fee, a payout) may take: credit supports trading, it is never paid out nor left to
 * carry positions alone.
 */
export const ownFreeMargin = (m: Pick<MarginSnapshot, 'margin_free' | 'credit'>) => m.margin_free - m.credit
