import { conversionRate, type QuoteLookup } from '../../market/pure'

/** What the formulas need of a symbol (spec 2.8 field names in camelCase). */
export interface SymbolSpec {
  symbol: string
  digits: number
  contractSize: number
  tickSize: number
  tickValue: number
  marginCurrency: string
  quoteCurrency: string
  currency: string
  marginMode: number
  marginDivider: number
  marginInitial: number
  profitMode: number
  swapType: number
  swapLong: number
  swapShort: number
}

const MARGIN_MODE = { FOREX: 0, CFD: 1, FUTURES: 2, CFD_INDEX: 3, CFD_LEVERAGE: 4 } as const
const PROFIT_MODE = { FOREX: 0, CFD: 1, FUTURES: 2 } as const

export const isBuy = (cmd: number) => cmd % 2 === 0
const lots = (volume: number) => volume / 100
export const point = (digits: number) => 10 ** -digits
export const roundTo = (x: number, digits: number) => Math.round(x * 10 ** digits) / 10 ** digits

/**
 * Margin of a position in the currency it is computed in, and that currency (MetaTrader margin modes):
 * - forex:        lots * contract_size / leverage                               (margin currency)
 * - CFD:          lots * contract_size * price                                  (profit currency)
 * - futures:      lots * margin_initial                                         (margin currency)
 * - CFD index:    lots * contract_size * price * tick_value / tick_size         (profit currency)
 * - CFD leverage: lots * contract_size * price / leverage                       (profit currency)
 * then divided by margin_divider (the group override when there is one).
 */
function rawMargin(
  s: SymbolSpec,
  volume: number,
  price: number,
  leverage: number,
  marginDivider = s.marginDivider,
): { amount: number; currency: string } {
  const l = lots(volume)
  const divider = marginDivider > 0 ? marginDivider : 1
  let amount: number
  let currency = s.quoteCurrency
  switch (s.marginMode) {
    case MARGIN_MODE.FOREX:
      amount = (l * s.contractSize) / leverage
      currency = s.marginCurrency
      break
    case MARGIN_MODE.FUTURES:
      amount = l * s.marginInitial
      currency = s.marginCurrency
      break
    case MARGIN_MODE.CFD_INDEX:
      amount = (l * s.contractSize * price * s.tickValue) / s.tickSize
      break
    case MARGIN_MODE.CFD_LEVERAGE:
      amount = (l * s.contractSize * price) / leverage
      break
    default:
      amount = l * s.contractSize * price
  }
  return { amount: amount / divider, currency }
}

/** Margin in the account currency; null when no cross rate exists. */
export function marginInAccount(
  s: SymbolSpec,
  volume: number,
  price: number,
  leverage: number,
  accountCurrency: string,
  quotes: QuoteLookup,
  marginDivider?: number,
): number | null {
  const m = rawMargin(s, volume, price, leverage, marginDivider)
  const rate = conversionRate(m.currency, accountCurrency, quotes)
  return rate === null ? null : m.amount * rate
}

/**
 * Profit in the profit (quote) currency:
 * - forex and CFD: (close - open) * contract_size * lots
 * - futures:       (close - open) / tick_size * tick_value * lots
 * negated for sells.
 */
export function rawProfit(s: SymbolSpec, cmd: number, volume: number, open: number, close: number): number {
  const diff = isBuy(cmd) ? close - open : open - close
  const l = lots(volume)
  if (s.profitMode === PROFIT_MODE.FUTURES) return (diff / s.tickSize) * s.tickValue * l
  return diff * s.contractSize * l
}

export function profitInAccount(
  s: SymbolSpec,
  cmd: number,
  volume: number,
  open: number,
  close: number,
  accountCurrency: string,
  quotes: QuoteLookup,
): number | null {
  const rate = conversionRate(s.quoteCurrency, accountCurrency, quotes)
  return rate === null ? null : rawProfit(s, cmd, volume, open, close) * rate
}

/** Group commission settings (MetaTrader ConGroupSec names). */
interface CommissionSpec {
  commBase: number
  /** 0 money (account currency), 1 pips, 2 percent of notional. */
  commType: number
  /** 0 per lot, 1 per deal. */
  commLots: number
}

/**
 * Round-turn commission charged when a position opens, as a negative amount in the account currency:
 * money: comm_base per lot (or per deal); pips: comm_base * point * contract_size per lot, converted from
 * the profit currency; percent: comm_base % of the notional lots * contract_size * price, converted.
 */
export function commission(
  s: SymbolSpec,
  c: CommissionSpec,
  volume: number,
  price: number,
  accountCurrency: string,
  quotes: QuoteLookup,
): number | null {
  if (c.commBase === 0) return 0
  const units = c.commLots === 1 ? 1 : lots(volume)
  if (c.commType === 0) return -Math.abs(c.commBase) * units
  const rate = conversionRate(s.quoteCurrency, accountCurrency, quotes)
  if (rate === null) return null
  if (c.commType === 1) return -Math.abs(c.commBase) * point(s.digits) * s.contractSize * units * rate
  return -(Math.abs(c.commBase) / 100) * lots(volume) * s.contractSize * price * rate
}

/**
 * Swap of one rollover for a position, in the account currency:
 * - points (0):   swap * point * contract_size * lots        (profit currency)
 * - money (1):    swap * lots                                (base currency)
 * - interest (2): lots * contract_size * price * swap / 100 / 360   (profit currency)
 * `days` is 3 on the triple-swap weekday.
 */
export function swapCharge(
  s: SymbolSpec,
  cmd: number,
  volume: number,
  price: number,
  days: number,
  accountCurrency: string,
  quotes: QuoteLookup,
): number | null {
  const rate = isBuy(cmd) ? s.swapLong : s.swapShort
  const l = lots(volume)
  let amount: number
  let currency = s.quoteCurrency
  if (s.swapType === 1) {
    amount = rate * l
    currency = s.currency
  } else if (s.swapType === 2) amount = (l * s.contractSize * price * rate) / 100 / 360
  else amount = rate * point(s.digits) * s.contractSize * l
  const conv = conversionRate(currency, accountCurrency, quotes)
  return conv === null ? null : amount * days * conv
}
