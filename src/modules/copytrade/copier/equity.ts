import { and, eq, inArray, ne, sql } from 'drizzle-orm'
import type { Queryable } from '../../../kernel/db/client'
import { currencyDecimals } from '../../accounts'
import { profitInAccount, TradeClosed, TradePartiallyClosed, TradeStoppedOut } from '../../trading'
import { accountOf } from '../accounts-of'
import type { CopyCtx } from '../context'
import { managedShare } from '../domain/fees'
import { copyLinks, copyRewards, copySubscriptions, liveSubscription } from '../schema'

type Sub = typeof copySubscriptions.$inferSelect

/** The topics of a copy's close whose delivery here adds its result to the subscription's (consumers.ts). */
export const COPY_CLOSES = [TradeClosed, TradeStoppedOut, TradePartiallyClosed].map((t) => t.name)

/**
 * What the money managed by the other live subscriptions of an account comes to (each its capital, plus
 * what its copies made, less its fees; none below zero): with this one's, what the balance is shared by.
 */
async function othersManage(q: Queryable, login: number, except: number) {
  const [row] = await q
    .select({
      n: sql<number>`coalesce(sum(max(0, ${copySubscriptions.capitalMinor} + ${copySubscriptions.resultMinor} - ${copySubscriptions.feesMinor})), 0)`,
    })
    .from(copySubscriptions)
    .where(
      and(eq(copySubscriptions.followerLogin, login), liveSubscription, ne(copySubscriptions.id, except)),
    )
  return Number(row?.n ?? 0)
}

/**
 * The net results (profit + commission + swap, minor units) of the subscription's copies closed (whole or
 * part) whose close is not delivered here yet: in the follower's balance already, not yet in the
 * subscription's result (consumers.ts adds it at delivery). Read from trading's order of the closed part,
 * in `q`: a close delivered in a transaction after `q`'s read is in the result it reads. A copy its master
 * let go of (OPEN_ONLY, closed after the master's close) is the follower's own and counts for nothing.
 */
async function undeliveredCloses(ctx: CopyCtx, q: Queryable, sub: Sub) {
  const rows = await q.all<{ closed: number; ticket: number }>(sql`
    select coalesce(json_extract(o.payload, '$.closed_ticket'), json_extract(o.payload, '$.ticket')) as closed,
      json_extract(o.payload, '$.ticket') as ticket
    from outbox o
    where o.dispatched_at is null
      and o.topic in (${sql.join(
        COPY_CLOSES.map((t) => sql`${t}`),
        sql`, `,
      )})
      and json_extract(o.payload, '$.login') = ${sub.followerLogin}
      and json_extract(o.payload, '$.ticket') in (select l.follower_ticket from copy_links l
        where l.subscription_id = ${sub.id} and l.follower_ticket is not null)
      and not exists (select 1 from event_deliveries d where d.event_id = o.id and d.consumer like 'copytrade.%')`)
  if (rows.length === 0) return 0
  const closed = rows.map((r) => Number(r.closed))
  const [states, links] = await Promise.all([
    ctx.trading.orderStates(closed, q),
    q
      .select({
        ticket: copyLinks.followerTicket,
        status: copyLinks.status,
        reason: copyLinks.reason,
        masterCloseTime: copyLinks.masterCloseTime,
        updatedAt: copyLinks.updatedAt,
      })
      .from(copyLinks)
      .where(
        and(
          eq(copyLinks.subscriptionId, sub.id),
          inArray(
            copyLinks.followerTicket,
            rows.map((r) => Number(r.ticket)),
          ),
        ),
      ),
  ])
  const linkOf = new Map(links.map((l) => [l.ticket!, l]))
  let net = 0
  for (const r of rows) {
    const o = states.get(Number(r.closed))
    if (!o) continue
    const l = linkOf.get(Number(r.ticket))
    // as consumers.ts's letGo: an OPEN_ONLY copy unlinked by its master's close, closed after it
    if (l?.status === 'ended' && l.reason === 'COPY_MODE' && o.closeTime > (l.masterCloseTime ?? l.updatedAt))
      continue
    net += o.profit + o.commission + o.storage
  }
  return net
}

/**
 * A subscription's copy equity now (minor units of the follower's currency): capital + realized result of
 * copies (those closed whose close is not delivered here yet included, at their result in trading) -
 * rewards paid - rewards owed (accrued, their payment waiting for the follower's free margin, or held with
 * a withdrawal until it is paid out) + the floating result of its open copies, priced at the follower
 * group's quotes with trading's own formulas (commission and swap included). A fee owed counts from its
 * accrual: the mark it moved is the equity after it, so the next fee is not charged on it (a fee on a
 * fee), and new terms never charge it. A copy closed at a loss is in the equity from its close: a fee on
 * the gains is never charged on a gain the loss cancels because its close event is still on its way.
 *
 * `managed`: the same, with the money the subscription manages (capital + result - paid) capped at its
 * share of the account's real balance (domain/fees.ts: managedShare): what the management fee is charged
 * on, never on money the account lost on its own trades (the performance fee, the equity stop and the
 * flows keep `equity`: the copies' own gains and losses).
 */
export async function copyEquity(ctx: CopyCtx, sub: Sub, q: Queryable = ctx.db) {
  // what it paid and what it owes in one read: a settlement moves an accrual from one to the other
  const [links, [fees], pending, others, funds] = await Promise.all([
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
    undeliveredCloses(ctx, q, sub),
    othersManage(q, sub.followerLogin, sub.id),
    ctx.accounts.fundsOf(q, [sub.followerLogin]),
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
  const manages = sub.capitalMinor + sub.resultMinor + pending - paid
  const balance = funds.get(sub.followerLogin)?.balance
  const share =
    balance === undefined ? manages : managedShare(manages, others + Math.max(0, manages), balance)
  return {
    currency,
    capital: sub.capitalMinor,
    floating,
    paid,
    owed,
    /** The realized result of copies closed whose close is not delivered yet (in the balance already). */
    pending,
    equity: manages - owed + floating,
    managed: Math.min(manages, share) - owed + floating,
  }
}
