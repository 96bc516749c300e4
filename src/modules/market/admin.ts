import { and, eq, getTableColumns, inArray } from 'drizzle-orm'
import type { Brand } from '../../kernel/brand/registry'
import type { Tx } from '../../kernel/db/client'
import { isUniqueViolation } from '../../kernel/db/errors'
import { invalid } from '../../kernel/http/errors'
import type { MarketCtx } from './context'
import { conversionRate } from './domain/conversion'
import type { DaySessions } from './domain/sessions'
import { gridChangeRepricing, tickFitsDigits } from './domain/tick-grid'
import { refuse } from './errors'
import { groupSecurities, groupSymbols, symbols } from './schema'
import { bumpWatchVersion } from './service'

/**
 * Staff maintenance of the reference data: symbols (deployment-wide, admin sessions), and per group of
 * the brand its security settings and per-symbol overrides. Every write bumps the reference version so
 * all instances reload within a second (within 30 s when Redis did not take the bump: shared-version.ts), and the watch-list version so no cached list keeps a symbol the
 * group may no longer see.
 */

const symbolNotFound = (s: string) => refuse('SYMBOL_NOT_FOUND', `symbol ${s} does not exist`)
const groupNotFound = () => refuse('GROUP_NOT_FOUND', 'group not found in this brand')

type SymbolRow = typeof symbols.$inferSelect
type SymbolColumns = ReturnType<typeof getTableColumns<typeof symbols>>
const SYMBOL_COLUMNS = Object.entries(getTableColumns(symbols)) as [keyof SymbolColumns, { name: string }][]

/** A symbol as the admin API shows it: every column under its spec 2.8 (snake_case) name, sessions parsed. */
function symbolAdminView(row: SymbolRow) {
  const out: Record<string, unknown> = {}
  for (const [key, col] of SYMBOL_COLUMNS) {
    if (key === 'updatedAt') continue
    out[col.name] =
      key === 'sessions' ? JSON.parse(row.sessions) : key === 'ratings' ? JSON.parse(row.ratings) : row[key]
  }
  out.updated_time = Math.floor(row.updatedAt / 1000)
  return out
}

/** The columns of a snake_case body (fields the schema accepted), sessions and ratings serialized. */
function symbolColumns(body: Record<string, unknown>): Partial<SymbolRow> {
  const out: Record<string, unknown> = {}
  for (const [key, col] of SYMBOL_COLUMNS) {
    if (!(col.name in body)) continue
    const v = body[col.name]
    out[key] = key === 'sessions' || key === 'ratings' ? JSON.stringify(v) : v
  }
  return out as Partial<SymbolRow>
}

/**
 * Checks the rules a schema cannot express; `merged` is the symbol as it would be stored. `grid` names the
 * field a refusal of the price grid names (the one the request changed), or null when neither digits nor
 * tick_size changed: a stored symbol is not judged again on an edit of other fields.
 */
function checkSymbol(merged: Partial<SymbolRow>, grid: 'digits' | 'tick_size' | null) {
  if (grid && merged.tickSize !== undefined && merged.digits !== undefined) {
    if (!tickFitsDigits(merged.tickSize, merged.digits))
      throw invalid(
        `${grid}: tick_size ${merged.tickSize} is not a whole number of points of ${10 ** -merged.digits} (digits ${merged.digits}): prices are rounded to digits decimals, so the tick must be a multiple of 10^-digits, at least one`,
      )
  }
  const sessions = merged.sessions ? (JSON.parse(merged.sessions) as DaySessions[]) : null
  if (sessions) {
    if (sessions.length !== 7) throw invalid('sessions: 7 days are required, Sunday first')
    sessions.forEach((d, i) => {
      if (d.trade.length > 3) throw invalid(`sessions.${i}.trade: at most 3 intervals a day`)
      d.trade.forEach((s, j) => {
        const open = s.open_hour * 60 + s.open_min
        const close = s.close_hour * 60 + s.close_min
        if (!(open < close && close <= 24 * 60))
          throw invalid(`sessions.${i}.trade.${j}: the interval must open before it closes, within the day`)
      })
    })
  }
  if (merged.marginMode === 2 && !(merged.marginInitial && merged.marginInitial > 0))
    throw invalid('margin_initial: required (> 0) for the futures margin mode')
}

