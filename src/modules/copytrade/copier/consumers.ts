import { and, eq, gt, inArray, isNull, sql } from 'drizzle-orm'
import type { Queryable, Tx } from '../../../kernel/db/client'
import { inJsonArray, statement } from '../../../kernel/db/statement'
import type { Consumer, DeliveredEvent } from '../../../kernel/events/topic'
import {
  type OrderState,
  TradeActivated,
  TradeCancelled,
  TradeClosed,
  TradeExpired,
  TradeModified,
  TradeOpened,
  TradePartiallyClosed,
  type TradePayload,
  TradeStoppedOut,
} from '../../trading'
import type { CopyCtx } from '../context'
import { profitShare, REWARD } from '../domain/rewards'
import { copiesCloses, copiesOpens, type SubscriptionSettings } from '../domain/settings'
import { afterClosedTrade } from '../domain/stats'
import { SUB_STATUS } from '../domain/status'
import { copyLinks, copyMasters, copyRecords, copySubscriptions, liveSubscription } from '../schema'
import { rewardPolicyOf } from '../views'
import { closeLinks, partialCloseLinks } from './close-copy'
import { CLOSE_CONSUMERS } from './equity'
import { flowConsumer } from './fees'
import { copyFilledTx } from './fills'
import { withdrawalPaidConsumer } from './holds'
import { revivable } from './link-states'
import { copyStops } from './modify-copy'
import { openLinks } from './open-copy'
import { accrueTx, settleRewards } from './rewards'

const settingsOf = (s: { settings: string }) => JSON.parse(s.settings) as SubscriptionSettings
/** An order copy trading placed (the actor `copy:<subscription>`): copies of copies are not made. */
export const isCopy = (o: { actor: string } | undefined) => o?.actor.startsWith('copy:') === true
const day = (ms: number) => Math.floor(ms / 86_400_000)

async function liveMaster(tx: Tx, login: number) {
  const [m] = await tx
    .select()
    .from(copyMasters)
    .where(and(eq(copyMasters.login, login), isNull(copyMasters.deletedAt)))
  return m ?? null
}

/**
 * A master position or pending order came into being (a market open, a pending order placed, or one
 * that reached its price without a copy yet): in the
 * delivery's transaction, one link per live subscription (the unique (subscription, master ticket) key:
 * a redelivery adds none), pending for ACTIVE subscriptions that copy opens, skipped with its reason for
 * the others; after the commit the pending ones are opened (copier/open-copy.ts). Copies of copies are
 * not made.
 */
async function masterOpened(ctx: CopyCtx, e: DeliveredEvent<TradePayload>, tx: Tx): Promise<number[]> {
  const p = e.payload
  const master = await liveMaster(tx, p.login)
  if (master?.enabled !== 1) return []
  // a copy is known by who placed it, written with the order: its link learns the ticket only after
  // trading answered, and a relay on another instance may deliver the open before that
  if (isCopy((await ctx.trading.orderStates([p.ticket], tx)).get(p.ticket))) return []
  const subs = await tx
    .select()
    .from(copySubscriptions)
    .where(
      // by the master's login too: the index on (master_login, status), where the id alone scanned the table
      and(
        eq(copySubscriptions.masterLogin, master.login),
        eq(copySubscriptions.masterId, master.id),
        liveSubscription,
      ),
    )
  if (subs.length === 0) return []
  const now = ctx.clock.now()
  const pending: number[] = []
  const rows = subs.map((s) => {
    const why =
      s.status !== SUB_STATUS.ACTIVE
        ? 'SUBSCRIPTION_PAUSED'
        : copiesOpens(settingsOf(s).copy_mode)
          ? ''
          : 'COPY_MODE'
    return {
      brandId: e.brandId,
      subscriptionId: s.id,
      masterLogin: p.login,
      masterTicket: p.ticket,
      followerLogin: s.followerLogin,
      status: (why ? 'skipped' : 'pending') as 'skipped' | 'pending',
      reason: why,
      symbol: p.symbol,
      masterCmd: p.cmd,
      masterVolume: p.volume,
      masterPrice: p.open_price,
      masterTime: p.open_time,
      createdAt: now,
      updatedAt: now,
    }
  })
  if ('pending_cmd' in p) pending.push(...(await reviveAtFill(ctx, tx, p, subs)))
  for (let i = 0; i < rows.length; i += 500) {
    const chunk = rows.slice(i, i + 500)
    if (chunk.every((r) => r.status === 'pending')) {
      const made = await tx
        .insert(copyLinks)
        .values(chunk)
        .onConflictDoNothing()
        .returning({ id: copyLinks.id })
      for (const l of made) pending.push(l.id)
      continue
    }
    const made = await tx.insert(copyLinks).values(chunk).onConflictDoNothing().returning()
    for (const l of made) if (l.status === 'pending') pending.push(l.id)
    const skipped = made.filter((l) => l.status === 'skipped')
    if (skipped.length > 0)
      await tx
        .insert(copyRecords)
        .values(
          skipped.map((l) => ({
            key: `open:${l.id}`,
            brandId: l.brandId,
            subscriptionId: l.subscriptionId,
            linkId: l.id,
            action: 'open' as const,
            result: 'skipped' as const,
            reason: l.reason,
            message:
              l.reason === 'COPY_MODE' ? 'the subscription copies closes only' : 'the subscription is paused',
            symbol: l.symbol,
            masterTicket: l.masterTicket,
            masterPrice: l.masterPrice,
            masterTime: l.masterTime,
            decidedAt: now,
            createdAt: now,
          })),
        )
        .onConflictDoNothing()
  }
  return pending
}

