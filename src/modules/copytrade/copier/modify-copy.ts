import { and, eq, inArray, sql } from 'drizzle-orm'
import type { OrderState, TradePayload } from '../../trading'
import type { CopyCtx } from '../context'
import type { SubscriptionSettings } from '../domain/settings'
import { copyOrder } from '../domain/sizing'
import { copyLinks, copyRecords, copySubscriptions } from '../schema'
import { refusalReason } from './refusals'

type Link = typeof copyLinks.$inferSelect
type Sub = typeof copySubscriptions.$inferSelect

/** The master's order as a change of its stops is copied from: its side and levels, its open price. */
type MasterStops = { cmd: number; sl: number; tp: number; price: number }

/** A copy's levels before the copier changes them: what a skipped change records it kept. */
type Levels = { sl: number; tp: number }

/**
 * The master moved its stop loss or take profit (event `eventId`): each open copy of a subscription that
 * copies stops gets the same levels (mirrored for a reversed copy), keyed by the event, so a redelivery
 * changes nothing and a move back to earlier levels is copied too. The copies' levels before are read in
 * one statement: a change that is not made records them (`setStops`).
 */
export async function copyStops(ctx: CopyCtx, eventId: number, p: TradePayload) {
  const rows = await ctx.db
    .select()
    .from(copyLinks)
    .innerJoin(copySubscriptions, eq(copySubscriptions.id, copyLinks.subscriptionId))
    .where(and(eq(copyLinks.masterTicket, p.ticket), eq(copyLinks.status, 'open')))
  const copying = rows.filter(
    (r) =>
      r.copy_links.followerTicket !== null &&
      (JSON.parse(r.copy_subscriptions.settings) as SubscriptionSettings).copy_sl_tp === 1,
  )
  if (copying.length === 0) return
  // unread (the database failed): the step fails, and the relay tries the event again (an after-step
  // alone runs at least once; the keys below make a second run change and record nothing twice)
  const copies = await ctx.trading.orderStates([
    p.ticket,
    ...copying.map((r) => r.copy_links.followerTicket!),
  ])
  // the master's levels moved again since this event (a retry of it comes late, or a staff resend of a
  // parked one): its levels are stale, and the newer change's own event copies the ones in force
  const now = copies.get(p.ticket)
  if (!now || now.sl !== p.sl || now.tp !== p.tp) return
  const master = { cmd: p.cmd, sl: p.sl, tp: p.tp, price: p.open_price }
  await Promise.all(
    copying.map(({ copy_links: link, copy_subscriptions: sub }) =>
      ctx.limit(() =>
        setStops(ctx, link, sub, master, copies.get(link.followerTicket!), {
          trade: `copy:${sub.id}:${p.ticket}:modify:${eventId}`,
          record: `modify:${link.id}:${eventId}`,
        }),
      ),
    ),
  )
}

/**
 * Gives one copy its master's levels (with `copy_sl_tp`) through the write port under `keys.trade`, and
 * records the outcome under `keys.record`: copied, or skipped with its reason. A change that failed (a
 * refusal, or the write that threw: the executor's database, a timeout) is recorded skipped with the
 * levels the copy kept (`copy`, its levels before: `#copy:<sl>:<tp>` at the end of the record's key), and
 * the audit tries it again with the master's levels then while the copy still has exactly those
 * (`retryStops`); the record's key makes a redelivery record nothing twice.
 */
