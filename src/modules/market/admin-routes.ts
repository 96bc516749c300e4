import { Elysia, type Static, t } from 'elysia'
import { STAFF_SESSIONS } from '../../kernel/auth/session'
import { doc, errors } from '../../kernel/http/openapi'
import { Id, Int, nameModels, Ok, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import { MAX_AMOUNT, MAX_PRICE, MAX_VOLUME } from '../../kernel/limits'
import {
  createSymbol,
  deleteOverride,
  groupTradingSettings,
  listSymbols,
  putOverride,
  putSecurity,
  updateSymbol,
} from './admin'
import type { MarketCtx } from './context'
import { operatorGuard } from './operator'
import { getDefaultWatch, setDefaultWatch } from './watch-defaults'

const ANY_STAFF = { roles: STAFF_SESSIONS }
const ADMINS = { roles: ['SESSION_ADMIN'] as const }
const GROUP_ADMINS = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }

const SymbolName = t.String({
  minLength: 1,
  maxLength: 32,
  pattern: '^[A-Za-z0-9._#-]+$',
  description: 'symbol name',
  example: 'EURUSD',
})
const SecGroup = t.String({
  minLength: 1,
  maxLength: 32,
  pattern: '^[A-Za-z0-9 _-]+$',
  description: 'security group, e.g. Forex',
  example: 'Forex',
})
const Flag = (description: string) => Int({ minimum: 0, maximum: 1, description })
const Points = (description: string) => Int({ minimum: 0, maximum: 1_000_000, description })
/**
 * Bounds of a margin divider, the symbol's and a group's override: margin is divided by it, so a divider
 * near 0 multiplies the margin of every open position of the symbol without limit (1e-300 stopped out every
 * holder on the next tick). 0.01 takes at most 100 times the margin; the seeds use 1 to 10.
 */
const MARGIN_DIVIDER = { minimum: 0.01, maximum: 1e6 } as const
const MARGIN_DIVIDER_TEXT =
  'margin is divided by it, 0.01 to 1e6 (0.5 doubles the margin, 2 halves it); the margin of open positions ' +
  'is recomputed with it at once: a lower divider can bring accounts to a margin call or stop-out on the next tick'
const Ratio = (description: string) => t.Number({ minimum: 0, maximum: MAX_AMOUNT, description })
const Interval = t.Object({
  open_hour: Int({ minimum: 0, maximum: 24, description: 'opening hour (UTC)' }),
  open_min: Int({ minimum: 0, maximum: 59, description: 'opening minute' }),
  close_hour: Int({ minimum: 0, maximum: 24, description: 'closing hour (UTC)' }),
  close_min: Int({ minimum: 0, maximum: 59, description: 'closing minute' }),
})
const Day = t.Object({
  trade_overnight: Flag('1: positions may be held over the day close'),
  trade: t.Array(Interval, { maxItems: 3, description: 'up to three trading intervals of the day' }),
})

