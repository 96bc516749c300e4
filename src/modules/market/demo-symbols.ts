import { type DaySessions, weekSessions } from './domain/sessions'
import type { symbols } from './schema'

type SymbolRow = typeof symbols.$inferInsert

// Server time is UTC. Forex trades 24/5 (Sunday 22:00 to Friday 22:00); stocks during the NYSE day.
const FOREX = weekSessions([[0, 0, 24, 0]], { sunday: [[22, 0, 24, 0]], friday: [[0, 0, 22, 0]] })
const METALS = weekSessions(
  [
    [0, 0, 21, 0],
    [22, 0, 24, 0],
  ],
  { sunday: [[23, 0, 24, 0]], friday: [[0, 0, 21, 0]] },
)
const CFD = weekSessions(
  [
    [1, 0, 21, 0],
    [22, 0, 24, 0],
  ],
  { sunday: [[23, 0, 24, 0]], friday: [[1, 0, 21, 0]] },
)
const CRYPTO = weekSessions([[0, 0, 24, 0]], { sunday: [[0, 0, 24, 0]], saturday: [[0, 0, 24, 0]] })
const STOCKS = weekSessions([[14, 30, 21, 0]])

interface Def {
  symbol: string
  description: string
  base: string
  quote: string
  sec: 'Forex' | 'Metals' | 'Indices' | 'Energies' | 'Crypto' | 'Stocks'
  digits: number
  contract: number
  price: number
  vol: number
  /** Typical spread in points, used by the simulator (the symbol itself quotes a floating spread). */
  spread: number
  marginMode?: number
  profitMode?: number
  divider?: number
  marginInitial?: number
  tickSize?: number
  tickValue?: number
  swap?: [type: number, long: number, short: number]
  sessions: DaySessions[]
  stopsLevel?: number
  longOnly?: number
  meta?: Partial<SymbolRow>
}

const fx = (
  symbol: string,
  price: number,
  digits: number,
  vol: number,
  spread: number,
  swap: [number, number],
): Def => ({
  symbol,
  description: `${symbol.slice(0, 3)} vs ${symbol.slice(3)}`,
  base: symbol.slice(0, 3),
  quote: symbol.slice(3),
  sec: 'Forex',
  digits,
  contract: 100000,
  price,
  vol,
  spread,
  swap: [0, ...swap],
  sessions: FOREX,
  stopsLevel: 10,
  meta: { category: 'Currencies', exchange: 'OTC' },
})

const stock = (
  symbol: string,
  description: string,
  price: number,
  industry: string,
  sector: string,
  cap: number,
  holders: number,
  longOnly = 0,
): Def => ({
  symbol,
  description,
  base: 'USD',
  quote: 'USD',
  sec: 'Stocks',
  digits: 2,
  contract: 1,
  price,
  vol: 0.3,
  spread: 4,
  marginMode: 1,
  profitMode: 1,
  divider: 5,
  swap: [2, -5, -3],
  sessions: STOCKS,
  longOnly,
  meta: {
    exchange: 'NASDAQ',
    category: 'Stocks',
    industry,
    sector,
    marketCap: cap,
    shareholders: holders,
    ratings: JSON.stringify({ buy: 28, hold: 9, sell: 2 }),
  },
})