export async function listSymbols(ctx: MarketCtx) {
  const rows = await ctx.db.select().from(symbols).orderBy(symbols.symbol)
  return { rows: rows.map(symbolAdminView) }
}

export async function createSymbol(ctx: MarketCtx, body: Record<string, unknown>) {
  const values = { ...symbolColumns(body), updatedAt: ctx.clock.now() } as SymbolRow
  checkSymbol(values, 'tick_size')
  try {
    const [row] = await ctx.db.transaction(async (tx) => {
      await checkCurrenciesKnown(ctx, tx, values, [...CURRENCY_FIELDS])
      return tx.insert(symbols).values(values).returning()
    })
    await referenceChanged(ctx)
    return symbolAdminView(row)
  } catch (e) {
    if (isUniqueViolation(e)) throw refuse('SYMBOL_EXISTS', `symbol ${values.symbol} already exists`)
    throw e
  }
}

/**
 * A symbol moves to another security group only where every group whose accounts hold open positions or
 * pending orders in it has settings for that security group, shown and tradable: elsewhere those accounts'
 * margin could not be computed, so they could neither sign in nor close, and no stop-out would reach them.
 * The orders are read in the write transaction (through trading's SymbolHoldersPort).
 */
async function checkHolders(ctx: MarketCtx, tx: Tx, symbol: string, secGroup: string) {
  const groupIds = await ctx.holders.groups(tx, symbol)
  if (groupIds.length === 0) return
  const fit = await tx
    .select({ groupId: groupSecurities.groupId })
    .from(groupSecurities)
    .where(
      and(
        eq(groupSecurities.secGroup, secGroup),
        eq(groupSecurities.show, 1),
        eq(groupSecurities.trade, 1),
        inArray(groupSecurities.groupId, groupIds),
      ),
    )
  const ok = new Set(fit.map((f) => f.groupId))
  const lacking = groupIds.filter((id) => !ok.has(id)).sort((a, b) => a - b)
  if (lacking.length === 0) return
  const names = await Promise.all(
    lacking.map(async (id) => `${(await ctx.accounts.read.group(id))?.name ?? '?'} (id ${id})`),
  )
  throw refuse(
    'GROUP_LACKS_SYMBOLS',
    `sec_group: the groups ${names.join(', ')} have no settings (shown and tradable) for security group ${secGroup}, and their accounts hold open positions or pending orders in ${symbol}; give them settings first (PUT /manager/groups/{id}/securities/${secGroup})`,
  )
}

/** Whether an amount in `from` converts into `to` through the pairs named in `names` (conversionRate's chains). */
const converts = (from: string, to: string, names: ReadonlySet<string>) =>
  conversionRate(from, to, (s) => (names.has(s) ? { bid: 1, ask: 1, time: 0 } : null)) !== null

const CURRENCY_FIELDS = [
  ['marginCurrency', 'margin_currency'],
  ['quoteCurrency', 'quote_currency'],
] as const
type CurrencyField = (typeof CURRENCY_FIELDS)[number]

/**
 * A margin or profit currency must be one the reference data knows (400 INVALID_DATA naming the field): a
 * currency of another symbol, a leg of a symbol's name (this one's included: EURPLN brings PLN), or the
 * currency of a group with security settings. A typo (ZZZ) would leave every position in the symbol
 * without a conversion rate. With no other symbol yet there is nothing to judge by, and any is taken.
 */
async function checkCurrenciesKnown(
  ctx: MarketCtx,
  tx: Tx,
  merged: Partial<SymbolRow>,
  fields: CurrencyField[],
) {
  if (fields.length === 0) return
  const rows = await tx
    .select({
      symbol: symbols.symbol,
      currency: symbols.currency,
      marginCurrency: symbols.marginCurrency,
      quoteCurrency: symbols.quoteCurrency,
    })
    .from(symbols)
  const others = rows.filter((r) => r.symbol !== merged.symbol)
  if (others.length === 0) return
  const names = [...rows.map((r) => r.symbol), merged.symbol ?? '']
  const leg = /^[A-Z]{3,4}$/
  let groupCurrencies: Set<string> | null = null
  for (const [key, field] of fields) {
    const c = merged[key] as string
    if (others.some((r) => r.currency === c || r.marginCurrency === c || r.quoteCurrency === c)) continue
    if (
      names.some(
        (n) =>
          (n.startsWith(c) && leg.test(n.slice(c.length))) ||
          (n.endsWith(c) && leg.test(n.slice(0, -c.length))),
      )
    )
      continue
    if (!groupCurrencies) {
      const ids = await tx.selectDistinct({ id: groupSecurities.groupId }).from(groupSecurities)
      const groups = await Promise.all(ids.map((g) => ctx.accounts.read.group(g.id)))
      groupCurrencies = new Set(groups.flatMap((g) => (g ? [g.currency] : [])))
    }
    if (groupCurrencies.has(c)) continue
    throw invalid(
      `${field}: ${c} is no currency the reference data knows (no symbol quotes it and no group keeps accounts in it): nothing could convert amounts in it`,
    )
  }
}

