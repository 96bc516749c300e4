import { and, eq, inArray, lt } from 'drizzle-orm'
import type { CopyCtx } from '../context'
import { copiesCloses, type SubscriptionSettings } from '../domain/settings'
import { copyLinks, copySubscriptions } from '../schema'
import { closeLinks, partialCloseLinks } from './close-copy'
import { openLinks } from './open-copy'

/** A pending link this old was missed by its fan-out's executor (a crash, a failover): the job opens it. */
const PENDING_GRACE_MS = 3_000

/**
 * The copier's safety net (job `copytrade.reconcile`), every few seconds on one instance:
 * - pending links left by an executor that died, and opens whose lease lapsed, are executed again (an
 *   open taken over asks trading whether its key already opened: never twice);
 * - closes that failed (market closed, stale price) or whose executor died are tried again;
 * - each open link is checked against trading: a master position that is gone closes the copy (a
 *   close event missed); one that shrank closes the same part; a follower position closed by hand ends it.
 */
export async function reconcile(ctx: CopyCtx) {
  const now = ctx.clock.now()
  const stale = await ctx.db
    .select({ id: copyLinks.id, status: copyLinks.status })
    .from(copyLinks)
    .where(
      and(
        inArray(copyLinks.status, ['pending', 'opening', 'closing']),
        lt(copyLinks.updatedAt, now - PENDING_GRACE_MS),
        lt(copyLinks.leaseUntil, now),
      ),
    )
    .limit(1000)
  await openLinks(
    ctx,
    stale.filter((l) => l.status !== 'closing').map((l) => l.id),
  )
  await closeLinks(
    ctx,
    stale.filter((l) => l.status === 'closing').map((l) => l.id),
  )

  const rows = await ctx.db
    .select({ link: copyLinks, settings: copySubscriptions.settings })
    .from(copyLinks)
    .innerJoin(copySubscriptions, eq(copySubscriptions.id, copyLinks.subscriptionId))
    .where(eq(copyLinks.status, 'open'))
    .limit(5000)
  if (rows.length === 0) return
  const open = rows.map((r) => r.link)
  const closes = new Map(
    rows.map((r) => [r.link.id, copiesCloses((JSON.parse(r.settings) as SubscriptionSettings).copy_mode)]),
  )
  const states = await ctx.trading.orderStates([
    ...new Set([...open.map((l) => l.masterTicket), ...open.map((l) => l.followerTicket!)]),
  ])
  const toClose: number[] = []
  for (const l of open) {
    const f = states.get(l.followerTicket!)
    if (f?.state !== 'open') {
      await ctx.db
        .update(copyLinks)
        .set({ status: 'ended', reason: 'CLOSED_ELSEWHERE', updatedAt: now })
        .where(and(eq(copyLinks.id, l.id), eq(copyLinks.status, 'open')))
      continue
    }
    const m = states.get(l.masterTicket)
    if (!closes.get(l.id)) {
      // OPEN_ONLY: the copy outlives the master's position, unlinked
      if (m?.state !== 'open')
        await ctx.db
          .update(copyLinks)
          .set({ status: 'ended', reason: 'COPY_MODE', updatedAt: now })
          .where(and(eq(copyLinks.id, l.id), eq(copyLinks.status, 'open')))
      continue
    }
    if (m?.state !== 'open') {
      const moved = await ctx.db
        .update(copyLinks)
        .set({
          status: 'closing',
          reason: 'the master closed (reconciled)',
          leaseUntil: 0,
          masterClosePrice: m?.closePrice ?? null,
          masterCloseTime: m?.closeTime ?? null,
          updatedAt: now,
        })
        .where(and(eq(copyLinks.id, l.id), eq(copyLinks.status, 'open')))
        .returning({ id: copyLinks.id })
      if (moved.length > 0) toClose.push(l.id)
    } else if (m.volume < l.masterVolume) await partialCloseLinks(ctx, [l], m.volume, m.closePrice, now)
  }
  await closeLinks(ctx, toClose)
}