/** Every settable field of a symbol (spec 2.8 names); required ones are listed in `SymbolCreate`. */
const symbolFields = {
  description: t.String({ maxLength: 128, description: 'display name, e.g. Euro vs US Dollar' }),
  currency: t.String({ pattern: '^[A-Z0-9]{2,8}$', description: 'base currency or the instrument' }),
  margin_currency: t.String({
    pattern: '^[A-Z]{3,4}$',
    description:
      'currency the margin is computed in (forex and futures margin modes); one the reference data knows (another symbol uses it, a symbol name pairs it, or a group keeps accounts in it)',
  }),
  quote_currency: t.String({
    pattern: '^[A-Z]{3,4}$',
    description: 'profit currency; one the reference data knows, as margin_currency',
  }),
  sec_group: SecGroup,
  digits: Int({
    minimum: 0,
    maximum: 8,
    description:
      'price decimals: quotes are rounded to them, and a point (spread, spread_balance, stops_level, swap in ' +
      "points, pip commissions, groups' spread overrides and spread_diff) is 10^-digits; not changed while held",
  }),
  tick_size: t.Number({
    exclusiveMinimum: 0,
    maximum: MAX_PRICE,
    description:
      'smallest price change: a whole number of points (a multiple of 10^-digits, at least one); futures profit ' +
      'and CFD-index margin are per tick (tick_value / tick_size), a ratio not changed while held',
  }),
  tick_value: t.Number({
    exclusiveMinimum: 0,
    maximum: MAX_PRICE,
    description: 'value of one tick for one lot, in the profit currency',
  }),
  contract_size: Int({
    minimum: 1,
    maximum: 1_000_000_000,
    description: 'units of the instrument in one lot',
  }),
  trade: Int({ minimum: 0, maximum: 2, description: '0 disabled, 1 close only, 2 full access' }),
  spread: Points('fixed spread in points; 0 keeps the source spread'),
  spread_balance: Int({
    minimum: -1_000_000,
    maximum: 1_000_000,
    description: 'points the spread is shifted towards the ask (+) or the bid (-)',
  }),
  stops_level: Points('minimum SL/TP distance from the price, in points'),
  max_quote_age: Int({
    minimum: 0,
    maximum: 86_400,
    description:
      "seconds a quote stays good for a fill while the session is open, from when it arrived: a client's or staff's order or close at an older price answers 503 PRICE_STALE (a feed that stopped for this symbol alone; the engine's stop-outs still execute); 0 no limit",
  }),
  long_only: Flag('1: sell orders are refused'),
  exemode: Int({ minimum: 0, maximum: 2, description: '0 request, 1 instant, 2 market execution' }),
  profit_mode: Int({ minimum: 0, maximum: 2, description: '0 forex, 1 CFD, 2 futures' }),
  gtc_pendings: Flag(
    '1: pending orders are good till cancelled; 0: day orders, kept until the end of the UTC day at most',
  ),
  swap_enable: Flag('1: positions are charged swap at rollover'),
  swap_type: Int({ minimum: 0, maximum: 2, description: '0 points, 1 money per lot, 2 interest %' }),
  swap_long: t.Number({
    minimum: -1e6,
    maximum: 1e6,
    description: 'swap of a long position (per swap_type)',
  }),
  swap_short: t.Number({
    minimum: -1e6,
    maximum: 1e6,
    description: 'swap of a short position (per swap_type)',
  }),
  swap_rollover3days: Int({
    minimum: 0,
    maximum: 6,
    description:
      "weekday (0 Sunday) whose rollover also charges the week's nights without one (1 + their number: " +
      'Wednesday x3 for a symbol closed at the weekend; x1 for one trading every day)',
  }),
  margin_mode: Int({
    minimum: 0,
    maximum: 4,
    description: '0 forex, 1 CFD, 2 futures, 3 CFD index, 4 CFD leverage',
  }),
  margin_divider: t.Number({ ...MARGIN_DIVIDER, description: MARGIN_DIVIDER_TEXT }),
  margin_initial: Ratio('initial margin per lot (futures mode); 0 computes it'),
  margin_maintenance: Ratio('maintenance margin per lot; 0 = initial'),
  margin_hedged: Ratio('margin of a hedged lot'),
  instant_max_volume: Int({ minimum: 0, maximum: MAX_VOLUME, description: 'largest instant volume; 0 none' }),
  max_volume: Int({
    minimum: 0,
    maximum: MAX_VOLUME,
    description: 'largest volume of a new order, market or pending (hundredths of a lot); 0 none',
  }),
  exchange: t.String({ maxLength: 64, description: 'exchange or venue' }),
  category: t.String({ maxLength: 64, description: 'category shown to clients' }),
  industry: t.String({ maxLength: 64, description: 'industry (stocks)' }),
  sector: t.String({ maxLength: 64, description: 'sector (stocks)' }),
  market_cap: t.Number({ minimum: 0, maximum: 1e16, description: 'market capitalisation (stocks)' }),
  shareholders: Int({ minimum: 0, description: 'number of shareholders (stocks)' }),
  ratings: t.Record(t.String({ pattern: '^.{1,32}$' }), t.Union([t.Number(), t.String({ maxLength: 64 })]), {
    maxProperties: 20,
    additionalProperties: false,
    description: 'analyst ratings, free keys',
  }),
  icon: t.String({ maxLength: 512, description: 'icon URL or reference' }),
  sessions: t.Array(Day, {
    minItems: 7,
    maxItems: 7,
    description: '7 days, Sunday first, server time (UTC)',
  }),
  sim_price: t.Number({ exclusiveMinimum: 0, maximum: MAX_PRICE, description: 'simulator start price' }),
  sim_volatility: t.Number({ minimum: 0, maximum: 5, description: 'simulator annual volatility' }),
  sim_spread: Points('simulator spread in points'),
}
type Field = keyof typeof symbolFields
const REQUIRED: Field[] = [
  'description',
  'currency',
  'margin_currency',
  'quote_currency',
  'sec_group',
  'digits',
  'tick_size',
  'tick_value',
  'contract_size',
  'sessions',
  'sim_price',
  'sim_volatility',
]
const optional = (keys: Field[]) =>
  Object.fromEntries(
    (Object.keys(symbolFields) as Field[]).map((k) => [
      k,
      keys.includes(k) ? symbolFields[k] : t.Optional(symbolFields[k]),
    ]),
  ) as { [K in Field]: (typeof symbolFields)[K] | ReturnType<typeof t.Optional> }

