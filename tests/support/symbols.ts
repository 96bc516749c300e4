import type { SymbolSpec } from '../../src/modules/trading/domain/formulas'

/** Seven days (Sunday first) open around the clock. */
export const allDay = Array.from({ length: 7 }, () => ({
  trade_overnight: 1,
  trade: [{ open_hour: 0, open_min: 0, close_hour: 24, close_min: 0 }],
}))

/** A body for POST /manager/symbols: a EUR/USD-like forex pair trading around the clock. */
export const forexSymbol = (symbol: string, extra: Record<string, unknown> = {}) => ({
  symbol,
  description: `test pair ${symbol}`,
  currency: 'EUR',
  margin_currency: 'EUR',
  quote_currency: 'USD',
  sec_group: 'Forex',
  digits: 5,
  tick_size: 0.00001,
  tick_value: 1,
  contract_size: 100000,
  sessions: allDay,
  sim_price: 1.2,
  sim_volatility: 0.07,
  ...extra,
})

/** What the pure formulas read of a symbol: a EUR/USD-like pair (contract 100,000, 5 digits), with changes. */
export const spec = (p: Partial<SymbolSpec>): SymbolSpec => ({
  symbol: 'X',
  digits: 5,
  contractSize: 100000,
  tickSize: 0.00001,
  tickValue: 1,
  marginCurrency: 'EUR',
  quoteCurrency: 'USD',
  currency: 'EUR',
  marginMode: 0,
  marginDivider: 1,
  marginInitial: 0,
  profitMode: 0,
  swapType: 0,
  swapLong: 0,
  swapShort: 0,
  ...p,
})
