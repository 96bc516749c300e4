import { Elysia, type Static, t } from 'elysia'
import type { AppContext } from '../../context'
import { STAFF_SESSIONS } from '../../platform/auth/session'
import { doc, errors } from '../../platform/openapi'
import { Int, Ok, textInput } from '../../platform/schemas'
import { security } from '../../platform/security'
import {
  createSymbol,
  deleteOverride,
  groupTradingSettings,
  listSymbols,
  putOverride,
  putSecurity,
  updateSymbol,
} from './admin'

const ANY_STAFF = { roles: STAFF_SESSIONS }
const ADMINS = { roles: ['SESSION_ADMIN'] as const }
const GROUP_ADMINS = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }

const SymbolName = t.String({ minLength: 1, maxLength: 32, pattern: '^[A-Za-z0-9._#-]+$' })
const SecGroup = t.String({ minLength: 1, maxLength: 32, pattern: '^[A-Za-z0-9 _-]+$' })
const Currency = t.String({ pattern: '^[A-Z]{3,4}$' })
const Flag = Int({ minimum: 0, maximum: 1 })
const Interval = t.Object({
  open_hour: Int({ minimum: 0, maximum: 24 }),
  open_min: Int({ minimum: 0, maximum: 59 }),
  close_hour: Int({ minimum: 0, maximum: 24 }),
  close_min: Int({ minimum: 0, maximum: 59 }),
})
const Day = t.Object({ trade_overnight: Flag, trade: t.Array(Interval, { maxItems: 3 }) })