const WEEK = [
  { trade_overnight: 1, trade: [{ open_hour: 22, open_min: 0, close_hour: 24, close_min: 0 }] },
  ...Array.from({ length: 4 }, () => ({
    trade_overnight: 1,
    trade: [{ open_hour: 0, open_min: 0, close_hour: 24, close_min: 0 }],
  })),
  { trade_overnight: 0, trade: [{ open_hour: 0, open_min: 0, close_hour: 22, close_min: 0 }] },
  { trade_overnight: 0, trade: [] },
]
const SymbolCreate = t.Object(
  { symbol: SymbolName, ...optional(REQUIRED) },
  {
    example: {
      symbol: 'EURSEK',
      description: 'Euro vs Swedish Krona',
      currency: 'EUR',
      margin_currency: 'EUR',
      quote_currency: 'SEK',
      sec_group: 'Forex',
      digits: 5,
      tick_size: 0.00001,
      tick_value: 1,
      contract_size: 100000,
      sessions: WEEK,
      sim_price: 11.45,
      sim_volatility: 0.08,
    },
  },
)
const SymbolPatch = t.Object(optional([]), { minProperties: 1, example: { stops_level: 20 } })
const SymbolAdmin = t.Object(
  { symbol: t.String(), ...symbolFields, updated_time: Int() },
  { title: 'SymbolAdmin', additionalProperties: true },
)

/** The view is built column by column from the table; the response schema checks it at run time. */
const checked = <S extends typeof SymbolAdmin>(p: Promise<Record<string, unknown>>) => p as Promise<Static<S>>