/**
 * A master's pending order filled: links of it that copied nothing (skipped while the subscription was
 * paused, or their pending copy cancelled by the pause) are decided again, as the position it is now, for
 * the subscriptions that copy opens now. The ids of those to open.
 */
async function reviveAtFill(
  ctx: CopyCtx,
  tx: Tx,
  p: TradePayload,
  subs: (typeof copySubscriptions.$inferSelect)[],
) {
  const live = subs.filter((s) => s.status === SUB_STATUS.ACTIVE && copiesOpens(settingsOf(s).copy_mode))
  if (live.length === 0) return []
  const revived = await tx
    .update(copyLinks)
    .set({
      status: 'pending',
      reason: '',
      masterCmd: p.cmd,
      masterVolume: p.volume,
      masterPrice: p.open_price,
      masterTime: p.open_time,
      resync: sql`${copyLinks.resync} + 2`,
      leaseUntil: 0,
      updatedAt: ctx.clock.now(),
    })
    .where(
      and(
        eq(copyLinks.masterTicket, p.ticket),
        inArray(
          copyLinks.subscriptionId,
          live.map((s) => s.id),
        ),
        revivable,
      ),
    )
    .returning({ id: copyLinks.id })
  return revived.map((l) => l.id)
}

/**
 * The master's close: its links move to `closing` (FULL_SYNC, CLOSE_ONLY) or end (OPEN_ONLY). The ids of
 * those that are to close now.
 */
async function masterClosedTx(ctx: CopyCtx, p: TradePayload, tx: Tx): Promise<number[]> {
  const links = await tx
    .select({ id: copyLinks.id, status: copyLinks.status, settings: copySubscriptions.settings })
    .from(copyLinks)
    .innerJoin(copySubscriptions, eq(copySubscriptions.id, copyLinks.subscriptionId))
    .where(
      and(eq(copyLinks.masterTicket, p.ticket), inArray(copyLinks.status, ['pending', 'opening', 'open'])),
    )
  if (links.length === 0) return []
  const closes = (l: { settings: string }) => copiesCloses(settingsOf(l).copy_mode)
  const closing = links.filter((l) => l.status === 'open' && closes(l))
  const groups = [
    {
      from: 'pending' as const,
      ids: links.filter((l) => l.status === 'pending'),
      set: { status: 'skipped' as const, reason: 'MASTER_CLOSED' },
    },
    {
      from: 'open' as const,
      ids: closing,
      set: { status: 'closing' as const, reason: 'the master closed', leaseUntil: 0 },
    },
    {
      from: 'open' as const,
      ids: links.filter((l) => l.status === 'open' && !closes(l)),
      set: { status: 'ended' as const, reason: 'COPY_MODE' },
    },
    // being opened now: the executor sees the close time and closes what it opened (open-copy.ts)
    { from: 'opening' as const, ids: links.filter((l) => l.status === 'opening'), set: {} },
  ]
  const now = ctx.clock.now()
  // one statement per kind of move (on sqld each statement is a round trip)
  for (const g of groups)
    for (let i = 0; i < g.ids.length; i += 500)
      await tx
        .update(copyLinks)
        .set({ ...g.set, masterClosePrice: p.close_price, masterCloseTime: p.close_time, updatedAt: now })
        .where(
          and(
            inArray(
              copyLinks.id,
              g.ids.slice(i, i + 500).map((l) => l.id),
            ),
            eq(copyLinks.status, g.from),
          ),
        )
  return closing.map((l) => l.id)
}