/**
 * A symbol's margin or profit currency changes (or its margin mode, which picks the currency margin is in)
 * only where every group whose accounts hold open positions or pending orders in it can convert the
 * symbol's currencies into its own through the symbols' pairs (409 CURRENCY_NOT_CONVERTIBLE): elsewhere
 * their margin and profit could not be computed, so they could neither sign in nor close. Holders are read
 * in the write transaction (SymbolHoldersPort). A pair without a quote at the moment is a feed's gap, not
 * a setting: it counts.
 */
async function checkHoldersConvert(
  ctx: MarketCtx,
  tx: Tx,
  merged: Partial<SymbolRow>,
  changed: CurrencyField[],
  modeChanged: boolean,
) {
  // a new margin mode may compute margin in the other currency: both are checked then, and a currency
  // that did not change itself is refused under the field that did (margin_mode)
  const fields = modeChanged ? [...CURRENCY_FIELDS] : changed
  if (fields.length === 0 || !merged.symbol) return
  const groupIds = await ctx.holders.groups(tx, merged.symbol)
  if (groupIds.length === 0) return
  const names = new Set((await tx.select({ s: symbols.symbol }).from(symbols)).map((r) => r.s))
  for (const id of [...groupIds].sort((a, b) => a - b)) {
    const g = await ctx.accounts.read.group(id)
    if (!g) continue
    for (const [key, field] of fields) {
      const c = merged[key] as string
      if (converts(c, g.currency, names)) continue
      const named = changed.some(([k]) => k === key)
        ? `${field}: no pair converts ${c}`
        : `margin_mode: margin in mode ${merged.marginMode} may be in the ${field} ${c}, and no pair converts it`
      throw refuse(
        'CURRENCY_NOT_CONVERTIBLE',
        `${named} into ${g.currency}, the currency of group ${g.name} (id ${id}), whose accounts hold open positions or pending orders in ${merged.symbol}; add the pair first`,
      )
    }
  }
}

/**
 * A symbol's price grid changes only where nobody holds it (409 SYMBOL_IN_USE naming the field, nothing
 * changed, while accounts of any brand hold open positions or pending orders in it; SymbolHoldersPort,
 * read in the write transaction): any new digits rounds quotes to another grid and changes the point that
 * spreads, every brand's group spread overrides and spread_diff, stops_level, swaps in points and pip
 * commissions count in (digits 5 to 6 halved a group spread of 20 points to the holders); a new
 * tick_value / tick_size ratio changes futures profit and CFD-index margin per tick. Other settings
 * (contract_size, margin_*, modes) apply to open positions at once and are not guarded here.
 */
async function checkGridHolders(ctx: MarketCtx, tx: Tx, current: SymbolRow, merged: SymbolRow) {
  const field = gridChangeRepricing(current, merged)
  if (!field) return
  const groupIds = await ctx.holders.groups(tx, current.symbol)
  if (groupIds.length === 0) return
  const what =
    field === 'digits'
      ? `new digits (${current.digits} to ${merged.digits}) would reprice them: quotes are rounded to digits, and spreads, group spread overrides, spread_diff, stops_level, swaps in points and pip commissions count in points of 10^-digits`
      : `a new tick_value / tick_size (${current.tickValue} / ${current.tickSize} to ${merged.tickValue} / ${merged.tickSize}) would change their profit or margin per tick`
  throw refuse(
    'SYMBOL_IN_USE',
    `${field}: accounts of ${groupIds.length} group(s) hold open positions or pending orders in ${current.symbol}, and ${what}; close or cancel them (close-only, trade 1, keeps new ones from opening) and change it once none are left`,
  )
}

