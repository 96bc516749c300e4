import { and, asc, desc, eq, gt, gte, inArray, isNull, like, lt, lte, or, type SQL, sql } from 'drizzle-orm'
import { invalid } from '../../../kernel/http/errors'
import type { UseCase } from '../../../kernel/use-case'
import { currencyDecimals, fromMinor } from '../../accounts'
import { groupsOf } from '../accounts-of'
import type { CopyCtx } from '../context'
import { SUB_STATUS } from '../domain/status'
import { copyMasters, copySubscriptions } from '../schema'
import { publicMasterView } from '../views'
import { copyError } from './errors'
import { masterById } from './masters'

/** Marketplace sort keys: the column each sorts by (kept by events; no history is scanned). */
const SORTS = {
  roi: sql<number>`${copyMasters.unitValue}`,
  pnl: sql<number>`${copyMasters.pnlMinor}`,
  followers: sql<number>`${copyMasters.followers}`,
  trades: sql<number>`${copyMasters.trades}`,
  win_rate: sql<number>`(case when ${copyMasters.trades} > 0 then ${copyMasters.wins} * 1.0 / ${copyMasters.trades} else 0 end)`,
  max_drawdown: sql<number>`${copyMasters.maxDrawdown}`,
  copied_volume: sql<number>`${copyMasters.copiedVolume}`,
  created: sql<number>`${copyMasters.createdAt}`,
} as const
export const SORT_KEYS = [
  'roi',
  'pnl',
  'followers',
  'trades',
  'win_rate',
  'max_drawdown',
  'copied_volume',
  'created',
] as const satisfies readonly (keyof typeof SORTS)[]

interface MarketQuery {
  sort?: keyof typeof SORTS
  order?: 'asc' | 'desc'
  currency?: string
  reward_type?: number
  min_roi_pct?: number
  max_drawdown_pct?: number
  min_trades?: number
  search?: string
  limit?: number
  cursor?: string
}

/** Who looks: the brand and the session's customer, if a customer (their own masters are shown to them). */
interface ViewerScope {
  brandId: number
  customerId: number | undefined
}

const encode = (v: number, id: number) => Buffer.from(JSON.stringify([v, id])).toString('base64url')
function decode(c: string): [number, number] {
  try {
    const x = JSON.parse(Buffer.from(c, 'base64url').toString())
    if (Array.isArray(x) && x.length === 2 && typeof x[0] === 'number' && Number.isInteger(x[1]))
      return x as [number, number]
  } catch {}
  throw invalid('cursor: not a cursor returned by this route')
}

/**
 * Public, enabled masters of the brand with their statistics: filters, a sort and keyset (cursor)
 * pagination on (sort value, id), stable while rows change between pages.
 */
export async function marketplace({
  ctx,
  brandId,
  input: q,
}: UseCase<CopyCtx, MarketQuery, { brandId: number }>) {
  const sortKey = q.sort ?? 'roi'
  const col = SORTS[sortKey]
  const dir = q.order ?? (sortKey === 'max_drawdown' ? 'asc' : 'desc')
  const limit = q.limit ?? 20
  const filters: (SQL | undefined)[] = [
    eq(copyMasters.brandId, brandId),
    eq(copyMasters.public, 1),
    eq(copyMasters.enabled, 1),
    isNull(copyMasters.deletedAt),
    q.currency ? eq(copyMasters.currency, q.currency) : undefined,
    q.reward_type !== undefined ? eq(copyMasters.rewardType, q.reward_type) : undefined,
    q.min_roi_pct !== undefined ? gte(copyMasters.unitValue, 1 + q.min_roi_pct / 100) : undefined,
    q.max_drawdown_pct !== undefined ? lte(copyMasters.maxDrawdown, q.max_drawdown_pct / 100) : undefined,
    q.min_trades !== undefined ? gte(copyMasters.trades, q.min_trades) : undefined,
    q.search ? like(copyMasters.name, `%${q.search.replace(/[%_\\]/g, '')}%`) : undefined,
  ]
  if (q.cursor) {
    const [v, id] = decode(q.cursor)
    const after = dir === 'desc' ? lt : gt
    filters.push(or(after(col, v), and(eq(col, v), after(copyMasters.id, id))))
  }
  const order = dir === 'desc' ? desc : asc
  const rows = await ctx.db
    .select({ m: copyMasters, v: sql<number>`${col}` })
    .from(copyMasters)
    .where(and(...filters))
    .orderBy(order(col), order(copyMasters.id))
    .limit(limit + 1)
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  return {
    rows: page.map((r) => publicMasterView(r.m)),
    next_cursor: rows.length > limit && last ? encode(Number(last.v), last.m.id) : '',
  }
}

/** One master of the marketplace (public and enabled, or the customer's own: rule 6). */
export async function marketMaster({
  ctx,
  brandId,
  customerId,
  id,
}: UseCase<CopyCtx, undefined, ViewerScope & { id: number }>) {
  return publicMasterView(await availableMaster(ctx, brandId, id, customerId))
}

/**
 * A master as the marketplace shows it (spec 7.5): MASTER_NOT_AVAILABLE when it is disabled or private,
 * unless it is the viewer's own; its profile, trades and followers alike.
 */
async function availableMaster(ctx: CopyCtx, brandId: number, id: number, customerId: number | undefined) {
  const m = await masterById(ctx, brandId, id)
  if ((m.public !== 1 || m.enabled !== 1) && m.customerId !== customerId)
    throw copyError('MASTER_NOT_AVAILABLE', `master ${id} is not public`)
  return m
}