/**
 * An OPEN_ONLY copy its master let go of (unlinked when the master closed), closed after that: the
 * follower's own position by then, whose result is not the subscription's and owes no per-trade fee. A
 * link ended otherwise (the follower's close found first by the copier or the audit) still counts.
 */
function letGo(link: typeof copyLinks.$inferSelect | undefined, closeTime: number) {
  return (
    link?.status === 'ended' &&
    link.reason === 'COPY_MODE' &&
    closeTime > (link.masterCloseTime ?? link.updatedAt)
  )
}

/**
 * A follower's copy closed (whole or part, by anyone): its result counts, and a profit share accrues (its
 * id). Null when the ticket is no copy's.
 */
async function copyClosedTx(
  ctx: CopyCtx,
  tx: Tx,
  e: DeliveredEvent<TradePayload>,
  closed: {
    ticket: number
    net: number
    closeTime: number
    whole: boolean
    reason: string
  },
  linkTicket: number,
): Promise<{ accrual: number | null } | null> {
  const [row] = await tx
    .select({ link: copyLinks, sub: copySubscriptions })
    .from(copyLinks)
    .innerJoin(copySubscriptions, eq(copySubscriptions.id, copyLinks.subscriptionId))
    .where(eq(copyLinks.followerTicket, linkTicket))
  if (!row || letGo(row.link, closed.closeTime)) return null
  const { link, sub } = row
  const d = day(closed.closeTime)
  await tx
    .update(copySubscriptions)
    .set({
      resultMinor: sub.resultMinor + closed.net,
      lossDay: d,
      dayResultMinor: (sub.lossDay === d ? sub.dayResultMinor : 0) + closed.net,
    })
    .where(eq(copySubscriptions.id, sub.id))
  // closed by the follower, its SL/TP or a stop-out: the link ends (a resync never reopens it)
  if (closed.whole && link.status === 'open')
    await tx
      .update(copyLinks)
      .set({ status: 'ended', reason: closed.reason, updatedAt: ctx.clock.now() })
      .where(and(eq(copyLinks.id, link.id), eq(copyLinks.status, 'open')))
  const none = { accrual: null }
  if (sub.rewardType !== REWARD.PROFIT_SHARE_PER_TRADE) return none
  const [master] = await tx.select().from(copyMasters).where(eq(copyMasters.id, sub.masterId))
  if (!master) return none
  // on the terms the follower accepted
  const policy = rewardPolicyOf(sub)
  if (policy.reward_type !== REWARD.PROFIT_SHARE_PER_TRADE) return none
  const amount = profitShare(closed.net, policy.percent)
  if (amount <= 0) return none
  const accrual = await accrueTx(ctx, tx, sub, master, {
    key: `profit:${closed.ticket}`,
    type: REWARD.PROFIT_SHARE_PER_TRADE,
    base: closed.net,
    amount,
    currency: e.payload.currency,
    note: `${policy.percent} % of the copy's net result (ticket ${closed.ticket})`,
  })
  return { accrual }
}

/**
 * The copies' closes of a relay pass at once (Consumer.handleMany): what copyClosedTx does for each, in a
 * few statements for all (a master's close with 1,000 followers brings 1,000 of these events). The
 * accruals (REAL followers of a profit-share master) go one by one. The accrual ids by event id.
 */