export async function updateSymbol(ctx: MarketCtx, name: string, body: Record<string, unknown>) {
  const changes = symbolColumns(body)
  const row = await ctx.db.transaction(async (tx) => {
    const [current] = await tx.select().from(symbols).where(eq(symbols.symbol, name))
    if (!current) throw symbolNotFound(name)
    const merged = { ...current, ...changes }
    const gridField =
      merged.digits !== current.digits ? 'digits' : merged.tickSize !== current.tickSize ? 'tick_size' : null
    checkSymbol(merged, gridField)
    const changed = CURRENCY_FIELDS.filter(([key]) => merged[key] !== current[key])
    await checkCurrenciesKnown(ctx, tx, merged, changed)
    if (changes.secGroup !== undefined && changes.secGroup !== current.secGroup)
      await checkHolders(ctx, tx, name, changes.secGroup)
    await checkGridHolders(ctx, tx, current, merged)
    await checkHoldersConvert(ctx, tx, merged, changed, merged.marginMode !== current.marginMode)
    const [r] = await tx
      .update(symbols)
      .set({ ...changes, updatedAt: ctx.clock.now() })
      .where(eq(symbols.symbol, name))
      .returning()
    return r
  })
  await referenceChanged(ctx)
  return symbolAdminView(row)
}

async function brandGroup(ctx: MarketCtx, brand: Brand, id: number) {
  const g = await ctx.accounts.read.groupIn(brand.id, id)
  if (!g) throw groupNotFound()
  return g
}

const securityView = (s: typeof groupSecurities.$inferSelect) => ({
  sec_group: s.secGroup,
  show: s.show,
  trade: s.trade,
  lot_min: s.lotMin,
  lot_max: s.lotMax,
  lot_step: s.lotStep,
  spread_diff: s.spreadDiff,
  comm_base: s.commBase,
  comm_type: s.commType,
  comm_lots: s.commLots,
  comm_agent: s.commAgent,
  comm_agent_type: s.commAgentType,
  comm_agent_lots: s.commAgentLots,
  comm_tax: s.commTax,
})

const overrideView = (o: typeof groupSymbols.$inferSelect) => ({
  symbol: o.symbol,
  spread: o.spread,
  spread_balance: o.spreadBalance,
  margin_divider: o.marginDivider,
})

/** Security settings and symbol overrides of a group of the brand. */
export async function groupTradingSettings(ctx: MarketCtx, brand: Brand, groupId: number) {
  await brandGroup(ctx, brand, groupId)
  const [secs, overrides] = await Promise.all([
    ctx.db
      .select()
      .from(groupSecurities)
      .where(eq(groupSecurities.groupId, groupId))
      .orderBy(groupSecurities.secGroup),
    ctx.db.select().from(groupSymbols).where(eq(groupSymbols.groupId, groupId)).orderBy(groupSymbols.symbol),
  ])
  return { securities: secs.map(securityView), overrides: overrides.map(overrideView) }
}

interface SecurityInput {
  show: number
  trade: number
  lot_min: number
  lot_max: number
  lot_step: number
  spread_diff?: number
  comm_base?: number
  comm_type?: number
  comm_lots?: number
  comm_agent?: number
  comm_agent_type?: number
  comm_agent_lots?: number
  comm_tax?: number
}

/**
 * Some of the symbols of `secGroup` that accounts of the group hold open positions or pending orders in,
 * read in the write transaction (SymbolHoldersPort): one statement over the group's accounts' open and
 * pending orders, not one per symbol over every order.
 */
async function heldInSecurity(ctx: MarketCtx, tx: Tx, brandId: number, groupId: number, secGroup: string) {
  const names = await tx.select({ s: symbols.symbol }).from(symbols).where(eq(symbols.secGroup, secGroup))
  return ctx.holders.inGroup(
    tx,
    brandId,
    groupId,
    names.map((n) => n.s),
  )
}

/**
 * Creates or replaces the settings of one security group (e.g. Forex) for a group of the brand. Hiding it
 * (show 0) or making it not tradable (trade 0) is refused (409 GROUP_LACKS_SYMBOLS, nothing changed) while
 * accounts of the group hold open positions or pending orders in one of its symbols: trading refuses a
 * close there too, so they could not leave them (close-only is the symbol's own `trade` 1, deployment-wide).
 */
