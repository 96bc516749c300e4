import { and, eq, inArray, sql } from 'drizzle-orm'
import type { Queryable } from '../../../kernel/db/client'
import { undeliveredEvents } from '../../../kernel/events/undelivered'
import { currencyDecimals } from '../../accounts'
import { profitInAccount, TradeClosed, TradePartiallyClosed, TradeStoppedOut } from '../../trading'
import { accountOf } from '../accounts-of'
import type { CopyCtx } from '../context'
import { managedShare } from '../domain/fees'
import { copyLinks, copyRewards, copySubscriptions, liveSubscription } from '../schema'

type Sub = typeof copySubscriptions.$inferSelect

/** The topics of a copy's close whose delivery here adds its result to the subscription's (consumers.ts). */
export const COPY_CLOSES = [TradeClosed, TradeStoppedOut, TradePartiallyClosed].map((t) => t.name)

/** The consumers of those topics (consumers.ts): the close of a copy is to come while one has not had it. */
export const CLOSE_CONSUMERS = {
  closed: 'copytrade.closed',
  stoppedOut: 'copytrade.stopped-out',
  partiallyClosed: 'copytrade.partially-closed',
} as const
export const COPY_CLOSE_CONSUMERS = Object.values(CLOSE_CONSUMERS)

/** What the live subscriptions of an account manage (`allocations`): their total, and each one's part. */
export interface Allocation {
  total: number
  parts: Map<number, number>
}

/**
 * What the live subscriptions of each account manage (each its capital, plus what its copies made, less
 * the fees it paid; none below zero): the total the account's balance is shared by, and each
 * subscription's part, by login (none live: no entry). The one read of it: ratio sizing (open-copy.ts),
 * the management fee's base (copyEquity) and a new subscription's capital (what no other manages) weigh
 * the same figures. One row per live subscription, through the partial index of live ones.
 */
export async function allocations(q: Pick<Queryable, 'select'>, logins: readonly number[]) {
  const out = new Map<number, Allocation>()
  if (logins.length === 0) return out
  const rows = await q
    .select({
      login: copySubscriptions.followerLogin,
      id: copySubscriptions.id,
      n: sql<number>`max(0, ${copySubscriptions.capitalMinor} + ${copySubscriptions.resultMinor} - ${copySubscriptions.feesMinor})`,
    })
    .from(copySubscriptions)
    .where(and(inArray(copySubscriptions.followerLogin, [...logins]), liveSubscription))
  for (const r of rows) {
    const a = out.get(r.login) ?? { total: 0, parts: new Map<number, number>() }
    const n = Number(r.n)
    a.total += n
    a.parts.set(r.id, n)
    out.set(r.login, a)
  }
  return out
}

/**
 * What the balance of subscription `id`'s account is shared by: the other live subscriptions' parts, and
 * `manages` for this one (what the caller counts it at, none below zero: copy equity adds its closes on
 * their way; one not live, or not yet written, adds to the others).
 */
export function sharedBy(a: Allocation | undefined, id: number, manages: number) {
  return (a?.total ?? 0) - (a?.parts.get(id) ?? 0) + Math.max(0, manages)
}

/**
 * The net results (profit + commission + swap, minor units) of each subscription's copies closed (whole
 * or part) whose close is still to come to copy trading's close consumers: not delivered yet, or parked in
 * dead letters until staff retry it. In the follower's balance already, not yet in the subscription's
 * result (consumers.ts adds it at delivery). One read of the events for the whole batch (a job's pass),
 * then the links and trading's orders of the closed parts, in `q`: a close delivered in a transaction
 * after `q`'s read is in the result it reads. A copy its master let go of (OPEN_ONLY, closed after the
 * master's close) is the follower's own and counts for nothing. By subscription id; none: no entry.
 */
