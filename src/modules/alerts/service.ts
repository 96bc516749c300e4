import { and, count, eq, sql } from 'drizzle-orm'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import type { Tx } from '../../kernel/db/client'
import { readOrNothing, readSkippingBadRows } from '../../kernel/db/tolerant'
import { invalid } from '../../kernel/http/errors'
import { MAX_PRICE } from '../../kernel/limits'
import type { AlertsCtx } from './context'
import { CONDITIONS, checkReach, checkSpec, onSymbolGrid, rearms, watchChangedAt } from './domain/conditions'
import { type AlertEngine, groupPriceOf } from './engine'
import { refuse } from './errors'
import { type AlertRow, priceAlerts } from './schema'
import { alertView } from './views'

/** The alert services: the module's context and its engine. */
export interface AlertsServices extends AlertsCtx {
  alerts: AlertEngine
}

/** Active alerts a login may keep. */
export const MAX_ACTIVE_ALERTS = 200
/** Alerts a login keeps in all, fired and disabled ones included: GET /price_alerts answers them all. */
export const MAX_STORED_ALERTS = 1000

interface AlertInput {
  login: number
  symbol: string
  indicator_name?: string
  message?: string
  side: number
  condition: number
  target_price?: number
  channel_low?: number
  channel_high?: number
  move_threshold?: number
  repeat_mode?: number
  expires_at?: number
  reference_price?: number
  reference_time?: number
}

/**
 * Checks the fields of 4.5 and turns them into columns: prices rounded to the symbol's digits (as order
 * prices are), moving conditions' reference defaulting to the group's price now.
 */
async function columns(ctx: AlertsServices, groupId: number, i: AlertInput) {
  const gs = await ctx.refdata.forGroup(groupId, i.symbol)
  if (gs?.sec.show !== 1) throw invalid(`symbol: ${i.symbol} is not available for the account`)
  const has = (f: string) => (i as unknown as Record<string, unknown>)[f] !== undefined
  // the group's price (its spread settings), as the engine evaluates the alert; read, not peeked: an edge
  // isolate holds no quote of its own (a fresh one none, an older one whatever it read last)
  const q = await ctx.quotes.get(i.symbol)
  const moving = i.condition >= CONDITIONS.MOVE_UP_PERCENT
  const digits = gs.info.digits
  const { spec, problem: offGrid } = onSymbolGrid(
    {
      condition: i.condition,
      targetPrice: i.target_price ?? 0,
      channelLow: i.channel_low ?? 0,
      channelHigh: i.channel_high ?? 0,
      moveThreshold: i.move_threshold ?? 0,
      // only moving conditions have a reference (a client may send back the 0 a level alert shows); a
      // group price at 0 or below is no price (market: pricedForGroup)
      referencePrice: moving ? (i.reference_price ?? groupPriceOf(q, gs, i.side) ?? 0) : 0,
    },
    digits,
  )
  if (offGrid) throw invalid(offGrid)
  const problem = checkSpec(spec, has)
  if (problem) throw invalid(problem)
  if (moving && !(spec.referencePrice > 0))
    throw invalid('reference_price: required for moving conditions while the symbol has no quote')
  // a level no quote can be at never fires: such an alert would only take a place of the active limit
  const unreachable = checkReach(spec, digits, MAX_PRICE)
  if (unreachable) throw invalid(unreachable)
  const nowS = Math.floor(ctx.clock.now() / 1000)
  return {
    symbol: i.symbol,
    side: i.side,
    ...spec,
    ...ownColumns(i, nowS),
    referenceTime: moving ? (i.reference_time ?? nowS) : 0,
  }
}

/** The columns that need no symbol settings: the texts, the repeat mode and the expiry (checked). */
function ownColumns(i: AlertInput, nowS: number) {
  if (i.expires_at && i.expires_at <= nowS) throw invalid('expires_at: must be in the future (or 0 for none)')
  return {
    indicatorName: i.indicator_name ?? '',
    message: i.message ?? '',
    repeatMode: i.repeat_mode ?? 0,
    expiresAt: i.expires_at ?? 0,
  }
}

/**
 * Whether an edit sends back what the alert watches as it is stored (symbol, side, condition, levels, and
 * for moving conditions the reference price and time): nothing of it to check again. Prices compare as
 * stored (on the symbol's grid), a field left out as its default.
 */
