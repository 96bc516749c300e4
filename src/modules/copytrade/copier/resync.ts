import { and, asc, count, eq, inArray, sql } from 'drizzle-orm'
import type { CopyCtx } from '../context'
import { copiesOpens, type SubscriptionSettings } from '../domain/settings'
import { SUB_STATUS } from '../domain/status'
import { copyLinks, copyMasters, copySubscriptions } from '../schema'
import { isCopy } from './consumers'
import { revivable } from './link-states'
import { openLinks } from './open-copy'

/**
 * Copies a resync opens inside the request that made it (a subscription created, changed or resumed);
 * the master's other positions stay `pending` links, which the job `copytrade.reconcile` (cluster, 5 s,
 * under its lease; each link claimed under its own lease, copy-once keys) opens after PENDING_GRACE_MS,
 * a batch a run. So the answer comes back once these are decided, and the rest follow within seconds.
 *
 * At the edge a Worker invocation may make 1,000 subrequests (every libSQL HTTP call and Upstash REST
 * call counts) and a copy's open costs about 16 of them (its checks, reads, the open's transaction, the
 * caches and the bus; 80 copies took 1,298): a request that opened every copy of a master holding 60 or
 * more positions failed partway with a 500, copies opened and links left `opening` until their lease
 * lapsed. 40 copies (about 650) leave room for the request's own reads and writes. On a Bun server the
 * group commit takes the copies together: 1,000 (the reconcile job's batch) only bounds the request's
 * time for a master holding thousands of positions.
 */
export const RESYNC_OPENS_IN_REQUEST = { edge: 40, server: 1_000 } as const

/**
 * Copies the master's open positions that the subscription has no link for yet, at the current price
 * (a subscription created, changed or resumed). A position the follower closed by hand keeps its ended
 * link, so it is never reopened (CopyFactory reopens it; its users complain). Positions that are
 * themselves copies of another master are not copied (no chains, no loops). At most
 * RESYNC_OPENS_IN_REQUEST copies are opened here; the others follow from copytrade.reconcile.
 */
export async function resyncSubscription(ctx: CopyCtx, subId: number) {
  const [sub] = await ctx.db.select().from(copySubscriptions).where(eq(copySubscriptions.id, subId))
  if (!sub || sub.status !== SUB_STATUS.ACTIVE) return
  const s = JSON.parse(sub.settings) as SubscriptionSettings
  if (!copiesOpens(s.copy_mode)) return
  // a master disabled (by its owner or by staff) is copied no more, whatever the follower changes
  const [master] = await ctx.db
    .select({ enabled: copyMasters.enabled })
    .from(copyMasters)
    .where(eq(copyMasters.id, sub.masterId))
  if (master?.enabled !== 1) return
  const positions = (await ctx.trading.openPositionsOf(sub.masterLogin)).filter(
    (p) => p.cmd <= 1 && !isCopy(p),
  )
  if (positions.length === 0) return
  const copies = new Set(
    (
      await ctx.db
        .select({ t: copyLinks.followerTicket })
        .from(copyLinks)
        .where(
          inArray(
            copyLinks.followerTicket,
            positions.map((p) => p.ticket),
          ),
        )
    ).map((r) => r.t),
  )
  const now = ctx.clock.now()
  const fresh = positions.filter((p) => !copies.has(p.ticket))
  if (fresh.length === 0) return
  // a link skipped for a reason that may no longer hold (paused, filtered, copy mode, too many
  // positions, too old...), or whose pending copy a pause cancelled, is tried again; one the follower
  // ended by closing its copy never is. Each revival has its own record key (open-copy.ts recordKey).
  // as the master holds it now: a part it closed meanwhile is not copied, a pending order that filled
  // is copied as the position it is
  const held = (v: (p: (typeof fresh)[number]) => number) =>
    sql`case ${copyLinks.masterTicket} ${sql.join(
      fresh.map((p) => sql`when ${p.ticket} then ${v(p)}`),
      sql` `,
    )} end`
  await ctx.db
    .update(copyLinks)
    .set({
      status: 'pending',
      reason: '',
      masterVolume: held((p) => p.volume),
      masterCmd: held((p) => p.cmd),
      resync: sql`${copyLinks.resync} + 2`,
      leaseUntil: 0,
      updatedAt: now,
    })
    .where(
      and(
        eq(copyLinks.subscriptionId, sub.id),
        revivable,
        inArray(
          copyLinks.masterTicket,
          fresh.map((p) => p.ticket),
        ),
      ),
    )
  await ctx.db
    .insert(copyLinks)
    .values(
      fresh.map((p) => ({
        brandId: sub.brandId,
        subscriptionId: sub.id,
        masterLogin: sub.masterLogin,
        masterTicket: p.ticket,
        followerLogin: sub.followerLogin,
        status: 'pending' as const,
        symbol: p.symbol,
        masterCmd: p.cmd,
        masterVolume: p.volume,
        masterPrice: p.openPrice,
        masterTime: p.openTime,
        resync: 1,
        createdAt: now,
        updatedAt: now,
      })),
    )
    .onConflictDoNothing()
  // the first links are opened here, the rest left pending for copytrade.reconcile (RESYNC_OPENS_IN_REQUEST)
  const pending = await ctx.db
    .select({ id: copyLinks.id })
    .from(copyLinks)
    .where(and(eq(copyLinks.subscriptionId, sub.id), eq(copyLinks.status, 'pending')))
    .orderBy(asc(copyLinks.id))
    .limit(ctx.edge ? RESYNC_OPENS_IN_REQUEST.edge : RESYNC_OPENS_IN_REQUEST.server)
  await openLinks(
    ctx,
    pending.map((p) => p.id),
  )
}

/**
 * The subscription's copies still to come: its links pending or being opened (those a resync left for
 * copytrade.reconcile, and any a fan-out is opening). Told in the answer of the request that resynced.
 */
export async function copiesPending(ctx: CopyCtx, subId: number) {
  const [row] = await ctx.db
    .select({ n: count() })
    .from(copyLinks)
    .where(and(eq(copyLinks.subscriptionId, subId), inArray(copyLinks.status, ['pending', 'opening'])))
  return row?.n ?? 0
}