export async function closesToCome(ctx: CopyCtx, q: Queryable, subs: readonly Sub[]) {
  const net = new Map<number, number>()
  if (subs.length === 0) return net
  const events = await undeliveredEvents(q, {
    consumers: COPY_CLOSE_CONSUMERS,
    topics: COPY_CLOSES,
    path: '$.login',
    values: [...new Set(subs.map((s) => s.followerLogin))],
    parked: true,
  })
  if (events.length === 0) return net
  const seen = new Set<number>()
  const rows: { ticket: number; closed: number }[] = []
  for (const e of events) {
    if (seen.has(e.id)) continue
    seen.add(e.id)
    const p = JSON.parse(e.payload) as { ticket: number; closed_ticket?: number }
    rows.push({ ticket: Number(p.ticket), closed: Number(p.closed_ticket ?? p.ticket) })
  }
  const links = await q
    .select({
      subscriptionId: copyLinks.subscriptionId,
      ticket: copyLinks.followerTicket,
      status: copyLinks.status,
      reason: copyLinks.reason,
      masterCloseTime: copyLinks.masterCloseTime,
      updatedAt: copyLinks.updatedAt,
    })
    .from(copyLinks)
    .where(
      and(
        inArray(
          copyLinks.subscriptionId,
          subs.map((s) => s.id),
        ),
        inArray(copyLinks.followerTicket, [...new Set(rows.map((r) => r.ticket))]),
      ),
    )
  if (links.length === 0) return net
  const linkOf = new Map(links.map((l) => [l.ticket!, l]))
  const ofCopies = rows.filter((r) => linkOf.has(r.ticket))
  const states = await ctx.trading.orderStates(
    ofCopies.map((r) => r.closed),
    q,
  )
  for (const r of ofCopies) {
    const o = states.get(r.closed)
    if (!o) continue
    const l = linkOf.get(r.ticket)!
    // as consumers.ts's letGo: an OPEN_ONLY copy unlinked by its master's close, closed after it
    if (l.status === 'ended' && l.reason === 'COPY_MODE' && o.closeTime > (l.masterCloseTime ?? l.updatedAt))
      continue
    net.set(l.subscriptionId, (net.get(l.subscriptionId) ?? 0) + o.profit + o.commission + o.storage)
  }
  return net
}

/** A subscription's copy equity (copyEquity), in minor units of the follower's currency. */
export interface CopyEquity {
  currency: string
  capital: number
  floating: number
  paid: number
  owed: number
  /** The realized result of copies closed whose close is still to come here (in the balance already). */
  pending: number
  equity: number
}

/**
 * A subscription's copy equity now (minor units of the follower's currency): capital + realized result of
 * copies (those closed whose close is still to come here included, at their result in trading: not
 * delivered yet, or parked in dead letters) - rewards paid - rewards owed (accrued, their payment waiting
 * for the follower's free margin, or held with a withdrawal until it is paid out) + the floating result of
 * its open copies, priced at the follower group's quotes with trading's own formulas (commission and swap
 * included). A fee owed counts from its accrual: the mark it moved is the equity after it, so the next fee
 * is not charged on it (a fee on a fee), and new terms never charge it. A copy closed at a loss is in the
 * equity from its close: a fee on the gains is never charged on a gain the loss cancels because its close
 * event is still on its way, or parked.
 *
 * `pending`: what `closesToCome` read for a batch (a job's pass reads it once); read here without it.
 * `managed` (asked for with `{ managed: true }`, two more reads): the same, with the money the
 * subscription manages (capital + result - paid) capped at its share of the account's real balance
 * (domain/fees.ts: managedShare): what the management fee is charged on, never on money the account lost
 * on its own trades (the performance fee, the equity stop and the flows keep `equity`: the copies' own
 * gains and losses).
 */
export async function copyEquity(
  ctx: CopyCtx,
  sub: Sub,
  q?: Queryable,
  o?: { managed?: false; pending?: number },
): Promise<CopyEquity>
export async function copyEquity(
  ctx: CopyCtx,
  sub: Sub,
  q: Queryable,
  o: { managed: true; pending?: number },
): Promise<CopyEquity & { managed: number }>
export async function copyEquity(
  ctx: CopyCtx,
  sub: Sub,
  q: Queryable = ctx.db,
  o: { managed?: boolean; pending?: number } = {},
): Promise<CopyEquity & { managed?: number }> {
  // what it paid and what it owes in one read: a settlement moves an accrual from one to the other
  const [links, [fees], pending, money] = await Promise.all([
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
    o.pending ?? closesToCome(ctx, q, [sub]).then((m) => m.get(sub.id) ?? 0),
    o.managed
      ? Promise.all([allocations(q, [sub.followerLogin]), ctx.accounts.fundsOf(q, [sub.followerLogin])])
      : null,
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
  const e: CopyEquity = {
    currency,
    capital: sub.capitalMinor,
    floating,
    paid,
    owed,
    pending,
    equity: manages - owed + floating,
  }
  if (!money) return e
  const [allocated, funds] = money
  const balance = funds.get(sub.followerLogin)?.balance
  const share =
    balance === undefined
      ? manages
      : managedShare(manages, sharedBy(allocated.get(sub.followerLogin), sub.id, manages), balance)
  return { ...e, managed: Math.min(manages, share) - owed + floating }
}
