import { and, eq, inArray, sql } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import { currencyDecimals } from '../../accounts'
import { profitInAccount } from '../../trading'
import { accountOf } from '../accounts-of'
import type { CopyCtx } from '../context'
import { copyLinks, copyRewards, copySubscriptions } from '../schema'

type Sub = typeof copySubscriptions.$inferSelect

/**
 * A subscription's copy equity now (minor units of the follower's currency): capital + realized result of
 * copies - rewards paid - rewards owed (accrued, their payment waiting for the follower's free margin, or
 * held with a withdrawal until it is paid out) +
 * the floating result of its open copies, priced at the follower group's quotes with trading's own
 * formulas (commission and swap included). A fee owed counts from its accrual: the mark it moved is the
 * equity after it, so the next fee is not charged on it (a fee on a fee), and new terms never charge it.
 */
export async function copyEquity(ctx: CopyCtx, sub: Sub, q: Pick<Tx, 'select'> = ctx.db) {
  // what it paid and what it owes in one read: a settlement moves an accrual from one to the other
  const [links, [fees]] = await Promise.all([
    q
      .select({ ticket: copyLinks.followerTicket })
      .from(copyLinks)
      .where(and(eq(copyLinks.subscriptionId, sub.id), inArray(copyLinks.status, ['open', 'closing']))),
    q
      .select({
        paid: copySubscriptions.feesMinor,
        // by the id as a value: drizzle writes a one-table select's columns unqualified, so a correlated
        // `subscription_id = id` would compare copy_rewards with itself
        owed: sql<number>`(select coalesce(sum(${copyRewards.amountMinor}), 0) from ${copyRewards} where ${copyRewards.subscriptionId} = ${sub.id} and ${copyRewards.status} in ('pending', 'held'))`,
      })
      .from(copySubscriptions)
      .where(eq(copySubscriptions.id, sub.id)),
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
  const paid = fees?.paid ?? sub.feesMinor
  const owed = Number(fees?.owed ?? 0)
  return {
    currency,
    capital: sub.capitalMinor,
    floating,
    paid,
    owed,
    equity: sub.capitalMinor + sub.resultMinor - paid - owed + floating,
  }
}