function watchKept(r: AlertRow, i: AlertInput) {
  const moving = i.condition >= CONDITIONS.MOVE_UP_PERCENT
  return (
    i.symbol === r.symbol &&
    i.side === r.side &&
    i.condition === r.condition &&
    (i.target_price ?? 0) === r.targetPrice &&
    (i.channel_low ?? 0) === r.channelLow &&
    (i.channel_high ?? 0) === r.channelHigh &&
    (i.move_threshold ?? 0) === r.moveThreshold &&
    (!moving || (i.reference_price === r.referencePrice && i.reference_time === r.referenceTime))
  )
}

/**
 * Refuses one more active alert beyond the per-login limit, and with `adding` one more alert beyond the
 * limit of stored ones (inside the writing transaction).
 */
async function checkLimits(tx: Tx, login: number, adding: boolean) {
  const [{ active, stored }] = await tx
    .select({ active: sql<number>`coalesce(sum(${priceAlerts.active} = 1), 0)`, stored: count() })
    .from(priceAlerts)
    .where(eq(priceAlerts.login, login))
  if (active >= MAX_ACTIVE_ALERTS)
    throw refuse(
      'ALERT_LIMIT_REACHED',
      `a login keeps at most ${MAX_ACTIVE_ALERTS} active alerts; delete or disable some first`,
    )
  if (adding && stored >= MAX_STORED_ALERTS)
    throw refuse(
      'ALERT_LIMIT_REACHED',
      `a login keeps at most ${MAX_STORED_ALERTS} alerts, fired and disabled ones included; delete some first`,
    )
}

/**
 * A disabled account may not act (staff stopped it): no alert is created or re-defined on it. Those it
 * has rest, kept, and fire again once it is enabled.
 */
function requireEnabled(account: { login: number; enable: number }) {
  if (account.enable !== 1)
    throw refuse(
      'ACCOUNT_DISABLED',
      `account ${account.login} is disabled: its alerts rest until it is enabled again`,
    )
}

/**
 * The account an alert request names, scoped to the session. A login the session may not see (another's, or
 * none) answers 403 USER_NOT_FOUND, as trading does: spec 4.5 lists 400, 401, 403 and 500 for the route.
 */
const alertAccount = (ctx: AlertsServices, brand: Brand, session: Session, login: number) =>
  ctx.accounts.loadAccountViewAs(brand, session, login, () =>
    refuse('USER_NOT_FOUND', 'login not found for this session'),
  )

export async function createAlert(ctx: AlertsServices, brand: Brand, session: Session, input: AlertInput) {
  const { account, group } = await alertAccount(ctx, brand, session, input.login)
  requireEnabled(account)
  const cols = await columns(ctx, group.id, input)
  const now = ctx.clock.now()
  const row = await ctx.db.transaction(async (tx) => {
    await checkLimits(tx, account.login, true)
    const [r] = await tx
      .insert(priceAlerts)
      .values({
        brandId: brand.id,
        login: account.login,
        ...cols,
        watchChangedAt: watchChangedAt(now),
        createdAt: now,
        updatedAt: now,
      })
      .returning()
    return r
  })
  await ctx.alerts.changed(row)
  return { id: row.id, alert: alertView(row) }
}

export async function listAlerts(ctx: AlertsServices, brand: Brand, session: Session, login: number) {
  const { account } = await alertAccount(ctx, brand, session, login)
  const own = and(eq(priceAlerts.login, account.login), eq(priceAlerts.brandId, brand.id))
  const rows = await readSkippingBadRows(ctx.logger, `alerts of ${account.login}`, {
    all: () => ctx.db.select().from(priceAlerts).where(own).orderBy(priceAlerts.id),
    keys: async () =>
      (await ctx.db.select({ id: priceAlerts.id }).from(priceAlerts).where(own).orderBy(priceAlerts.id)).map(
        (r) => r.id,
      ),
    one: (id) => ctx.db.select().from(priceAlerts).where(eq(priceAlerts.id, id)),
  })
  return { rows: rows.map(alertView) }
}

const notFound = (id: number) => refuse('ALERT_NOT_FOUND', `alert ${id} not found`)

