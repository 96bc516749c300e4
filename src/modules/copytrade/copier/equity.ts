import { and, eq, inArray, sql } from 'drizzle-orm'
import { currencyDecimals } from '../../accounts'
import { profitInAccount } from '../../trading'
import { accountOf } from '../accounts-of'
import type { CopyCtx } from '../context'
import { copyLinks, copyRewards, type copySubscriptions } from '../schema'

type Sub = typeof copySubscriptions.$inferSelect

/**
 * A subscription's copy equity now (minor units of the follower's currency): capital + realized result of
 * copies - rewards paid - rewards owed (accrued, their payment waiting for the follower's free margin) +
 * the floating result of its open copies, priced at the follower group's quotes with trading's own
 * formulas (commission and swap included). A fee owed counts from its accrual: the mark it moved is the
 * equity after it, so the next fee is not charged on it (a fee on a fee), and new terms never charge it.
 */
export async function copyEquity(ctx: CopyCtx, sub: Sub) {
  const [links, [owed]] = await Promise.all([
    ctx.db
      .select({ ticket: copyLinks.followerTicket })
      .from(copyLinks)
      .where(and(eq(copyLinks.subscriptionId, sub.id), inArray(copyLinks.status, ['open', 'closing']))),
    ctx.db
      .select({ minor: sql<number>`coalesce(sum(${copyRewards.amountMinor}), 0)` })
      .from(copyRewards)
      .where(and(eq(copyRewards.subscriptionId, sub.id), eq(copyRewards.status, 'pending'))),
  ])
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
  const owedMinor = Number(owed?.minor ?? 0)
  return {
    currency,
    capital: sub.capitalMinor,
    floating,
    owed: owedMinor,
    equity: sub.capitalMinor + sub.resultMinor - sub.feesMinor - owedMinor + floating,
  }
}
