import { and, eq, inArray, lt, sql } from 'drizzle-orm'
import type { OrderState } from '../../trading'
import type { CopyCtx } from '../context'
import { partialCloseVolume } from '../domain/sizing'
import { copyLinks, copyRecords } from '../schema'
import { refusalReason } from './refusals'

/** A close that failed (market closed, a stale price) is tried again by the reconcile job after this. */
const CLOSE_RETRY_MS = 10_000

type Link = typeof copyLinks.$inferSelect

/** Links per claim: their follower orders are read in one statement before and one after the closes. */
const CHUNK = 400
/** Links per statement when their outcomes are recorded (records have 18 columns). */
const FINISH_CHUNK = 100

type CloseOutcome =
  /** closed (or cancelled) by this call */
  | { link: Link; kind: 'closed'; at: number }
  /** the follower position was gone already (closed by hand, stopped out): the link ends */
  | { link: Link; kind: 'gone' }
  /** refused (market closed, a stale price): recorded once, retried by the reconcile job */
  | { link: Link; kind: 'refused'; reason: string; message: string }

/**
 * Closes the follower positions of links in `closing` (the master closed, the subscription ended): claims
 * them under a lease, closes each through the write port with the key
 * `copy:<subscription>:<master ticket>:close` (all at once: the group commit takes them together), and
 * records the outcomes in one transaction per chunk. A position already gone (closed by hand or stopped
 * out meanwhile) ends the link; a refusal is recorded once with its reason and retried by the reconcile
 * job. The follower orders are read once before and once after the closes, not twice per link: with a
 * master's 1,000 followers on sqld the per-link reads and transactions took 1.9 s.
 */
export async function closeLinks(ctx: CopyCtx, ids: number[]) {
  const chunks: number[][] = []
  for (let i = 0; i < ids.length; i += CHUNK) chunks.push(ids.slice(i, i + CHUNK))
  await Promise.all(chunks.map((c) => closeChunk(ctx, c)))
}

async function closeChunk(ctx: CopyCtx, ids: number[]) {
  if (ids.length === 0) return
  const decidedAt = ctx.clock.now()
  const links = (
    await ctx.db
      .update(copyLinks)
      .set({
        leaseUntil: decidedAt + CLOSE_RETRY_MS,
        attempts: sql`${copyLinks.attempts} + 1`,
        updatedAt: decidedAt,
      })
      .where(
        and(inArray(copyLinks.id, ids), eq(copyLinks.status, 'closing'), lt(copyLinks.leaseUntil, decidedAt)),
      )
      .returning()
  ).filter((l) => l.followerTicket !== null)
  if (links.length === 0) return
  const tickets = links.map((l) => l.followerTicket!)
  const before = await ctx.trading.orderStates(tickets)
  const results = await Promise.all(
    links.map((link) =>
      ctx.limit(async () => {
        // a turn of the event loop per copy: on a local file every statement resolves at once, and the
        // closes of 1,000 followers ran as one chain of microtasks that held every request and timer
        await new Promise((r) => setImmediate(r))
        const request = {
          brandId: link.brandId,
          actor: `copy:${link.subscriptionId}`,
          order: link.followerTicket!,
        }
        // a pending copy (the master's pending order went, or its position closed before the copy's
        // price came) is cancelled, a position closed
        const r =
          before.get(link.followerTicket!)?.state === 'pending'
            ? await ctx.trading.cancel({
                ...request,
                idempotencyKey: `copy:${link.subscriptionId}:${link.masterTicket}:cancel`,
              })
            : await ctx.trading.close({
                ...request,
                idempotencyKey: `copy:${link.subscriptionId}:${link.masterTicket}:close`,
              })
        return { link, r, at: ctx.clock.now() }
      }),
    ),
  )
  const after = await ctx.trading.orderStates(tickets)
  const outcomes = results.map(({ link, r, at }): CloseOutcome => {
    if (r.ok) return { link, kind: 'closed', at }
    const o = after.get(link.followerTicket!)
    if (o !== undefined && o.state !== 'open' && o.state !== 'pending') return { link, kind: 'gone' }
    return { link, kind: 'refused', reason: refusalReason(r.code, r.reason), message: `${r.reason}; retried` }
  })
  await finishCloses(ctx, outcomes, after, decidedAt)
}

/**
 * Records a chunk's outcomes in one transaction: links closed or ended (one that another executor
 * finished meanwhile is left alone, and gets no record), then a record per link moved and per refusal.
 */
async function finishCloses(
  ctx: CopyCtx,
  outcomes: CloseOutcome[],
  after: Map<number, OrderState>,
  decidedAt: number,
) {
  const now = ctx.clock.now()
  await ctx.uow.run(async (tx) => {
    const moved = new Set<number>()
    for (let i = 0; i < outcomes.length; i += FINISH_CHUNK) {
      const part = outcomes.slice(i, i + FINISH_CHUNK).filter((o) => o.kind !== 'refused')
      if (part.length === 0) continue
      const byId = (value: (o: CloseOutcome) => string) =>
        sql`case ${copyLinks.id} ${sql.join(
          part.map((o) => sql`when ${o.link.id} then ${value(o)}`),
          sql` `,
        )} end`
      const rows = await tx
        .update(copyLinks)
        .set({
          status: byId((o) => (o.kind === 'closed' ? 'closed' : 'ended')),
          reason: byId((o) => (o.kind === 'closed' ? o.link.reason : 'CLOSED_ELSEWHERE')),
          updatedAt: now,
        })
        .where(
          and(
            inArray(
              copyLinks.id,
              part.map((o) => o.link.id),
            ),
            eq(copyLinks.status, 'closing'),
          ),
        )
        .returning({ id: copyLinks.id })
      for (const r of rows) moved.add(r.id)
    }
    const records = outcomes
      .filter((o) => o.kind === 'refused' || moved.has(o.link.id))
      .map((o) => closeRecord(o, after.get(o.link.followerTicket!), decidedAt, now))
    for (let i = 0; i < records.length; i += FINISH_CHUNK)
      await tx
        .insert(copyRecords)
        .values(records.slice(i, i + FINISH_CHUNK))
        .onConflictDoNothing()
  })
}

function closeRecord(
  o: CloseOutcome,
  order: OrderState | undefined,
  decidedAt: number,
  now: number,
): typeof copyRecords.$inferInsert {
  const { link } = o
  const common = {
    brandId: link.brandId,
    subscriptionId: link.subscriptionId,
    linkId: link.id,
    action: 'close' as const,
    symbol: link.symbol,
    masterTicket: link.masterTicket,
    decidedAt,
    followerTicket: link.followerTicket,
    createdAt: now,
  }
  if (o.kind === 'refused')
    return {
      ...common,
      key: `close-skip:${link.id}`,
      result: 'skipped',
      reason: o.reason,
      message: o.message,
      masterPrice: link.masterPrice,
      masterTime: link.masterTime,
      followerPrice: null,
      followerTime: null,
      volume: 0,
    }
  const closed = o.kind === 'closed'
  return {
    ...common,
    key: `close:${link.id}`,
    result: closed ? 'copied' : 'skipped',
    reason: closed ? '' : 'CLOSED_ELSEWHERE',
    message: closed ? link.reason : 'the follower position was already closed',
    masterPrice: link.masterClosePrice ?? link.masterPrice,
    masterTime: link.masterCloseTime ?? link.masterTime,
    followerPrice: order?.closePrice ?? null,
    followerTime: closed ? o.at : (order?.closeTime ?? null),
    volume: order?.volume ?? link.followerVolume,
  }
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