export async function putSecurity(
  ctx: MarketCtx,
  brand: Brand,
  groupId: number,
  secGroup: string,
  s: SecurityInput,
) {
  await brandGroup(ctx, brand, groupId)
  if (s.lot_min > s.lot_max) throw invalid('lot_min: must not exceed lot_max')
  const known = await ctx.db
    .select({ s: symbols.symbol })
    .from(symbols)
    .where(eq(symbols.secGroup, secGroup))
    .limit(1)
  if (known.length === 0) throw invalid(`sec_group: no symbol belongs to security group ${secGroup}`)
  const values = {
    groupId,
    secGroup,
    show: s.show,
    trade: s.trade,
    lotMin: s.lot_min,
    lotMax: s.lot_max,
    lotStep: s.lot_step,
    spreadDiff: s.spread_diff ?? 0,
    commBase: s.comm_base ?? 0,
    commType: s.comm_type ?? 0,
    commLots: s.comm_lots ?? 0,
    commAgent: s.comm_agent ?? 0,
    commAgentType: s.comm_agent_type ?? 0,
    commAgentLots: s.comm_agent_lots ?? 0,
    commTax: s.comm_tax ?? 0,
  }
  const [row] = await ctx.db.transaction(async (tx) => {
    // only a change that takes the symbols from the group (shown and tradable before, not now) is checked:
    // without settings, hidden or not tradable already, the group could not close there before either
    const [before] = await tx
      .select({ show: groupSecurities.show, trade: groupSecurities.trade })
      .from(groupSecurities)
      .where(and(eq(groupSecurities.groupId, groupId), eq(groupSecurities.secGroup, secGroup)))
    if (before?.show === 1 && before.trade === 1 && (s.show !== 1 || s.trade !== 1)) {
      const held = await heldInSecurity(ctx, tx, brand.id, groupId, secGroup)
      if (held.length > 0)
        throw refuse(
          'GROUP_LACKS_SYMBOLS',
          `${s.show !== 1 ? 'show' : 'trade'}: accounts of the group hold open positions or pending orders in ${held.join(', ')} of security group ${secGroup}, which they could no longer close; close or delete them first, or make the symbols close-only (PATCH /manager/symbols/{symbol} trade 1)`,
        )
    }
    return tx
      .insert(groupSecurities)
      .values(values)
      .onConflictDoUpdate({ target: [groupSecurities.groupId, groupSecurities.secGroup], set: values })
      .returning()
  })
  await referenceChanged(ctx)
  return securityView(row)
}

interface OverrideInput {
  spread?: number | null
  spread_balance?: number | null
  margin_divider?: number | null
}

/** Creates or replaces a group's override of one symbol; null fields fall back to the symbol's value. */
export async function putOverride(
  ctx: MarketCtx,
  brand: Brand,
  groupId: number,
  symbol: string,
  o: OverrideInput,
) {
  await brandGroup(ctx, brand, groupId)
  const [known] = await ctx.db.select({ s: symbols.symbol }).from(symbols).where(eq(symbols.symbol, symbol))
  if (!known) throw symbolNotFound(symbol)
  const values = {
    groupId,
    symbol,
    spread: o.spread ?? null,
    spreadBalance: o.spread_balance ?? null,
    marginDivider: o.margin_divider ?? null,
  }
  const [row] = await ctx.db.transaction((tx) =>
    tx
      .insert(groupSymbols)
      .values(values)
      .onConflictDoUpdate({ target: [groupSymbols.groupId, groupSymbols.symbol], set: values })
      .returning(),
  )
  await referenceChanged(ctx)
  return overrideView(row)
}

export async function deleteOverride(ctx: MarketCtx, brand: Brand, groupId: number, symbol: string) {
  await brandGroup(ctx, brand, groupId)
  const gone = await ctx.db.transaction((tx) =>
    tx
      .delete(groupSymbols)
      .where(and(eq(groupSymbols.groupId, groupId), eq(groupSymbols.symbol, symbol)))
      .returning(),
  )
  if (gone.length === 0) throw refuse('OVERRIDE_NOT_FOUND', `group ${groupId} has no override for ${symbol}`)
  await referenceChanged(ctx)
  return { data: 'OK' as const }
}

async function referenceChanged(ctx: MarketCtx) {
  await ctx.refdata.changed()
  await bumpWatchVersion(ctx)
}