async function copiesClosedTx(
  ctx: CopyCtx,
  tx: Tx,
  events: DeliveredEvent<TradePayload & { reason: string }>[],
) {
  const accrued = new Map<number, number>()
  const rows = await tx
    .select({ link: copyLinks, sub: copySubscriptions })
    .from(copyLinks)
    .innerJoin(copySubscriptions, eq(copySubscriptions.id, copyLinks.subscriptionId))
    .where(
      inArray(
        copyLinks.followerTicket,
        events.map((e) => e.payload.ticket),
      ),
    )
  const byTicket = new Map(rows.map((r) => [r.link.followerTicket!, r]))
  // a copy its master let go of is the follower's own position (letGo): none of this is its subscription's
  for (const e of events)
    if (letGo(byTicket.get(e.payload.ticket)?.link, e.payload.close_time)) byTicket.delete(e.payload.ticket)
  // each subscription's figures after the events in order (one subscription may close several copies)
  const subs = new Map<number, { resultMinor: number; lossDay: number; dayResultMinor: number }>()
  const ended = new Map<number, string>()
  for (const e of events) {
    const r = byTicket.get(e.payload.ticket)
    if (!r) continue
    const net = netOf(e.payload)
    const d = day(e.payload.close_time)
    const before = subs.get(r.sub.id) ?? r.sub
    subs.set(r.sub.id, {
      resultMinor: before.resultMinor + net,
      lossDay: d,
      dayResultMinor: (before.lossDay === d ? before.dayResultMinor : 0) + net,
    })
    if (r.link.status === 'open') ended.set(r.link.id, `CLOSED_${e.payload.reason.toUpperCase()}`)
  }
  if (subs.size > 0) {
    const ids = [...subs.keys()]
    const pick = (f: (v: { resultMinor: number; lossDay: number; dayResultMinor: number }) => number) =>
      sql`case ${copySubscriptions.id} ${sql.join(
        ids.map((id) => sql`when ${id} then ${f(subs.get(id)!)}`),
        sql` `,
      )} end`
    await tx
      .update(copySubscriptions)
      .set({
        resultMinor: pick((v) => v.resultMinor),
        lossDay: pick((v) => v.lossDay),
        dayResultMinor: pick((v) => v.dayResultMinor),
      })
      .where(inArray(copySubscriptions.id, ids))
  }
  // closed by the follower, its SL/TP or a stop-out: the link ends (a resync never reopens it)
  if (ended.size > 0) {
    const ids = [...ended.keys()]
    await tx
      .update(copyLinks)
      .set({
        status: 'ended',
        reason: sql`case ${copyLinks.id} ${sql.join(
          ids.map((id) => sql`when ${id} then ${ended.get(id)!}`),
          sql` `,
        )} end`,
        updatedAt: ctx.clock.now(),
      })
      .where(and(inArray(copyLinks.id, ids), eq(copyLinks.status, 'open')))
  }
  const masterIds = [
    ...new Set(
      [...byTicket.values()]
        .filter((r) => r.sub.rewardType === REWARD.PROFIT_SHARE_PER_TRADE)
        .map((r) => r.sub.masterId),
    ),
  ]
  const sharing = new Map(
    masterIds.length
      ? (await tx.select().from(copyMasters).where(inArray(copyMasters.id, masterIds))).map((m) => [m.id, m])
      : [],
  )
  for (const e of events) {
    const r = byTicket.get(e.payload.ticket)
    const master = r && r.sub.rewardType === REWARD.PROFIT_SHARE_PER_TRADE && sharing.get(r.sub.masterId)
    if (!r || !master) continue
    const policy = rewardPolicyOf(r.sub)
    if (policy.reward_type !== REWARD.PROFIT_SHARE_PER_TRADE) continue
    const net = netOf(e.payload)
    const amount = profitShare(net, policy.percent)
    if (amount <= 0) continue
    const id = await accrueTx(ctx, tx, r.sub, master, {
      key: `profit:${e.payload.ticket}`,
      type: REWARD.PROFIT_SHARE_PER_TRADE,
      base: net,
      amount,
      currency: e.payload.currency,
      note: `${policy.percent} % of the copy's net result (ticket ${e.payload.ticket})`,
    })
    if (id) accrued.set(e.id, id)
  }
  return accrued
}

