import { and, eq } from 'drizzle-orm'
import type { TradePayload } from '../../trading'
import type { CopyCtx } from '../context'
import type { SubscriptionSettings } from '../domain/settings'
import { copyOrder } from '../domain/sizing'
import { copyLinks, copyRecords, copySubscriptions } from '../schema'
import { refusalReason } from './refusals'

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
  await Promise.all(
    rows.map(({ copy_links: link, copy_subscriptions: sub }) =>
      ctx.limit(async () => {
        const s = JSON.parse(sub.settings) as SubscriptionSettings
        if (s.copy_sl_tp !== 1 || link.followerTicket === null) return
        const o = copyOrder({ cmd: p.cmd, sl: p.sl, tp: p.tp }, s.reverse === 1, true)
        const decidedAt = ctx.clock.now()
        const r = await ctx.trading.modify({
          brandId: link.brandId,
          actor: `copy:${sub.id}`,
          idempotencyKey: `copy:${sub.id}:${p.ticket}:modify:${eventId}`,
          order: link.followerTicket,
          sl: o.sl,
          tp: o.tp,
        })
        await ctx.db
          .insert(copyRecords)
          .values({
            key: `modify:${link.id}:${eventId}`,
            brandId: link.brandId,
            subscriptionId: sub.id,
            linkId: link.id,
            action: 'modify',
            result: r.ok ? 'copied' : 'skipped',
            reason: r.ok ? '' : refusalReason(r.code, r.reason),
            message: r.ok ? `sl ${o.sl}, tp ${o.tp}` : r.reason,
            symbol: link.symbol,
            masterTicket: p.ticket,
            masterPrice: p.open_price,
            masterTime: link.masterTime,
            decidedAt,
            followerTicket: link.followerTicket,
            followerTime: ctx.clock.now(),
            createdAt: ctx.clock.now(),
          })
          .onConflictDoNothing()
      }),
    ),
  )
}
