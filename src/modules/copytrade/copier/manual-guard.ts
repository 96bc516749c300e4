import { and, eq, inArray, sql } from 'drizzle-orm'
import { JsonCache } from '../../../kernel/cache/json-cache'
import type { ManualTradeGuard } from '../../trading'
import type { CopyCtx } from '../context'
import { MANUAL_TRADING } from '../domain/settings'
import { SUB_STATUS } from '../domain/status'
import { copyLinks, copyMasters, copySubscriptions, liveSubscription } from '../schema'

const key = (login: number) => `copy:manual:v1:${login}`

/**
 * The manual_trading_mode that binds a follower account: for each active subscription the mode its follower
 * accepted, or the master's own when that is looser (a loosening frees the follower at once, a stricter
 * mode binds only once accepted); the strictest of them.
 */
export const manualModeOf = (db: CopyCtx['db'], login: number) =>
  db
    .select({
      mode: sql<
        number | null
      >`min(max(${copySubscriptions.manualTradingMode}, ${copyMasters.manualTradingMode}))`,
    })
    .from(copySubscriptions)
    .innerJoin(copyMasters, eq(copyMasters.id, copySubscriptions.masterId))
    .where(
      and(
        eq(copySubscriptions.followerLogin, login),
        // the partial index's own term: SQLite uses it only where the query says it word for word
        liveSubscription,
        eq(copySubscriptions.status, SUB_STATUS.ACTIVE),
      ),
    )

/**
 * manual_trading_mode enforced on follower accounts (trading's ManualTradeGuardPort), the strictest of
 * the ACTIVE subscriptions an account has, each on the terms its follower accepted (a paused one binds
 * nothing: pausing, an equity stop's too, gives the account back to its owner):
 * - DISABLED: the client may not open, close, modify or cancel on the account by hand (pausing or
 *   disabling the subscription is the way out: a disable closes the copies);
 * - ALLOW_NON_COPIED: the client trades by hand, but may not close or modify a copied position;
 * - ALLOW_ALL: no limit.
 * The mode of a login is cached in the shared store (30 s) and dropped when a subscription or a
 * master's or an accepted mode changes, so a trade open of an account that follows nobody costs one cache read.
 */
export function manualGuard(ctx: CopyCtx) {
  const cache = new JsonCache(ctx.store, 30_000)
  const modeOf = async (login: number) =>
    (await cache.get(key(login), async () => {
      const [row] = await manualModeOf(ctx.db, login)
      return { mode: row?.mode ?? MANUAL_TRADING.ALLOW_ALL }
    }))!.mode
  const copied = async (login: number, ticket?: number) => {
    const [row] = await ctx.db
      .select({ id: copyLinks.id })
      .from(copyLinks)
      .where(
        and(
          ticket === undefined ? eq(copyLinks.followerLogin, login) : eq(copyLinks.followerTicket, ticket),
          inArray(copyLinks.status, ['opening', 'open', 'closing']),
        ),
      )
      .limit(1)
    return row !== undefined
  }
  const guard: ManualTradeGuard = async (login, action, ticket) => {
    const mode = await modeOf(login)
    if (mode === MANUAL_TRADING.ALLOW_ALL) return null
    if (mode === MANUAL_TRADING.DISABLED)
      return `account ${login} copies a master that allows no manual trading; pause or disable the subscription first`
    if (action !== 'open' && (await copied(login, ticket)))
      return `a copied position of account ${login} is managed by its subscription (manual_trading_mode ALLOW_NON_COPIED)`
    return null
  }
  return {
    guard,
    forget: (...logins: number[]) => (logins.length ? cache.del(...logins.map(key)) : Promise.resolve(0)),
  }
}