async function setStops(
  ctx: CopyCtx,
  link: Link,
  sub: Sub,
  master: MasterStops,
  copy: Levels | undefined,
  keys: { trade: string; record: string },
) {
  const s = JSON.parse(sub.settings) as SubscriptionSettings
  if (s.copy_sl_tp !== 1 || link.followerTicket === null) return
  const o = copyOrder(master, s.reverse === 1, true)
  const decidedAt = ctx.clock.now()
  let r: { ok: true } | { ok: false; code: string; reason: string }
  try {
    r = await ctx.trading.modify({
      brandId: link.brandId,
      actor: `copy:${sub.id}`,
      idempotencyKey: keys.trade,
      order: link.followerTicket,
      sl: o.sl,
      tp: o.tp,
    })
  } catch (e) {
    ctx.logger.log('warn', "copy trading: a copy's SL/TP change failed; the audit retries it", {
      link: link.id,
      error: String(e),
    })
    r = { ok: false, code: 'FAILED', reason: `the change failed (${String(e)}); retried` }
  }
  await ctx.db
    .insert(copyRecords)
    .values({
      key: r.ok || !copy ? keys.record : `${keys.record}${KEPT}${copy.sl}:${copy.tp}`,
      brandId: link.brandId,
      subscriptionId: sub.id,
      linkId: link.id,
      action: 'modify',
      result: r.ok ? 'copied' : 'skipped',
      reason: r.ok ? '' : refusalReason(r.code, r.reason),
      message: r.ok ? `sl ${o.sl}, tp ${o.tp}` : r.reason,
      symbol: link.symbol,
      masterTicket: link.masterTicket,
      masterPrice: master.price,
      masterTime: link.masterTime,
      decidedAt,
      followerTicket: link.followerTicket,
      followerTime: ctx.clock.now(),
      createdAt: ctx.clock.now(),
    })
    .onConflictDoNothing()
}

/** Ends a skipped change's record key: the levels the copy kept (`#copy:<sl>:<tp>`). */
const KEPT = '#copy:'

/** The levels a skipped change's record says its copy kept; undefined without (an earlier version's). */
function keptLevels(key: string): Levels | undefined {
  const at = key.lastIndexOf(KEPT)
  if (at < 0) return undefined
  const [sl, tp] = key
    .slice(at + KEPT.length)
    .split(':')
    .map(Number)
  return sl === undefined || tp === undefined || Number.isNaN(sl) || Number.isNaN(tp) ? undefined : { sl, tp }
}

/** Whether a copy's levels are not what its master's are (mirrored for a reversed copy). */
function stopsDiffer(sub: Sub, master: Pick<OrderState, 'cmd' | 'sl' | 'tp'>, copy: OrderState) {
  const s = JSON.parse(sub.settings) as SubscriptionSettings
  if (s.copy_sl_tp !== 1) return false
  const o = copyOrder(master, s.reverse === 1, true)
  return o.sl !== copy.sl || o.tp !== copy.tp
}

/**
 * Copies just opened (copier/open-copy.ts, after their links are recorded open): the master may have
 * moved its stops between the copier's read and the copy's commit, when its change's event found the
 * link still `opening` and left it. Read after the links are open: a change committed later is copied by
 * its own event; one before is seen here, and the copy is given the master's levels (under a key of the
 * open's decision).
 */
export async function stopsAfterOpen(ctx: CopyCtx, opened: { link: Link; sub: Sub; generation: string }[]) {
  const copying = opened.filter(
    (o) => (JSON.parse(o.sub.settings) as SubscriptionSettings).copy_sl_tp === 1 && o.link.followerTicket,
  )
  if (copying.length === 0) return
  const states = await ctx.trading.orderStates([
    ...new Set(copying.flatMap((o) => [o.link.masterTicket, o.link.followerTicket!])),
  ])
  await Promise.all(
    copying.map(({ link, sub, generation }) => {
      const m = states.get(link.masterTicket)
      const f = states.get(link.followerTicket!)
      if (!m || !f || !LIVE.has(m.state) || !LIVE.has(f.state) || !stopsDiffer(sub, m, f)) return null
      return ctx.limit(() =>
        setStops(ctx, link, sub, { cmd: m.cmd, sl: m.sl, tp: m.tp, price: m.openPrice }, f, {
          trade: `copy:${sub.id}:${link.masterTicket}:modify:open${generation}`,
          record: `modify:${link.id}:open${generation}`,
        }),
      )
    }),
  )
}

