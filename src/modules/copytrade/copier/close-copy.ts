import { and, eq, inArray, lt, sql } from 'drizzle-orm'
import type { CopyCtx } from '../context'
import { partialCloseVolume } from '../domain/sizing'
import { copyLinks, copyRecords } from '../schema'
import { refusalReason } from './refusals'

/** A close that failed (market closed, a stale price) is tried again by the reconcile job after this. */
const CLOSE_RETRY_MS = 10_000

type Link = typeof copyLinks.$inferSelect

/**
 * Closes the follower positions of links in `closing` (the master closed, the subscription ended): claims
 * each under a lease, closes through the write port with the key `copy:<subscription>:<master ticket>:close`,
 * and records the close once. A position already gone (closed by hand or stopped out meanwhile) ends the
 * link; a refusal is recorded once with its reason and retried by the reconcile job.
 */
export async function closeLinks(ctx: CopyCtx, ids: number[]) {
  if (ids.length === 0) return
  const now = ctx.clock.now()
  const links = await ctx.db
    .update(copyLinks)
    .set({ leaseUntil: now + CLOSE_RETRY_MS, attempts: sql`${copyLinks.attempts} + 1`, updatedAt: now })
    .where(and(inArray(copyLinks.id, ids), eq(copyLinks.status, 'closing'), lt(copyLinks.leaseUntil, now)))
    .returning()
  await Promise.all(links.map((l) => ctx.limit(() => closeOne(ctx, l, now))))
}

async function closeOne(ctx: CopyCtx, link: Link, decidedAt: number) {
  if (link.followerTicket === null) return
  // a turn of the event loop per copy: on a local file every statement resolves at once, and the closes
  // of 1,000 followers ran as one chain of microtasks that held every request and timer for 1.0-1.4 s
  await new Promise((r) => setImmediate(r))
  const before = (await ctx.trading.orderStates([link.followerTicket])).get(link.followerTicket)
  const request = {
    brandId: link.brandId,
    actor: `copy:${link.subscriptionId}`,
    order: link.followerTicket,
  }
  // a pending copy (the master's pending order went, or its position closed before the copy's price came)
  // is cancelled, a position closed
  const r =
    before?.state === 'pending'
      ? await ctx.trading.cancel({
          ...request,
          idempotencyKey: `copy:${link.subscriptionId}:${link.masterTicket}:cancel`,
        })
      : await ctx.trading.close({
          ...request,
          idempotencyKey: `copy:${link.subscriptionId}:${link.masterTicket}:close`,
        })
  const o = (await ctx.trading.orderStates([link.followerTicket])).get(link.followerTicket)
  const gone = !r.ok && o !== undefined && o.state !== 'open' && o.state !== 'pending'
  if (!r.ok && !gone) {
    await record(ctx, link, {
      key: `close-skip:${link.id}`,
      action: 'close',
      result: 'skipped',
      reason: refusalReason(r.code, r.reason),
      message: `${r.reason}; retried`,
      decidedAt,
    })
    return
  }
  const now = ctx.clock.now()
  await ctx.db.transaction(async (tx) => {
    const done = await tx
      .update(copyLinks)
      .set({
        status: r.ok ? 'closed' : 'ended',
        reason: r.ok ? link.reason : 'CLOSED_ELSEWHERE',
        updatedAt: now,
      })
      .where(and(eq(copyLinks.id, link.id), eq(copyLinks.status, 'closing')))
      .returning({ id: copyLinks.id })
    if (done.length === 0) return
    await record(
      ctx,
      link,
      {
        key: `close:${link.id}`,
        action: 'close',
        result: r.ok ? 'copied' : 'skipped',
        reason: r.ok ? '' : 'CLOSED_ELSEWHERE',
        message: r.ok ? link.reason : 'the follower position was already closed',
        decidedAt,
        masterPrice: link.masterClosePrice ?? undefined,
        masterTime: link.masterCloseTime ?? undefined,
        followerPrice: o?.closePrice,
        followerTime: r.ok ? now : o?.closeTime,
        volume: o?.volume ?? link.followerVolume,
      },
      tx,
    )
  })
}

/**
 * The master closed part of its position, leaving `remaining`: each open link closes the same ratio of
 * its follower position (domain/sizing.ts). The key names the master's remaining volume, which only
 * falls, so the event's path and the reconcile job's path close the same part once.
 */