async function ownAlert(ctx: AlertsServices, brand: Brand, session: Session, id: number) {
  const [r] = await readOrNothing(ctx.logger, `alert ${id}`, () =>
    ctx.db
      .select()
      .from(priceAlerts)
      .where(and(eq(priceAlerts.id, id), eq(priceAlerts.brandId, brand.id))),
  )
  if (!r) throw notFound(id)
  try {
    await ctx.accounts.loadAccountView(brand, session, r.login)
  } catch {
    throw notFound(id)
  }
  return r
}

/** What an edit that lost a race to another write (in this transaction's view) yields: retried once. */
const LOST = Symbol('lost')

/** Replaces an alert's definition (re-armed from the current price); `active` 0/1 disables or enables it. */
export async function updateAlert(
  ctx: AlertsServices,
  brand: Brand,
  session: Session,
  id: number,
  input: AlertInput & { active?: number },
) {
  const current = await ownAlert(ctx, brand, session, id)
  if (input.login !== current.login) throw invalid('login: an alert cannot move to another login')
  const { account, group } = await alertAccount(ctx, brand, session, current.login)
  const active = input.active ?? 1
  // disabling (active 0) or deleting one stays open to staff
  if (active === 1) requireEnabled(account)
  // a disable that keeps what the alert watches needs nothing of its symbol: it is taken even while the
  // symbol is hidden from the group (or gone from it), where the alert rests and holds an active place
  const cols =
    active === 0 && watchKept(current, input)
      ? ownColumns(input, Math.floor(ctx.clock.now() / 1000))
      : await columns(ctx, group.id, input)
  const write = (tx: Tx) => editAlert(tx, brand, id, { ...cols, active, updatedAt: ctx.clock.now() })
  let row = await ctx.db.transaction(write)
  // another write slipped between this transaction's read and its update: read it again, once
  if (row === LOST) row = await ctx.db.transaction(write)
  if (row === LOST) throw refuse('ALERT_CHANGED', `alert ${id} changed meanwhile; read it again and retry`)
  // deleted meanwhile (a DELETE that raced this one)
  if (!row) throw notFound(id)
  await ctx.alerts.changed(row)
  return { id, alert: alertView(row) }
}

/**
 * Writes an edit on the alert as this transaction sees it, not as it was read before: a once-alert that
 * fired meanwhile is inactive, and activating it again takes a place under the active limit. The update is
 * conditional on that version (updated_at, fired_count), so nothing written since is overwritten unseen.
 * An edit that makes it a new alert to the engine (domain rearms: what it watches, once to repeat, an
 * inactive one activated) moves `watch_changed_at`: filed again later, it is not taken for the episode it
 * fired for before the edit.
 */
async function editAlert(
  tx: Tx,
  brand: Brand,
  id: number,
  set: Omit<Partial<AlertRow>, 'id'> & { active: number; updatedAt: number },
): Promise<AlertRow | undefined | typeof LOST> {
  const [seen] = await tx
    .select()
    .from(priceAlerts)
    .where(and(eq(priceAlerts.id, id), eq(priceAlerts.brandId, brand.id)))
  if (!seen) return undefined
  if (set.active === 1 && seen.active !== 1) await checkLimits(tx, seen.login, false)
  const rearmed = rearms(seen, { ...seen, ...set })
    ? { watchChangedAt: watchChangedAt(set.updatedAt, seen) }
    : {}
  const [r] = await tx
    .update(priceAlerts)
    .set({ ...set, ...rearmed })
    .where(
      and(
        eq(priceAlerts.id, id),
        eq(priceAlerts.updatedAt, seen.updatedAt),
        eq(priceAlerts.firedCount, seen.firedCount),
      ),
    )
    .returning()
  return r ?? LOST
}

export async function deleteAlert(ctx: AlertsServices, brand: Brand, session: Session, id: number) {
  const own = await ownAlert(ctx, brand, session, id)
  // the scope the read checked, again in the write (brand and login: an id alone names no owner)
  await ctx.db.transaction((tx) =>
    tx
      .delete(priceAlerts)
      .where(
        and(eq(priceAlerts.id, id), eq(priceAlerts.brandId, brand.id), eq(priceAlerts.login, own.login)),
      ),
  )
  await ctx.alerts.removed(id)
  return { data: 'OK' as const }
}