/**
 * GET /copytrade/master/trades (4.12): the master's closed trades, newest first, when show_trade_history
 * is 1 (its owner sees them too), else TRADE_HISTORY_NOT_PUBLIC.
 */
export async function masterTrades({
  ctx,
  brandId,
  customerId,
  input: q,
}: UseCase<CopyCtx, { master_id: number; limit?: number; before?: number }, ViewerScope>) {
  const m = await availableMaster(ctx, brandId, q.master_id, customerId)
  if (m.showTradeHistory !== 1 && m.customerId !== customerId)
    throw copyError('TRADE_HISTORY_NOT_PUBLIC', `master ${m.id} does not show its trade history`)
  const limit = q.limit ?? 50
  const rows = await ctx.trading.closedPositionsOf(m.login, limit + 1, q.before)
  const d = 10 ** currencyDecimals(m.currency)
  return {
    master_id: m.id,
    currency: m.currency,
    rows: rows.slice(0, limit).map((o) => ({
      ticket: o.ticket,
      symbol: o.symbol,
      cmd: o.cmd,
      volume: o.volume,
      open_price: o.openPrice,
      open_time: Math.floor(o.openTime / 1000),
      close_price: o.closePrice,
      close_time: Math.floor(o.closeTime / 1000),
      profit: (o.profit + o.commission + o.storage) / d,
    })),
    next_before: rows.length > limit ? rows[limit - 1]!.ticket : 0,
  }
}

/** Pages of a master's followers (GET /copytrade/master/followers): the default keeps a master's up to 500 in one. */
export const FOLLOWERS_PAGE = { default: 500, max: 1000 } as const

/**
 * GET /copytrade/master/followers (4.12): follower statistics when show_followers is 1 (or to the
 * owner), else FOLLOWERS_NOT_PUBLIC. Followers are shown without their logins: counts by status and
 * mode, and per subscription its age and copied result, oldest first, a page at a time (`after`: the
 * `next_after` of the page before; `n` counts on across pages). A page costs the same few reads whatever
 * its size: the counts in one, the page in one, its followers' groups in one (accounts' port) and each
 * distinct group once through the cache.
 */
export async function masterFollowers({
  ctx,
  brandId,
  customerId,
  input,
}: UseCase<CopyCtx, { master_id: number; limit?: number; after?: number }, ViewerScope>) {
  const m = await availableMaster(ctx, brandId, input.master_id, customerId)
  if (m.showFollowers !== 1 && m.customerId !== customerId)
    throw copyError('FOLLOWERS_NOT_PUBLIC', `master ${m.id} does not show its followers`)
  const limit = input.limit ?? FOLLOWERS_PAGE.default
  const after = input.after ?? 0
  // by copy_subscriptions_master (master_login, status); the id tells this profile from an earlier one of the login
  const live = and(
    eq(copySubscriptions.masterLogin, m.login),
    inArray(copySubscriptions.status, [SUB_STATUS.ACTIVE, SUB_STATUS.PAUSED]),
    eq(copySubscriptions.masterId, m.id),
  )
  const [[counts], subs] = await Promise.all([
    ctx.db
      .select({
        active: sql<number>`coalesce(sum(case when ${copySubscriptions.status} = ${SUB_STATUS.ACTIVE} then 1 else 0 end), 0)`,
        paused: sql<number>`coalesce(sum(case when ${copySubscriptions.status} = ${SUB_STATUS.PAUSED} then 1 else 0 end), 0)`,
        // the rows of the pages before: `n` counts on from them
        earlier: sql<number>`coalesce(sum(case when ${copySubscriptions.id} <= ${after} then 1 else 0 end), 0)`,
      })
      .from(copySubscriptions)
      .where(live),
    ctx.db
      .select({
        id: copySubscriptions.id,
        status: copySubscriptions.status,
        followerLogin: copySubscriptions.followerLogin,
        settings: copySubscriptions.settings,
        resultMinor: copySubscriptions.resultMinor,
        createdAt: copySubscriptions.createdAt,
      })
      .from(copySubscriptions)
      .where(and(live, after ? gt(copySubscriptions.id, after) : undefined))
      .orderBy(asc(copySubscriptions.id))
      .limit(limit + 1),
  ])
  const page = subs.slice(0, limit)
  const groups = await groupsOf(
    ctx,
    page.map((s) => s.followerLogin),
  )
  const now = ctx.clock.now()
  const active = Number(counts?.active ?? 0)
  const paused = Number(counts?.paused ?? 0)
  const earlier = Number(counts?.earlier ?? 0)
  return {
    master_id: m.id,
    followers: active + paused,
    active,
    paused,
    rows: page.map((s, i) => {
      const g = groups.get(s.followerLogin) ?? null
      const currency = g?.currency ?? m.currency
      return {
        n: earlier + i + 1,
        status: s.status,
        account_mode: g?.accountMode ?? 'DEMO',
        following_days: Math.floor((now - s.createdAt) / 86_400_000),
        copy_mode: (JSON.parse(s.settings) as { copy_mode: number }).copy_mode,
        copied_result: fromMinor(s.resultMinor, currency),
        currency,
      }
    }),
    next_after: subs.length > limit ? page[limit - 1]!.id : 0,
  }
}
