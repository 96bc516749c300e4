import { integer, primaryKey, real, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/**
 * Tradable instruments (spec 2.8). Symbols are server reference data shared by every brand of the
 * deployment; groups decide per brand what is visible and tradable. Prices are doubles rounded to `digits`.
 */
export const symbols = sqliteTable('symbols', {
  symbol: text('symbol').primaryKey(),
  description: text('description').notNull(),
  /** Base currency (forex) or the instrument's currency. */
  currency: text('currency').notNull(),
  marginCurrency: text('margin_currency').notNull(),
  /** Profit currency. */
  quoteCurrency: text('quote_currency').notNull(),
  /** Security group name, e.g. Forex, Metals; group security settings are keyed by it. */
  secGroup: text('sec_group').notNull(),
  digits: integer('digits').notNull(),
  tickSize: real('tick_size').notNull(),
  tickValue: real('tick_value').notNull(),
  contractSize: integer('contract_size').notNull(),
  /** 0 disabled, 1 close only, 2 full access. */
  trade: integer('trade').notNull().default(2),
  /** Fixed spread in points (0 = floating: the source spread is kept), as MetaTrader's symbol spread. */
  spread: integer('spread').notNull().default(0),
  spreadBalance: integer('spread_balance').notNull().default(0),
  stopsLevel: integer('stops_level').notNull().default(0),
  /**
   * Seconds a quote stays good for a fill while the symbol's session is open (0: no limit): a symbol whose
   * feed stopped while the others tick is refused at its last price (trading: 503 PRICE_STALE).
   */
  maxQuoteAge: integer('max_quote_age').notNull().default(0),
  longOnly: integer('long_only').notNull().default(0),
  exemode: integer('exemode').notNull().default(1),
  /** 0 forex, 1 CFD, 2 futures. */
  profitMode: integer('profit_mode').notNull().default(0),
  gtcPendings: integer('gtc_pendings').notNull().default(1),
  swapEnable: integer('swap_enable').notNull().default(1),
  /** 0 points, 1 money in base currency per lot, 2 annual interest percent. */
  swapType: integer('swap_type').notNull().default(0),
  swapLong: real('swap_long').notNull().default(0),
  swapShort: real('swap_short').notNull().default(0),
  /** Weekday (0 Sunday .. 6 Saturday) whose rollover is charged three times. */
  swapRollover3days: integer('swap_rollover3days').notNull().default(3),
  /** 0 forex, 1 CFD, 2 futures, 3 CFD index, 4 CFD leverage (MetaTrader margin modes). */
  marginMode: integer('margin_mode').notNull().default(0),
  marginDivider: real('margin_divider').notNull().default(1),
  marginInitial: real('margin_initial').notNull().default(0),
  marginMaintenance: real('margin_maintenance').notNull().default(0),
  marginHedged: real('margin_hedged').notNull().default(0),
  instantMaxVolume: integer('instant_max_volume').notNull().default(0),
  maxVolume: integer('max_volume').notNull().default(0),
  exchange: text('exchange').notNull().default(''),
  category: text('category').notNull().default(''),
  industry: text('industry').notNull().default(''),
  sector: text('sector').notNull().default(''),
  marketCap: real('market_cap').notNull().default(0),
  shareholders: integer('shareholders').notNull().default(0),
  ratings: text('ratings').notNull().default('{}'),
  icon: text('icon').notNull().default(''),
  /** JSON: 7 days (Sunday first) of { trade_overnight, trade: [{open_hour, open_min, close_hour, close_min}] }. */
  sessions: text('sessions').notNull(),
  /** Simulator parameters: starting price and annual volatility (GBM sigma). */
  simPrice: real('sim_price').notNull(),
  simVolatility: real('sim_volatility').notNull(),
  /** Simulator spread in points. */
  simSpread: integer('sim_spread').notNull().default(10),
  updatedAt: integer('updated_at').notNull(),
})

/** Per group and security group: visibility, trading, volume limits and commissions (MetaTrader ConGroupSec). */
export const groupSecurities = sqliteTable(
  'group_securities',
  {
    groupId: integer('group_id').notNull(),
    secGroup: text('sec_group').notNull(),
    show: integer('show').notNull().default(1),
    trade: integer('trade').notNull().default(1),
    /** Lots as hundredths (100 = 1.00 lot), the unit of the trade routes' volume. */
    lotMin: integer('lot_min').notNull().default(1),
    lotMax: integer('lot_max').notNull().default(10000),
    lotStep: integer('lot_step').notNull().default(1),
    /** Spread widening in points added on top of the symbol's spread. */
    spreadDiff: integer('spread_diff').notNull().default(0),
    commBase: real('comm_base').notNull().default(0),
    /** 0 money per lot (account currency), 1 pips, 2 percent of notional. */
    commType: integer('comm_type').notNull().default(0),
    /** 0 per lot, 1 per deal. */
    commLots: integer('comm_lots').notNull().default(0),
    commAgent: real('comm_agent').notNull().default(0),
    commAgentType: integer('comm_agent_type').notNull().default(0),
    commAgentLots: integer('comm_agent_lots').notNull().default(0),
    commTax: real('comm_tax').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.secGroup] })],
)

/** Per group and symbol overrides (null = use the symbol's value). */
export const groupSymbols = sqliteTable(
  'group_symbols',
  {
    groupId: integer('group_id').notNull(),
    symbol: text('symbol').notNull(),
    spread: integer('spread'),
    spreadBalance: integer('spread_balance'),
    marginDivider: real('margin_divider'),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.symbol] })],
)

/** OHLC bars: M1 from ticks, H1 and D1 rolled up from M1. `time` is the bar open, epoch seconds. */
export const candles = sqliteTable(
  'candles',
  {
    symbol: text('symbol').notNull(),
    timeframe: text('timeframe', { enum: ['M1', 'H1', 'D1'] }).notNull(),
    time: integer('time').notNull(),
    open: real('open').notNull(),
    high: real('high').notNull(),
    low: real('low').notNull(),
    close: real('close').notNull(),
    volume: integer('volume').notNull(),
  },
  (t) => [primaryKey({ columns: [t.symbol, t.timeframe, t.time] })],
)

export const marketWatch = sqliteTable(
  'market_watch',
  {
    login: integer('login').notNull(),
    symbol: text('symbol').notNull(),
    sortIndex: integer('sort_index').notNull(),
    color: text('color').notNull().default(''),
  },
  (t) => [primaryKey({ columns: [t.login, t.symbol] })],
)

/**
 * The latest quote of each symbol, saved every few seconds and at shutdown: after a restart without a
 * shared cache the service prices positions from it until the first tick arrives.
 */
export const lastQuotes = sqliteTable('last_quotes', {
  symbol: text('symbol').primaryKey(),
  bid: real('bid').notNull(),
  ask: real('ask').notNull(),
  /** Epoch milliseconds of the quote. */
  time: integer('time').notNull(),
})

/** The market watch a new account of a group starts with (PUT /manager/groups/{id}/watch). */
export const groupWatchDefaults = sqliteTable('group_watch_defaults', {
  groupId: integer('group_id').primaryKey(),
  /** JSON array of symbol names, in display order. */
  symbols: text('symbols').notNull(),
})