export async function partialCloseLinks(
  ctx: CopyCtx,
  links: Link[],
  remaining: number,
  masterPrice: number,
  masterTime: number,
) {
  await Promise.all(
    links.map((given) =>
      ctx.limit(async () => {
        let link = given
        if (link.status !== 'open' || link.followerTicket === null || remaining >= link.masterVolume) return
        const account = await ctx.accounts.read.account(link.followerLogin)
        const gs = account && (await ctx.market.refdata.forGroup(account.groupId, link.symbol))
        const lot = gs?.sec ?? { lotMin: 1, lotStep: 1 }
        // the master's ratio of what the follower holds now (it may have closed part by hand)
        const held = (await ctx.trading.orderStates([link.followerTicket])).get(link.followerTicket)
        if (held && held.state !== 'open') return
        link = { ...link, followerVolume: held?.volume ?? link.followerVolume }
        const volume = partialCloseVolume(
          link.followerVolume,
          link.masterVolume,
          link.masterVolume - remaining,
          lot,
        )
        const decidedAt = ctx.clock.now()
        const r =
          volume > 0
            ? await ctx.trading.close({
                brandId: link.brandId,
                actor: `copy:${link.subscriptionId}`,
                idempotencyKey: `copy:${link.subscriptionId}:${link.masterTicket}:pclose:${remaining}`,
                order: link.followerTicket!,
                ...(volume < link.followerVolume ? { volume } : {}),
              })
            : null
        if (r && !r.ok) {
          await record(ctx, link, {
            key: `pclose-skip:${link.id}:${remaining}`,
            action: 'partial_close',
            result: 'skipped',
            reason: refusalReason(r.code, r.reason),
            message: r.reason,
            decidedAt,
          })
          return
        }
        const now = ctx.clock.now()
        const whole = volume >= link.followerVolume
        await ctx.db.transaction(async (tx) => {
          const done = await tx
            .update(copyLinks)
            .set({
              masterVolume: remaining,
              followerVolume: link.followerVolume - volume,
              ...(whole
                ? { status: 'closed' as const, reason: 'master closed part; the rest was below lot_min' }
                : {}),
              updatedAt: now,
            })
            .where(
              and(
                eq(copyLinks.id, link.id),
                eq(copyLinks.masterVolume, link.masterVolume),
                eq(copyLinks.status, 'open'),
              ),
            )
            .returning({ id: copyLinks.id })
          if (done.length === 0) return
          await record(
            ctx,
            link,
            {
              key: `pclose:${link.id}:${remaining}`,
              action: 'partial_close',
              result: volume > 0 ? 'copied' : 'skipped',
              reason: volume > 0 ? '' : 'VOLUME_BELOW_MINIMUM',
              message: `master ${link.masterVolume} -> ${remaining}; follower ${link.followerVolume} -> ${link.followerVolume - volume}`,
              decidedAt,
              masterPrice,
              masterTime,
              followerTime: now,
              volume,
            },
            tx,
          )
        })
      }),
    ),
  )
}

type Q = Pick<CopyCtx['db'], 'insert'>

async function record(
  ctx: CopyCtx,
  link: Link,
  r: {
    key: string
    action: 'close' | 'partial_close'
    result: 'copied' | 'skipped'
    reason: string
    message: string
    decidedAt: number
    masterPrice?: number
    masterTime?: number
    followerPrice?: number
    followerTime?: number
    volume?: number
  },
  q: Q = ctx.db,
) {
  await q
    .insert(copyRecords)
    .values({
      key: r.key,
      brandId: link.brandId,
      subscriptionId: link.subscriptionId,
      linkId: link.id,
      action: r.action,
      result: r.result,
      reason: r.reason,
      message: r.message,
      symbol: link.symbol,
      masterTicket: link.masterTicket,
      masterPrice: r.masterPrice ?? link.masterPrice,
      masterTime: r.masterTime ?? link.masterTime,
      decidedAt: r.decidedAt,
      followerTicket: link.followerTicket,
      followerPrice: r.followerPrice ?? null,
      followerTime: r.followerTime ?? null,
      volume: r.volume ?? 0,
      createdAt: ctx.clock.now(),
    })
    .onConflictDoNothing()
}