const Security = t.Object({
  sec_group: t.String(),
  show: Int(),
  trade: Int(),
  lot_min: Int({ description: 'hundredths of a lot' }),
  lot_max: Int(),
  lot_step: Int(),
  spread_diff: Int({ description: 'points added to the symbol spread' }),
  comm_base: t.Number(),
  comm_type: Int({ description: '0 money, 1 pips, 2 percent' }),
  comm_lots: Int({ description: '0 per lot, 1 per deal' }),
  comm_agent: t.Number(),
  comm_agent_type: Int(),
  comm_agent_lots: Int(),
  comm_tax: t.Number(),
})
const SecurityBody = t.Object(
  {
    show: Flag('1: the group sees the security group'),
    trade: Flag('1: the group may trade it'),
    lot_min: Int({
      minimum: 1,
      maximum: MAX_VOLUME,
      description: 'smallest volume, hundredths of a lot (100 = 1.00)',
    }),
    lot_max: Int({ minimum: 1, maximum: MAX_VOLUME, description: 'largest volume, hundredths of a lot' }),
    lot_step: Int({ minimum: 1, maximum: MAX_VOLUME, description: 'volume step, hundredths of a lot' }),
    spread_diff: t.Optional(Points('points added to the symbol spread')),
    comm_base: t.Optional(
      t.Number({ minimum: 0, maximum: MAX_AMOUNT, description: 'commission (per comm_type)' }),
    ),
    comm_type: t.Optional(Int({ minimum: 0, maximum: 2, description: '0 money, 1 pips, 2 percent' })),
    comm_lots: t.Optional(Flag('0 per lot, 1 per deal')),
    comm_agent: t.Optional(t.Number({ minimum: 0, maximum: MAX_AMOUNT, description: 'agent commission' })),
    comm_agent_type: t.Optional(Int({ minimum: 0, maximum: 2, description: '0 money, 1 pips, 2 percent' })),
    comm_agent_lots: t.Optional(Flag('0 per lot, 1 per deal')),
    comm_tax: t.Optional(t.Number({ minimum: 0, maximum: 100, description: 'tax on commission, %' })),
  },
  { example: { show: 1, trade: 1, lot_min: 1, lot_max: 10000, lot_step: 1, comm_base: 7, comm_type: 0 } },
)
const Override = t.Object({
  symbol: t.String(),
  spread: t.Union([Int(), t.Null()]),
  spread_balance: t.Union([Int(), t.Null()]),
  margin_divider: t.Union([t.Number(), t.Null()]),
})
const OverrideBody = t.Object(
  {
    spread: t.Optional(
      t.Union([Points('fixed spread in points'), t.Null()], { description: 'null: the symbol value' }),
    ),
    spread_balance: t.Optional(
      t.Union([Int({ minimum: -1_000_000, maximum: 1_000_000 }), t.Null()], {
        description: 'points towards the ask (+) or bid (-); null: the symbol value',
      }),
    ),
    margin_divider: t.Optional(
      t.Union([t.Number(MARGIN_DIVIDER), t.Null()], {
        description: `${MARGIN_DIVIDER_TEXT}; null: the symbol value`,
      }),
    ),
  },
  { minProperties: 1, example: { spread: 15 } },
)
const GroupId = { id: Id('group id (GET /manager/groups)') }
const DefaultWatch = t.Object({
  group_id: Int(),
  symbols: t.Array(t.String(), { description: 'the starting market watch, in display order' }),
})
const GROUP_NOT_FOUND = { 404: ['GROUP_NOT_FOUND'] } as const

/** Staff routes maintaining symbols, group security settings and per-symbol overrides. */
/** How soon every instance holds a change of reference data (reference.ts, shared-version.ts). */
const ALL_INSTANCES =
  'All instances see the change within a second; when Redis did not answer the write, within a second of ' +
  'it answering again, and within 30 s in any case (an instance that cannot read Redis reloads every 5 s).'