const DEFS: Def[] = [
  fx('EURUSD', 1.085, 5, 0.07, 10, [-6.5, 1.2]),
  fx('GBPUSD', 1.27, 5, 0.08, 14, [-4.1, -0.8]),
  fx('USDJPY', 149.5, 3, 0.09, 12, [12.3, -22.5]),
  fx('USDCHF', 0.885, 5, 0.07, 15, [5.2, -12.1]),
  fx('AUDUSD', 0.655, 5, 0.1, 12, [-3.3, -1.5]),
  fx('USDCAD', 1.355, 5, 0.06, 16, [2.1, -9.4]),
  fx('NZDUSD', 0.61, 5, 0.1, 16, [-2.9, -1.9]),
  fx('EURGBP', 0.855, 5, 0.05, 15, [-5.6, 0.4]),
  fx('EURJPY', 162.2, 3, 0.09, 18, [6.1, -17.3]),
  fx('GBPJPY', 189.9, 3, 0.11, 25, [9.8, -21.6]),
  fx('EURCHF', 0.96, 5, 0.06, 18, [-1.2, -4.4]),
  fx('AUDJPY', 97.9, 3, 0.12, 20, [5.5, -13.1]),
  fx('EURAUD', 1.656, 5, 0.09, 22, [-9.1, 2.2]),
  fx('CADJPY', 110.3, 3, 0.1, 22, [4.9, -12.8]),
  {
    symbol: 'XAUUSD',
    description: 'Gold vs US Dollar',
    base: 'XAU',
    quote: 'USD',
    sec: 'Metals',
    digits: 2,
    contract: 100,
    price: 2050,
    vol: 0.14,
    spread: 30,
    swap: [0, -25.4, 10.2],
    sessions: METALS,
    stopsLevel: 20,
    meta: { category: 'Metals', exchange: 'OTC' },
  },
  {
    symbol: 'XAGUSD',
    description: 'Silver vs US Dollar',
    base: 'XAG',
    quote: 'USD',
    sec: 'Metals',
    digits: 3,
    contract: 5000,
    price: 23.5,
    vol: 0.22,
    spread: 30,
    swap: [0, -6.1, 1.8],
    sessions: METALS,
    meta: { category: 'Metals', exchange: 'OTC' },
  },
  ...(
    [
      ['US30', 'Dow Jones 30 Index', 'USD', 1, 38500, 300],
      ['US500', 'S&P 500 Index', 'USD', 2, 4950, 50],
      ['NAS100', 'Nasdaq 100 Index', 'USD', 2, 17500, 150],
      ['GER40', 'DAX 40 Index', 'EUR', 1, 17000, 20],
      ['UK100', 'FTSE 100 Index', 'GBP', 1, 7650, 15],
      ['JP225', 'Nikkei 225 Index', 'JPY', 0, 36000, 10],
    ] as const
  ).map(
    ([symbol, description, quote, digits, price, spread]): Def => ({
      symbol,
      description,
      base: quote,
      quote,
      sec: 'Indices',
      digits,
      contract: 1,
      price,
      vol: 0.16,
      spread,
      marginMode: 4,
      profitMode: 1,
      divider: 1,
      swap: [0, -150, -80],
      sessions: CFD,
      meta: { category: 'Indices', exchange: 'CASH' },
    }),
  ),
  {
    symbol: 'XTIUSD',
    description: 'WTI Crude Oil',
    base: 'USD',
    quote: 'USD',
    sec: 'Energies',
    digits: 2,
    contract: 1000,
    price: 75.5,
    vol: 0.35,
    spread: 4,
    marginMode: 1,
    profitMode: 1,
    divider: 10,
    swap: [0, -1.5, -0.8],
    sessions: CFD,
    meta: { category: 'Energies', exchange: 'NYMEX' },
  },
  {
    symbol: 'XBRUSD',
    description: 'Brent Crude Oil',
    base: 'USD',
    quote: 'USD',
    sec: 'Energies',
    digits: 2,
    contract: 1000,
    price: 80.2,
    vol: 0.33,
    spread: 5,
    marginMode: 1,
    profitMode: 1,
    divider: 10,
    swap: [0, -1.4, -0.9],
    sessions: CFD,
    meta: { category: 'Energies', exchange: 'ICE' },
  },
  {
    symbol: 'XNGUSD',
    description: 'Natural Gas futures',
    base: 'USD',
    quote: 'USD',
    sec: 'Energies',
    digits: 3,
    contract: 10000,
    price: 2.55,
    vol: 0.6,
    spread: 8,
    marginMode: 2,
    profitMode: 2,
    marginInitial: 2500,
    tickSize: 0.001,
    tickValue: 10,
    swap: [0, -3, -3],
    sessions: CFD,
    meta: { category: 'Energies', exchange: 'NYMEX' },
  },
  ...(
    [
      ['BTCUSD', 'Bitcoin vs US Dollar', 'BTC', 2, 43000, 0.6, 3000],
      ['ETHUSD', 'Ethereum vs US Dollar', 'ETH', 2, 2300, 0.7, 200],
      ['LTCUSD', 'Litecoin vs US Dollar', 'LTC', 2, 70, 0.8, 20],
      ['XRPUSD', 'Ripple vs US Dollar', 'XRP', 5, 0.55, 0.9, 40],
    ] as const
  ).map(
    ([symbol, description, base, digits, price, vol, spread]): Def => ({
      symbol,
      description,
      base,
      quote: 'USD',
      sec: 'Crypto',
      digits,
      contract: 1,
      price,
      vol,
      spread,
      marginMode: 4,
      profitMode: 1,
      divider: 5,
      swap: [2, -20, -20],
      sessions: CRYPTO,
      meta: { category: 'Crypto', exchange: 'OTC' },
    }),
  ),
  stock('AAPL', 'Apple Inc.', 185.5, 'Consumer Electronics', 'Technology', 2.9e12, 6200),
  stock('MSFT', 'Microsoft Corporation', 400, 'Software', 'Technology', 3.0e12, 5900),
  stock('TSLA', 'Tesla Inc.', 210, 'Automobiles', 'Consumer Cyclical', 6.7e11, 4100, 1),
  stock('AMZN', 'Amazon.com Inc.', 155, 'Internet Retail', 'Consumer Cyclical', 1.6e12, 5200),
  stock('NVDA', 'NVIDIA Corporation', 600, 'Semiconductors', 'Technology', 1.5e12, 4800),
]

