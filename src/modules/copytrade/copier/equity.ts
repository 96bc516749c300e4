import { and, eq, inArray } from 'drizzle-orm'
import { currencyDecimals } from '../../accounts'
import { profitInAccount } from '../../trading'
import { accountOf } from '../accounts-of'
import type { CopyCtx } from '../context'
import { copyLinks, type copySubscriptions } from '../schema'

type Sub = typeof copySubscriptions.$inferSelect

/**
 * A subscription's copy equity now (minor units of the follower's currency): capital + realized result of
 * copies - rewards paid + the floating result of its open copies, priced at the follower group's quotes
 * with trading's own formulas (commission and swap included).
 */
export async function copyEquity(ctx: CopyCtx, sub: Sub) {
  const links = await ctx.db
    .select({ ticket: copyLinks.followerTicket })
    .from(copyLinks)
    .where(and(eq(copyLinks.subscriptionId, sub.id), inArray(copyLinks.status, ['open', 'closing'])))
  const { group } = await accountOf(ctx, sub.followerLogin)
  const currency = group?.currency ?? 'USD'
  let floating = 0
  if (links.length > 0 && group) {
    const quotes = await ctx.market.quoteLookup()
    const states = await ctx.trading.orderStates(links.map((l) => l.ticket!))
    for (const o of states.values()) {
      if (o.state !== 'open') continue
      const gs = await ctx.market.refdata.forGroup(group.id, o.symbol)
      const q = gs && (await ctx.market.groupPrice(gs))
      const p =
        gs &&
        q &&
        profitInAccount(
          gs.info,
          o.cmd,
          o.volume,
          o.openPrice,
          o.cmd % 2 === 0 ? q.bid : q.ask,
          currency,
          quotes,
        )
      floating += Math.round((p ?? 0) * 10 ** currencyDecimals(currency)) + o.commission + o.storage
    }
  }
  return {
    currency,
    capital: sub.capitalMinor,
    floating,
    equity: sub.capitalMinor + sub.resultMinor - sub.feesMinor + floating,
  }
}