export const marketAdminRoutes = (ctx: MarketCtx, operator = operatorGuard(ctx)) =>
  new Elysia({ name: 'market-admin-routes', seed: ctx.instanceId, prefix: '/manager' })
    .use(security(ctx))
    .get('/symbols', async () => ({ rows: (await listSymbols(ctx)).rows as Static<typeof SymbolAdmin>[] }), {
      auth: ANY_STAFF,
      response: { 200: t.Object({ rows: t.Array(SymbolAdmin) }), ...errors() },
      detail: doc('Reference data', 'Every symbol with all its settings'),
    })
    .post(
      '/symbols',
      async ({ brand, body }) => {
        await operator(brand)
        return checked(createSymbol(ctx, body))
      },
      {
        auth: ADMINS,
        body: SymbolCreate,
        response: { 200: SymbolAdmin, ...errors({ 403: ['NOT_OPERATOR_BRAND'], 409: ['SYMBOL_EXISTS'] }) },
        detail: doc('Reference data', 'Create a symbol (admin of an operator brand)', {
          description:
            'Symbols are shared by every brand of the deployment; groups decide per brand what is visible and ' +
            'tradable. Omitted fields take the defaults of spec 2.8 (trade 2, exemode 1, swap_rollover3days 3, ' +
            'margin_divider 1, ...). 409 SYMBOL_EXISTS for a name in use. ' +
            `${ALL_INSTANCES} ` +
            '400 INVALID_DATA names a margin_currency or quote_currency the reference data does not know (no other ' +
            "symbol uses it, no symbol name pairs it, the symbol's own included, and no group keeps accounts in it), " +
            'and tick_size when it is not a whole number of points (a multiple of 10^-digits, at least one: ' +
            '0.00001 takes digits 5 or more). margin_divider is 0.01 to 1e6. ' +
            "403 NOT_OPERATOR_BRAND for an admin of a brand not in OPERATOR_BRANDS (unset: the deployment's first brand).",
        }),
      },
    )
    .patch(
      '/symbols/:symbol',
      async ({ brand, params, body }) => {
        await operator(brand)
        return checked(updateSymbol(ctx, params.symbol, body))
      },
      {
        auth: ADMINS,
        ...textInput({ params: { symbol: SymbolName } }),
        body: SymbolPatch,
        response: {
          200: SymbolAdmin,
          ...errors({
            403: ['NOT_OPERATOR_BRAND'],
            404: ['SYMBOL_NOT_FOUND'],
            409: ['GROUP_LACKS_SYMBOLS', 'CURRENCY_NOT_CONVERTIBLE', 'SYMBOL_IN_USE'],
          }),
        },
        detail: doc('Reference data', 'Change settings of a symbol (admin of an operator brand)', {
          description:
            '404 SYMBOL_NOT_FOUND. Open positions keep their open prices; their margin and profit are computed ' +
            'with the change at once (margin_divider, margin_*, contract_size, spread, ...): a margin change can ' +
            'bring accounts to a margin call or stop-out on the next tick. ' +
            'contract_size, margin_mode, profit_mode and the other margin settings apply to open positions at ' +
            'once and are taken while the symbol is held. ' +
            'A new digits or tick_size must keep tick_size a whole number of points (a multiple of 10^-digits, ' +
            'at least one), else 400 INVALID_DATA naming the field the request changed (digits first). ' +
            'While accounts of any brand hold open positions or pending orders in the symbol, refused with 409 ' +
            'SYMBOL_IN_USE naming the field (nothing changed): any new digits, fewer or more (quotes are rounded ' +
            'to digits, and spread, spread_balance, stops_level, swaps in points, pip commissions and every ' +
            "brand's group spread overrides and spread_diff count in points of 10^-digits, so a new point " +
            'reprices every holder), and, on a symbol whose profit is futures (profit_mode 2) or margin CFD index ' +
            '(margin_mode 3) before and after the change, a new tick_value / tick_size ratio (named tick_size ' +
            'when the request changes it, else tick_value): profit or margin per tick would change. A new ' +
            'tick_size with the same ratio, or on a symbol of other modes, is taken. Close or cancel the ' +
            'positions and pending orders first (close-only, trade 1, keeps new ones from opening). ' +
            '403 NOT_OPERATOR_BRAND as for creating one. A new sec_group is refused (409 GROUP_LACKS_SYMBOLS, ' +
            'nothing changed) while accounts of a group without settings for it (shown and tradable) hold open ' +
            'positions or pending orders in the symbol: give those groups settings for it first. ' +
            'A new margin_currency or quote_currency is 400 INVALID_DATA when the reference data does not know it ' +
            '(as for creating one), and 409 CURRENCY_NOT_CONVERTIBLE (nothing changed) while accounts of a group ' +
            'whose currency no chain of pairs converts it into (direct, inverse, or through USD) hold open ' +
            'positions or pending orders in the symbol; a new margin_mode checks both currencies so (a currency ' +
            'the request did not change is refused naming margin_mode). ' +
            ALL_INSTANCES,
        }),
      },
    )
    .get('/groups/:id/trading', ({ brand, params }) => groupTradingSettings(ctx, brand, params.id), {
      auth: ANY_STAFF,
      ...textInput({ params: GroupId }),
      response: {
        200: t.Object({ securities: t.Array(Security), overrides: t.Array(Override) }),
        ...errors(GROUP_NOT_FOUND),
      },
      detail: doc('Reference data', 'Security settings and symbol overrides of a group'),
    })
    .put(
      '/groups/:id/securities/:sec_group',
      ({ brand, params, body }) => putSecurity(ctx, brand, params.id, params.sec_group, body),
      {
        auth: GROUP_ADMINS,
        ...textInput({ params: { ...GroupId, sec_group: SecGroup } }),
        body: SecurityBody,
        response: { 200: Security, ...errors({ ...GROUP_NOT_FOUND, 409: ['GROUP_LACKS_SYMBOLS'] }) },
        detail: doc('Reference data', 'Create or replace the settings of a security group for a group', {
          description:
            'show/trade make the security group visible and tradable; volumes in hundredths of a lot; ' +
            'commission per MetaTrader ConGroupSec (comm_type 0 money, 1 pips, 2 percent; comm_lots 0 per lot, 1 per deal). ' +
            'Taking a shown and tradable security group from the group (show or trade from 1 to 0) is refused ' +
            '(409 GROUP_LACKS_SYMBOLS naming the field, nothing changed) while accounts of the group hold open ' +
            'positions or pending orders in a symbol of it: they could not close them. Settings hidden or not ' +
            'tradable already are saved without the check. For ' +
            `close-only, set the symbol trade 1 (PATCH /manager/symbols/{symbol}). ${ALL_INSTANCES}`,
        }),
      },
    )
    .put(
      '/groups/:id/symbols/:symbol',
      ({ brand, params, body }) => putOverride(ctx, brand, params.id, params.symbol, body),
      {
        auth: GROUP_ADMINS,
        ...textInput({ params: { ...GroupId, symbol: SymbolName } }),
        body: OverrideBody,
        response: { 200: Override, ...errors({ 404: ['GROUP_NOT_FOUND', 'SYMBOL_NOT_FOUND'] }) },
        detail: doc('Reference data', "Create or replace a group's override of a symbol", {
          description:
            'spread, spread_balance and margin_divider; null falls back to the symbol value. margin_divider is ' +
            '0.01 to 1e6 (400 INVALID_DATA naming it otherwise); margin is divided by it, and the margin of the ' +
            "group's open positions in the symbol is recomputed with it at once: a lower divider can bring " +
            `accounts to a margin call or stop-out on the next tick. ${ALL_INSTANCES}`,
        }),
      },
    )
    .delete(
      '/groups/:id/symbols/:symbol',
      ({ brand, params }) => deleteOverride(ctx, brand, params.id, params.symbol),
      {
        auth: GROUP_ADMINS,
        ...textInput({ params: { ...GroupId, symbol: SymbolName } }),
        response: { 200: Ok, ...errors({ 404: ['GROUP_NOT_FOUND', 'OVERRIDE_NOT_FOUND'] }) },
        detail: doc('Reference data', "Remove a group's override of a symbol", {
          description: '404 OVERRIDE_NOT_FOUND when the group has none.',
        }),
      },
    )
    .get('/groups/:id/watch', ({ brand, params }) => getDefaultWatch(ctx, brand, params.id), {
      auth: ANY_STAFF,
      ...textInput({ params: GroupId }),
      response: { 200: DefaultWatch, ...errors(GROUP_NOT_FOUND) },
      detail: doc('Reference data', 'The market watch new accounts of a group start with'),
    })
    .put(
      '/groups/:id/watch',
      ({ brand, params, body }) => setDefaultWatch(ctx, brand, params.id, body.symbols),
      {
        auth: GROUP_ADMINS,
        ...textInput({ params: GroupId }),
        body: t.Object(
          {
            symbols: t.Array(t.String({ minLength: 1, maxLength: 32, description: 'symbol name' }), {
              maxItems: 100,
              uniqueItems: true,
              description: 'market watch of new accounts, in display order; each visible to the group',
            }),
          },
          { example: { symbols: ['EURUSD', 'GBPUSD', 'XAUUSD', 'BTCUSD'] } },
        ),
        response: { 200: DefaultWatch, ...errors(GROUP_NOT_FOUND) },
        detail: doc('Reference data', 'Set the market watch new accounts of a group start with', {
          description:
            'Accounts opened afterwards get these symbols in their market watch (existing accounts keep theirs). ' +
            '400 INVALID_DATA names a symbol the group cannot see.',
        }),
      },
    )

nameModels({
  GroupSecurity: Security,
  GroupSymbolOverride: Override,
  GroupWatchList: DefaultWatch,
  TradingDay: Day,
  TradingInterval: Interval,
})