/** The master's statistics after one of its trades closed (whole or part). */
async function masterStatsTx(ctx: CopyCtx, tx: Tx, login: number, net: number, volume: number) {
  const master = await liveMaster(tx, login)
  if (!master) return
  const f = (await ctx.trading.figures([login])).get(login)
  const s = afterClosedTrade(master, net, volume, f?.balance ?? 0)
  await tx.update(copyMasters).set(s).where(eq(copyMasters.id, master.id))
}

const netOf = (p: { profit_minor: number; commission_minor: number; storage_minor: number }) =>
  p.profit_minor + p.commission_minor + p.storage_minor

/**
 * The masters with live followers among the logins (a JSON array), built once: asked in every batch of
 * opens of the deployment, where drizzle built the text of its list of values anew each time.
 */
const mastersIn = statement<{ logins: string }>((qb) =>
  qb
    .select({ login: copyMasters.login })
    .from(copyMasters)
    .where(
      and(
        inJsonArray(copyMasters.login, 'logins'),
        isNull(copyMasters.deletedAt),
        gt(copyMasters.followers, 0),
      ),
    ),
)

/** The live masters among the logins (a JSON array), whatever their followers: one read for many events. */
const liveMastersIn = statement<{ logins: string }>((qb) =>
  qb
    .select({ login: copyMasters.login })
    .from(copyMasters)
    .where(and(inJsonArray(copyMasters.login, 'logins'), isNull(copyMasters.deletedAt))),
)

/** The copies among the tickets (a JSON array): follower orders with a link to a master's. */
const copiesIn = statement<{ tickets: string }>((qb) =>
  qb
    .selectDistinct({ ticket: copyLinks.followerTicket })
    .from(copyLinks)
    .where(inJsonArray(copyLinks.followerTicket, 'tickets')),
)

/** The first column of a statement's rows, as numbers. */
const numbers = (r: { rows: ArrayLike<unknown>[] }) => new Set(r.rows.map((row) => Number(row[0])))
const jsonSet = (xs: readonly number[]) => JSON.stringify([...new Set(xs)])

/**
 * Whether events concern copy trading at all, each question one read for a whole batch of events: as a
 * batch of opens is written (Consumer.interested), or for a relay pass's events before any transaction
 * (Consumer.wants). Most trades are neither a master's nor a copy, and each would otherwise cost a
 * delivery transaction.
 */
function interest(ctx: CopyCtx) {
  type Ev = { payload: { login: number } }
  /** Which of the events' logins the statement finds among them. */
  const loginsIn = (stmt: typeof mastersIn) => async (q: Queryable, es: readonly Ev[]) => {
    const found = numbers(await stmt(q, { logins: jsonSet(es.map((e) => e.payload.login)) }))
    return es.map((e) => found.has(e.payload.login))
  }
  /** Which of the events are a master's with live followers (what a fan-out needs). */
  const mastersWithFollowers = loginsIn(mastersIn)
  /** Which of the events are a live master's (its statistics, its copies' stops). */
  const liveMasters = loginsIn(liveMastersIn)
  const ofMasters = (es: readonly Ev[]) => liveMasters(ctx.db, es)
  /** Which of the events are of a copy's order (its link knows the ticket). */
  const copies = async (q: Queryable, es: readonly { payload: { ticket: number } }[]) => {
    const found = numbers(await copiesIn(q, { tickets: jsonSet(es.map((e) => e.payload.ticket)) }))
    return es.map((e) => found.has(e.payload.ticket))
  }
  return {
    copies,
    /**
     * Which of a batch of opens are a master's with live followers, read in the opens' own transaction
     * (Consumer.interested): one read for the batch, and the relay never claims the others.
     */
    mastersWithFollowers,
    /** The same for a relay pass's events, before any transaction. */
    wantOpens: (es: readonly Ev[]) => mastersWithFollowers(ctx.db, es),
    ofMasters,
    /** Which events are of a master's order (its statistics, its copies) or a copy's (its link, result). */
    masterOrCopy: async (es: readonly { payload: { login: number; ticket: number } }[]) => {
      const [masters, copies] = await Promise.all([
        ofMasters(es),
        copiesIn(ctx.db, { tickets: jsonSet(es.map((e) => e.payload.ticket)) }).then(numbers),
      ])
      return es.map((e, i) => masters[i]! || copies.has(e.payload.ticket))
    },
  }
}

