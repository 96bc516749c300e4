import { and, eq, inArray, sql } from 'drizzle-orm'
import type { Queryable } from '../../../kernel/db/client'
import { undeliveredEvents } from '../../../kernel/events/undelivered'
import { currencyDecimals, type GroupRecord } from '../../accounts'
import type { GroupSymbol, Quote, QuoteLookup } from '../../market'
import {
  type OrderState,
  profitInAccount,
  TradeClosed,
  TradePartiallyClosed,
  TradeStoppedOut,
} from '../../trading'
import { accountOf, groupsOf } from '../accounts-of'
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
    floating = await floatingOf(pricer(ctx), group, [...states.values()], quotes)
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

/** A symbol as a group sees it and its price for that group, each (group, symbol) read once a pass. */
type Pricer = (groupId: number, symbol: string) => Promise<{ gs: GroupSymbol; q: Quote | null } | null>

function pricer(ctx: CopyCtx): Pricer {
  const seen = new Map<string, ReturnType<Pricer>>()
  return (groupId, symbol) => {
    const key = `${groupId}:${symbol}`
    let p = seen.get(key)
    if (!p) {
      p = ctx.market.refdata
        .forGroup(groupId, symbol)
        .then(async (gs) => (gs ? { gs, q: await ctx.market.groupPrice(gs) } : null))
      seen.set(key, p)
    }
    return p
  }
}

/**
 * The floating result of a follower's open copies (minor units of its group's currency): each priced at
 * the group's quote with trading's own formulas, commission and swap included. One not open counts nothing.
 */
async function floatingOf(price: Pricer, group: GroupRecord, orders: OrderState[], quotes: QuoteLookup) {
  const currency = group.currency
  let floating = 0
  for (const o of orders) {
    if (o.state !== 'open') continue
    const g = await price(group.id, o.symbol)
    const p =
      g?.q &&
      profitInAccount(
        g.gs.info,
        o.cmd,
        o.volume,
        o.openPrice,
        o.cmd % 2 === 0 ? g.q.bid : g.q.ask,
        currency,
        quotes,
      )
    floating += Math.round((p ?? 0) * 10 ** currencyDecimals(currency)) + o.commission + o.storage
  }
  return floating
}

/**
 * The copy equity (copyEquity, without `managed`) of each subscription of a page (a job's pass), by id, in
 * a handful of reads whatever the page's size: their closes to come (or `pending`, read by the caller),
 * their open copies' links, what they owe, their followers' groups (groupsOf: one read, then each group
 * once), and only when some copy is open the quotes once and the copies' orders in one read, each
 * (group, symbol) priced once. What they paid is the rows' own `fees_minor` (the caller read them). A
 * subscription with no copy open costs nothing more than its part of those set reads. At most a page of
 * ids (a few hundred) a call: each read binds them all.
 */
export async function copyEquities(
  ctx: CopyCtx,
  subs: readonly Sub[],
  q: Queryable = ctx.db,
  pending?: Map<number, number>,
): Promise<Map<number, CopyEquity>> {
  const out = new Map<number, CopyEquity>()
  if (subs.length === 0) return out
  const ids = subs.map((s) => s.id)
  const [links, owedRows, groups, toCome] = await Promise.all([
    q
      .select({ subscriptionId: copyLinks.subscriptionId, ticket: copyLinks.followerTicket })
      .from(copyLinks)
      .where(and(inArray(copyLinks.subscriptionId, ids), inArray(copyLinks.status, ['open', 'closing']))),
    q
      .select({
        subscriptionId: copyRewards.subscriptionId,
        owed: sql<number>`coalesce(sum(${copyRewards.amountMinor}), 0)`,
      })
      .from(copyRewards)
      // as the partial index copy_rewards_owed states it
      .where(and(inArray(copyRewards.subscriptionId, ids), sql`${copyRewards.status} in ('pending', 'held')`))
      .groupBy(copyRewards.subscriptionId),
    groupsOf(
      ctx,
      subs.map((s) => s.followerLogin),
    ),
    pending ?? closesToCome(ctx, q, subs),
  ])
  const owed = new Map(owedRows.map((r) => [r.subscriptionId, Number(r.owed)]))
  const tickets = new Map<number, number[]>()
  for (const l of links) {
    if (l.ticket === null) continue
    const t = tickets.get(l.subscriptionId) ?? []
    t.push(l.ticket)
    tickets.set(l.subscriptionId, t)
  }
  // the quotes and the copies' orders once for the page, and only when some copy is open
  const priced = subs.some((s) => tickets.has(s.id) && groups.get(s.followerLogin))
  const [quotes, states] = priced
    ? await Promise.all([ctx.market.quoteLookup(), ctx.trading.orderStates([...tickets.values()].flat())])
    : [null, new Map<number, OrderState>()]
  const price = pricer(ctx)
  for (const sub of subs) {
    const group = groups.get(sub.followerLogin) ?? null
    const currency = group?.currency ?? 'USD'
    const mine = tickets.get(sub.id)
    const floating =
      mine && group && quotes
        ? await floatingOf(
            price,
            group,
            mine.flatMap((t) => states.get(t) ?? []),
            quotes,
          )
        : 0
    const paid = sub.feesMinor
    const o = owed.get(sub.id) ?? 0
    const p = toCome.get(sub.id) ?? 0
    const manages = sub.capitalMinor + sub.resultMinor + p - paid
    out.set(sub.id, {
      currency,
      capital: sub.capitalMinor,
      floating,
      paid,
      owed: o,
      pending: p,
      equity: manages - o + floating,
    })
  }
  return out
}