/** Every settable field of a symbol (spec 2.8 names); required ones are listed in `SymbolCreate`. */
const symbolFields = {
  description: t.String({ maxLength: 128 }),
  currency: t.String({ pattern: '^[A-Z0-9]{2,8}$', description: 'base currency or the instrument' }),
  margin_currency: Currency,
  quote_currency: t.String({ pattern: '^[A-Z]{3,4}$', description: 'profit currency' }),
  sec_group: t.String({ minLength: 1, maxLength: 32, description: 'security group, e.g. Forex' }),
  digits: Int({ minimum: 0, maximum: 8 }),
  tick_size: t.Number({ exclusiveMinimum: 0 }),
  tick_value: t.Number({ exclusiveMinimum: 0 }),
  contract_size: Int({ minimum: 1 }),
  trade: Int({ minimum: 0, maximum: 2, description: '0 disabled, 1 close only, 2 full access' }),
  spread: Int({ minimum: 0, description: 'fixed spread in points; 0 keeps the source spread' }),
  spread_balance: Int(),
  stops_level: Int({ minimum: 0, description: 'minimum SL/TP distance in points' }),
  long_only: Flag,
  exemode: Int({ minimum: 0, maximum: 2 }),
  profit_mode: Int({ minimum: 0, maximum: 2, description: '0 forex, 1 CFD, 2 futures' }),
  gtc_pendings: Flag,
  swap_enable: Flag,
  swap_type: Int({ minimum: 0, maximum: 2, description: '0 points, 1 money per lot, 2 interest %' }),
  swap_long: t.Number(),
  swap_short: t.Number(),
  swap_rollover3days: Int({ minimum: 0, maximum: 6, description: 'weekday of the triple swap' }),
  margin_mode: Int({
    minimum: 0,
    maximum: 4,
    description: '0 forex, 1 CFD, 2 futures, 3 CFD index, 4 CFD leverage',
  }),
  margin_divider: t.Number({ exclusiveMinimum: 0 }),
  margin_initial: t.Number({ minimum: 0 }),
  margin_maintenance: t.Number({ minimum: 0 }),
  margin_hedged: t.Number({ minimum: 0 }),
  instant_max_volume: Int({ minimum: 0 }),
  max_volume: Int({ minimum: 0 }),
  exchange: t.String({ maxLength: 64 }),
  category: t.String({ maxLength: 64 }),
  industry: t.String({ maxLength: 64 }),
  sector: t.String({ maxLength: 64 }),
  market_cap: t.Number({ minimum: 0 }),
  shareholders: Int({ minimum: 0 }),
  ratings: t.Record(t.String(), t.Union([t.Number(), t.String()])),
  icon: t.String({ maxLength: 512 }),
  sessions: t.Array(Day, {
    minItems: 7,
    maxItems: 7,
    description: '7 days, Sunday first, server time (UTC)',
  }),
  sim_price: t.Number({ exclusiveMinimum: 0, description: 'simulator start price' }),
  sim_volatility: t.Number({ minimum: 0, maximum: 5, description: 'simulator annual volatility' }),
  sim_spread: Int({ minimum: 0, description: 'simulator spread in points' }),
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

const SymbolCreate = t.Object({ symbol: SymbolName, ...optional(REQUIRED) })
const SymbolPatch = t.Object(optional([]), { minProperties: 1 })
const SymbolAdmin = t.Object(
  { symbol: t.String(), ...symbolFields, updated_time: Int() },
  { title: 'SymbolAdmin', additionalProperties: true },
)

/** The view is built column by column from the table; the response schema checks it at run time. */
const checked = <S extends typeof SymbolAdmin>(p: Promise<Record<string, unknown>>) => p as Promise<Static<S>>

const Security = t.Object({
  sec_group: t.String(),
  show: Flag,
  trade: Flag,
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
const SecurityBody = t.Object({
  show: Flag,
  trade: Flag,
  lot_min: Int({ minimum: 1, description: 'hundredths of a lot (100 = 1.00)' }),
  lot_max: Int({ minimum: 1 }),
  lot_step: Int({ minimum: 1 }),
  spread_diff: t.Optional(Int({ minimum: 0 })),
  comm_base: t.Optional(t.Number({ minimum: 0 })),
  comm_type: t.Optional(Int({ minimum: 0, maximum: 2 })),
  comm_lots: t.Optional(Flag),
  comm_agent: t.Optional(t.Number({ minimum: 0 })),
  comm_agent_type: t.Optional(Int({ minimum: 0, maximum: 2 })),
  comm_agent_lots: t.Optional(Flag),
  comm_tax: t.Optional(t.Number({ minimum: 0, maximum: 100 })),
})
const Override = t.Object({
  symbol: t.String(),
  spread: t.Union([Int(), t.Null()]),
  spread_balance: t.Union([Int(), t.Null()]),
  margin_divider: t.Union([t.Number(), t.Null()]),
})
const OverrideBody = t.Object(
  {
    spread: t.Optional(t.Union([Int({ minimum: 0 }), t.Null()])),
    spread_balance: t.Optional(t.Union([Int(), t.Null()])),
    margin_divider: t.Optional(t.Union([t.Number({ exclusiveMinimum: 0 }), t.Null()])),
  },
  { minProperties: 1 },
)
const GroupId = { id: Int({ minimum: 1 }) }

/** Staff routes maintaining symbols, group security settings and per-symbol overrides. */
export const marketAdminRoutes = (ctx: AppContext) =>
  new Elysia({ name: 'market-admin-routes', seed: ctx.instanceId, prefix: '/manager' })
    .use(security(ctx))
    .get('/symbols', async () => ({ rows: (await listSymbols(ctx)).rows as Static<typeof SymbolAdmin>[] }), {
      auth: ANY_STAFF,
      response: { 200: t.Object({ rows: t.Array(SymbolAdmin) }), ...errors(401, 403) },
      detail: doc('Reference data', 'Every symbol with all its settings'),
    })
    .post('/symbols', ({ body }) => checked(createSymbol(ctx, body)), {
      auth: ADMINS,
      body: SymbolCreate,
      response: { 200: SymbolAdmin, ...errors(400, 401, 403, 409) },
      detail: doc('Reference data', 'Create a symbol (admin)', {
        description:
          'Symbols are shared by every brand of the deployment; groups decide per brand what is visible and ' +
          'tradable. Omitted fields take the defaults of spec 2.8 (trade 2, exemode 1, swap_rollover3days 3, ' +
          'margin_divider 1, ...). 409 SYMBOL_EXISTS for a name in use. All instances see the change within a second.',
      }),
    })
    .patch('/symbols/:symbol', ({ params, body }) => checked(updateSymbol(ctx, params.symbol, body)), {
      auth: ADMINS,
      params: t.Object({ symbol: SymbolName }),
      body: SymbolPatch,
      response: { 200: SymbolAdmin, ...errors(400, 401, 403, 404) },
      detail: doc('Reference data', 'Change settings of a symbol (admin)', {
        description:
          '404 SYMBOL_NOT_FOUND. Open positions keep their prices; new margin and profit use the change.',
      }),
    })
    .get('/groups/:id/trading', ({ brand, params }) => groupTradingSettings(ctx, brand, params.id), {
      auth: ANY_STAFF,
      ...textInput({ params: GroupId }),
      response: {
        200: t.Object({ securities: t.Array(Security), overrides: t.Array(Override) }),
        ...errors(400, 401, 403, 404),
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
        response: { 200: Security, ...errors(400, 401, 403, 404) },
        detail: doc('Reference data', 'Create or replace the settings of a security group for a group', {
          description:
            'show/trade make the security group visible and tradable; volumes in hundredths of a lot; ' +
            'commission per MetaTrader ConGroupSec (comm_type 0 money, 1 pips, 2 percent; comm_lots 0 per lot, 1 per deal).',
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
        response: { 200: Override, ...errors(400, 401, 403, 404) },
        detail: doc('Reference data', "Create or replace a group's override of a symbol", {
          description: 'spread, spread_balance and margin_divider; null falls back to the symbol value.',
        }),
      },
    )
    .delete(
      '/groups/:id/symbols/:symbol',
      ({ brand, params }) => deleteOverride(ctx, brand, params.id, params.symbol),
      {
        auth: GROUP_ADMINS,
        ...textInput({ params: { ...GroupId, symbol: SymbolName } }),
        response: { 200: Ok, ...errors(400, 401, 403, 404) },
        detail: doc('Reference data', "Remove a group's override of a symbol", {
          description: '404 OVERRIDE_NOT_FOUND when the group has none.',
        }),
      },
    )