/** Copy trading's reactions to trading's events (README: copying). */
export function copyConsumers(ctx: CopyCtx): Consumer<any>[] {
  const cares = interest(ctx)
  // what a delivery's transaction leaves its after-step, by event id: the reward accruals to settle and
  // the links to open or close (no read per event after the commit; a 1,000-follower close brings 1,000
  // copies' close events). Kept in memory: a crash between the two leaves the links to the reconcile job.
  const accrued = new Map<number, number[]>()
  const links = new Map<number, number[]>()
  const parts = new Map<number, OrderState | null>()
  const take = (m: Map<number, number[]>, id: number) => {
    const v = m.get(id) ?? []
    m.delete(id)
    return v
  }
  const opened = (
    name: string,
    topic: typeof TradeOpened | typeof TradeActivated,
  ): Consumer<TradePayload> => ({
    name,
    topic: topic as typeof TradeOpened,
    interested: cares.mastersWithFollowers,
    wants: cares.wantOpens,
    async handle(e, tx) {
      links.set(e.id, await masterOpened(ctx, e, tx))
    },
    after: (e) => openLinks(ctx, take(links, e.id)),
  })
  const closed = (
    name: string,
    topic: typeof TradeClosed | typeof TradeStoppedOut,
  ): Consumer<TradePayload & { reason: string }> => ({
    name,
    topic: topic as unknown as typeof TradeClosed,
    wants: cares.masterOrCopy,
    async handle(e, tx) {
      const p = e.payload
      links.set(e.id, await masterClosedTx(ctx, p, tx))
      await masterStatsTx(ctx, tx, p.login, netOf(p), p.volume)
      const copy = await copyClosedTx(
        ctx,
        tx,
        e,
        {
          ticket: p.ticket,
          net: netOf(p),
          closeTime: p.close_time,
          whole: true,
          reason: `CLOSED_${p.reason.toUpperCase()}`,
        },
        p.ticket,
      )
      if (copy?.accrual) accrued.set(e.id, [copy.accrual])
    },
    // a pass of copies' closes (a master's followers) in a few statements; a master's events one by one
    async handleMany(events, tx) {
      const masters = await tx
        .select({ login: copyMasters.login })
        .from(copyMasters)
        .where(
          and(
            inArray(copyMasters.login, [...new Set(events.map((e) => e.payload.login))]),
            isNull(copyMasters.deletedAt),
          ),
        )
      if (masters.length > 0) {
        for (const e of events) await this.handle!(e, tx)
        return
      }
      for (const [eventId, id] of await copiesClosedTx(ctx, tx, events)) accrued.set(eventId, [id])
    },
    async after(e) {
      await closeLinks(ctx, take(links, e.id))
      const ids = take(accrued, e.id)
      if (ids.length > 0) await settleRewards(ctx, ids)
    },
  })
  const partial: Consumer<TradePayload & { closed_ticket: number }> = {
    name: CLOSE_CONSUMERS.partiallyClosed,
    topic: TradePartiallyClosed,
    wants: cares.masterOrCopy,
    async handle(e, tx) {
      const p = e.payload
      const part = (await ctx.trading.orderStates([p.closed_ticket])).get(p.closed_ticket)
      // the master's statistics count the closed part once, from its own trade.closed (closeTx emits it)
      const copy =
        part &&
        (await copyClosedTx(
          ctx,
          tx,
          e,
          {
            ticket: p.closed_ticket,
            net: part.profit + part.commission + part.storage,
            closeTime: part.closeTime,
            whole: false,
            reason: '',
          },
          p.ticket,
        ))
      if (copy) {
        if (copy.accrual) accrued.set(e.id, [copy.accrual])
        return
      }
      // no copy's part: a master's, whose followers' copies close the same part after the commit (a
      // copy's part has no links of its own to read: copies are not copied)
      parts.set(e.id, part ?? null)
    },
    async after(e) {
      const p = e.payload
      const part = parts.get(e.id)
      if (parts.delete(e.id)) {
        const open = await ctx.db
          .select()
          .from(copyLinks)
          .innerJoin(copySubscriptions, eq(copySubscriptions.id, copyLinks.subscriptionId))
          .where(and(eq(copyLinks.masterTicket, p.ticket), eq(copyLinks.status, 'open')))
        await partialCloseLinks(
          ctx,
          open
            .filter((r) => copiesCloses(settingsOf(r.copy_subscriptions).copy_mode))
            .map((r) => r.copy_links),
          p.volume,
          part?.closePrice ?? 0,
          part?.closeTime ?? ctx.clock.now(),
        )
      }
      const ids = take(accrued, e.id)
      if (ids.length > 0) await settleRewards(ctx, ids)
    },
  }
  // a master's pending order cancelled or expired: its copies go (a copy already triggered is closed);
  // a follower's own pending copy cancelled (no money at its price) or expired ends its link
  const gone = (name: string, topic: typeof TradeExpired): Consumer<TradePayload> => ({
    name,
    topic,
    wants: cares.masterOrCopy,
    async handle(e, tx) {
      const p = e.payload
      const now = ctx.clock.now()
      const closing = await tx
        .update(copyLinks)
        .set({
          status: 'closing',
          reason: `the master's order was ${p.state}`,
          leaseUntil: 0,
          updatedAt: now,
        })
        .where(and(eq(copyLinks.masterTicket, p.ticket), eq(copyLinks.status, 'open')))
        .returning({ id: copyLinks.id })
      links.set(
        e.id,
        closing.map((l) => l.id),
      )
      await tx
        .update(copyLinks)
        .set({ status: 'skipped', reason: 'MASTER_CLOSED', updatedAt: now })
        .where(and(eq(copyLinks.masterTicket, p.ticket), eq(copyLinks.status, 'pending')))
      await tx
        .update(copyLinks)
        .set({ status: 'ended', reason: `CLOSED_${p.state.toUpperCase()}`, updatedAt: now })
        .where(and(eq(copyLinks.followerTicket, p.ticket), eq(copyLinks.status, 'open')))
    },
    after: (e) => closeLinks(ctx, take(links, e.id)),
  })
  // a follower's pending copy filled: it counts as a copied position now (a rebate, copied volume)
  const copyFilled: Consumer<TradePayload> = {
    name: 'copytrade.copy-filled',
    topic: TradeActivated as unknown as typeof TradeOpened,
    interested: cares.copies,
    wants: (es) => cares.copies(ctx.db, es),
    async handle(e, tx) {
      const ids = await copyFilledTx(ctx, tx, e.payload.ticket, e.payload.volume)
      if (ids.length > 0) accrued.set(e.id, ids)
    },
    async after(e) {
      const ids = take(accrued, e.id)
      if (ids.length > 0) await settleRewards(ctx, ids)
    },
  }
  const modified: Consumer<TradePayload> = {
    name: 'copytrade.modified',
    topic: TradeModified,
    wants: cares.ofMasters,
    after: (e) => copyStops(ctx, e.id, e.payload),
  }
  return [
    opened('copytrade.master-opened', TradeOpened),
    opened('copytrade.master-activated', TradeActivated),
    copyFilled,
    closed(CLOSE_CONSUMERS.closed, TradeClosed),
    closed(CLOSE_CONSUMERS.stoppedOut, TradeStoppedOut),
    partial,
    gone('copytrade.cancelled', TradeCancelled as unknown as typeof TradeExpired),
    gone('copytrade.expired', TradeExpired),
    modified,
    flowConsumer(ctx),
    withdrawalPaidConsumer(ctx),
  ]
}
