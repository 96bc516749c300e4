import { and, desc, eq, inArray } from 'drizzle-orm'
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

/**
 * The master moved its stop loss or take profit (event `eventId`): each open copy of a subscription that
 * copies stops gets the same levels (mirrored for a reversed copy), keyed by the event, so a redelivery
 * changes nothing and a move back to earlier levels is copied too.
 */
export async function copyStops(ctx: CopyCtx, eventId: number, p: TradePayload) {
  const rows = await ctx.db
    .select()
    .from(copyLinks)
    .innerJoin(copySubscriptions, eq(copySubscriptions.id, copyLinks.subscriptionId))
    .where(and(eq(copyLinks.masterTicket, p.ticket), eq(copyLinks.status, 'open')))
  const master = { cmd: p.cmd, sl: p.sl, tp: p.tp, price: p.open_price }
  await Promise.all(
    rows.map(({ copy_links: link, copy_subscriptions: sub }) =>
      ctx.limit(() =>
        setStops(ctx, link, sub, master, {
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
 * refusal, or the write that threw: the executor's database, a timeout) is recorded skipped, and the audit
 * tries it again with the master's levels then (`retryStops`); the record's key makes a redelivery record
 * nothing twice.
 */
async function setStops(
  ctx: CopyCtx,
  link: Link,
  sub: Sub,
  master: MasterStops,
  keys: { trade: string; record: string; refused?: string },
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
      key: r.ok ? keys.record : (keys.refused ?? keys.record),
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
        setStops(
          ctx,
          link,
          sub,
          { cmd: m.cmd, sl: m.sl, tp: m.tp, price: m.openPrice },
          {
            trade: `copy:${sub.id}:${link.masterTicket}:modify:open${generation}`,
            record: `modify:${link.id}:open${generation}`,
          },
        ),
      )
    }),
  )
}

const LIVE = new Set(['open', 'pending'])

/**
 * The audit's retry of stop changes that failed (job `copytrade.audit`): an open link whose copy's levels
 * are not its master's, and whose last SL/TP change by the copier was not made (refused, or failed), is
 * given the master's levels now (a new key per attempt; a refusal recorded once per level). A copy whose levels the follower
 * changed itself (its last copied change went through) is left as the follower set it.
 */
export async function retryStops(
  ctx: CopyCtx,
  rows: { link: Link; sub: Sub }[],
  states: Map<number, OrderState>,
  now: number,
) {
  const differ = rows.filter(({ link, sub }) => {
    const m = states.get(link.masterTicket)
    const f = link.followerTicket === null ? undefined : states.get(link.followerTicket)
    return m && f && LIVE.has(m.state) && LIVE.has(f.state) && stopsDiffer(sub, m, f)
  })
  if (differ.length === 0) return
  // the last stop change the copier recorded for each (by the subscription's index, then the link)
  const last = new Map<number, string>()
  for (const { link } of differ) {
    const [r] = await ctx.db
      .select({ result: copyRecords.result })
      .from(copyRecords)
      .where(
        and(
          eq(copyRecords.subscriptionId, link.subscriptionId),
          eq(copyRecords.linkId, link.id),
          inArray(copyRecords.action, ['modify']),
        ),
      )
      .orderBy(desc(copyRecords.id))
      .limit(1)
    if (r) last.set(link.id, r.result)
  }
  await Promise.all(
    differ
      .filter(({ link }) => last.get(link.id) === 'skipped')
      .map(({ link, sub }) => {
        const m = states.get(link.masterTicket)!
        return ctx.limit(() =>
          setStops(
            ctx,
            link,
            sub,
            { cmd: m.cmd, sl: m.sl, tp: m.tp, price: m.openPrice },
            {
              trade: `copy:${sub.id}:${link.masterTicket}:modify:retry:${now}`,
              record: `modify:${link.id}:retry:${now}`,
              // a retry refused again is recorded once per level it tried, not at every run
              refused: `modify:${link.id}:retry:${m.sl}:${m.tp}`,
            },
          ),
        )
      }),
  )
}