/** The demo universe: 34 symbols with realistic digits, contracts, sessions, swaps and simulator settings. */
/** A week of the symbol's Wednesday hours: its session breaks stay, its weekend closure does not. */
const midweekEveryDay = (week: DaySessions[]): DaySessions[] => week.map(() => week[3]!)

export function demoSymbols(now: number, opts: { weekendTrading?: boolean } = {}): SymbolRow[] {
  return DEFS.map((d) => {
    const pt = 10 ** -d.digits
    return {
      symbol: d.symbol,
      description: d.description,
      currency: d.base,
      marginCurrency: d.base,
      quoteCurrency: d.quote,
      secGroup: d.sec,
      digits: d.digits,
      tickSize: d.tickSize ?? pt,
      tickValue: d.tickValue ?? pt * d.contract,
      contractSize: d.contract,
      spread: 0,
      simSpread: d.spread,
      stopsLevel: d.stopsLevel ?? 0,
      longOnly: d.longOnly ?? 0,
      profitMode: d.profitMode ?? 0,
      swapType: d.swap?.[0] ?? 0,
      swapLong: d.swap?.[1] ?? 0,
      swapShort: d.swap?.[2] ?? 0,
      marginMode: d.marginMode ?? 0,
      marginDivider: d.divider ?? 1,
      marginInitial: d.marginInitial ?? 0,
      sessions: JSON.stringify(opts.weekendTrading ? midweekEveryDay(d.sessions) : d.sessions),
      simPrice: d.price,
      simVolatility: d.vol,
      updatedAt: now,
      ...d.meta,
    }
  })
}

/** Group security settings of the demo groups: commissions on real groups, stocks hidden for EUR accounts. */
export function demoSecurities(groupName: string) {
  const real = !groupName.startsWith('demo')
  const base = { show: 1, trade: 1, lotMin: 1, lotMax: 10000, lotStep: 1 }
  return [
    { secGroup: 'Forex', ...base, commBase: real ? 7 : 0, commType: 0, commLots: 0, commAgent: real ? 1 : 0 },
    { secGroup: 'Metals', ...base, commBase: real ? 10 : 0, commType: 0, commLots: 0 },
    { secGroup: 'Indices', ...base, commBase: 0, commType: 0, commLots: 0 },
    { secGroup: 'Energies', ...base, commBase: real ? 2 : 0, commType: 1, commLots: 0 },
    { secGroup: 'Crypto', ...base, commBase: real ? 0.05 : 0, commType: 2, commLots: 0 },
    {
      secGroup: 'Stocks',
      ...base,
      show: groupName === 'real\\EUR' ? 0 : 1,
      lotMin: 100,
      lotStep: 100,
      lotMax: 100000,
      commBase: real ? 0.1 : 0,
      commType: 2,
      commLots: 0,
    },
  ]
}

/** Per-symbol overrides of the demo groups. */
export const DEMO_OVERRIDES: Record<string, { symbol: string; spread?: number; marginDivider?: number }[]> = {
  'real\\USD': [{ symbol: 'XAUUSD', spread: 40, marginDivider: 2 }],
  'real\\EUR': [{ symbol: 'EURUSD', spread: 8 }],
}