const LIVE = new Set(['open', 'pending'])

/** Tries of the audit for one change not made (`retryStops`). */
const RETRIES = 5

/**
 * The chain of tries a copy's last skipped record belongs to: the record that started it (a change not
 * made, `origin`) and how many tries followed (a try's key is `modify:<link>:retry:<origin>:<try>`).
 */
function retryOf(linkId: number, r: { id: number; key: string }) {
  const prefix = `modify:${linkId}:retry:`
  if (!r.key.startsWith(prefix)) return { origin: r.id, tried: 0 }
  const [origin, tried] = r.key.slice(prefix.length).split(/[:#]/).map(Number)
  return Number.isInteger(origin) && Number.isInteger(tried)
    ? { origin: origin!, tried: tried! }
    : { origin: r.id, tried: RETRIES }
}

/**
 * The audit's retry of stop changes that failed (job `copytrade.audit`): an open link whose copy's levels
 * are not its master's, whose last SL/TP change by the copier was not made (refused, or failed), and whose
 * copy still has exactly the levels that change's record says it kept, is given the master's levels now.
 * A copy whose levels its follower changed after the refusal (or after its last copied change) is left as
 * the follower set it. At most RETRIES tries after one change not made, each under its own stable key
 * (`...:modify:retry:<record>:<try>`, the record of that change): a level refused again is not tried at
 * every run for ever (the master's next move starts again). The last records of all the links are read
 * in one statement.
 */
export async function retryStops(
  ctx: CopyCtx,
  rows: { link: Link; sub: Sub }[],
  states: Map<number, OrderState>,
) {
  const differ = rows.filter(({ link, sub }) => {
    const m = states.get(link.masterTicket)
    const f = link.followerTicket === null ? undefined : states.get(link.followerTicket)
    return m && f && LIVE.has(m.state) && LIVE.has(f.state) && stopsDiffer(sub, m, f)
  })
  if (differ.length === 0) return
  // the last stop change the copier recorded for each (by the subscriptions' index, then the links)
  const latest = ctx.db
    .select({ id: sql<number>`max(${copyRecords.id})` })
    .from(copyRecords)
    .where(
      and(
        inArray(copyRecords.subscriptionId, [...new Set(differ.map((d) => d.link.subscriptionId))]),
        inArray(
          copyRecords.linkId,
          differ.map((d) => d.link.id),
        ),
        eq(copyRecords.action, 'modify'),
      ),
    )
    .groupBy(copyRecords.linkId)
  const last = new Map(
    (
      await ctx.db
        .select({
          id: copyRecords.id,
          linkId: copyRecords.linkId,
          key: copyRecords.key,
          result: copyRecords.result,
        })
        .from(copyRecords)
        .where(inArray(copyRecords.id, latest))
    ).map((r) => [r.linkId!, r]),
  )
  await Promise.all(
    differ.map(({ link, sub }) => {
      const r = last.get(link.id)
      if (r?.result !== 'skipped') return null
      const m = states.get(link.masterTicket)!
      const f = states.get(link.followerTicket!)!
      // the copy's levels are still those the refusal left: not the follower's own since
      const kept = keptLevels(r.key)
      if (!kept || kept.sl !== f.sl || kept.tp !== f.tp) return null
      // a chain of tries starts at the change that was not made (its record), each try its own key
      const { origin, tried } = retryOf(link.id, r)
      if (tried >= RETRIES) return null
      return ctx.limit(() =>
        setStops(ctx, link, sub, { cmd: m.cmd, sl: m.sl, tp: m.tp, price: m.openPrice }, f, {
          trade: `copy:${sub.id}:${link.masterTicket}:modify:retry:${origin}:${tried + 1}`,
          record: `modify:${link.id}:retry:${origin}:${tried + 1}`,
        }),
      )
    }),
  )
}
