import { and, eq, inArray, lt, type SQL, sql } from 'drizzle-orm'
import type { SQLiteUpdateSetSource } from 'drizzle-orm/sqlite-core'
import type { OrderState } from '../../trading'
import type { CopyCtx } from '../context'
import { partialCloseVolume } from '../domain/sizing'
import { SUB_STATUS } from '../domain/status'
import { copyLinks, copyRecords, copySubscriptions } from '../schema'
import { caseOfLink } from './case-of-link'
import { countCopiesTx, filledState, fillRecordTx } from './fills'
import { generation, tradeKey } from './keys'
import { PAUSE_CANCELLED } from './link-states'
import { refusalReason } from './refusals'
import { settleSoon } from './rewards'

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
  /** a pause's cancel found the pending copy filled: the position is the follower's, the link opens again */
  | { link: Link; kind: 'kept' }

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
  // a pause cancels a pending copy, never closes one: a copy that filled meanwhile stays (or is gone)
  const filled = links.filter(
    (l) => l.reason === PAUSE_CANCELLED && before.get(l.followerTicket!)?.state !== 'pending',
  )
  const results = await Promise.all(
    links
      .filter((l) => !filled.includes(l))
      .map((link) =>
        ctx.limit(async () => {
          try {
            return await closeCopy(ctx, link, before)
          } catch (e) {
            // one link's failure leaves the others' outcomes to be written; this one stays `closing`, its
            // lease lapses and the reconcile job tries it again (the key makes a second close a replay)
            failed(ctx, link, e)
            return null
          }
        }),
      ),
  )
  const after = await ctx.trading.orderStates(tickets)
  // what a pause's cancel met: the copy still open (it filled), gone after filling, or cancelled or
  // expired already (as good as the cancel: the link stays revivable)
  const kept = (link: Link): CloseOutcome => {
    const state = after.get(link.followerTicket!)?.state
    if (state === 'open') return { link, kind: 'kept' }
    if (state === 'cancelled' || state === 'expired') return { link, kind: 'closed', at: ctx.clock.now() }
    return { link, kind: 'gone' }
  }
  const outcomes = results
    .flatMap((x) => (x ? [x] : []))
    .map(({ link, r, at }): CloseOutcome => {
      if (r.ok) return { link, kind: 'closed', at }
      // the pause's cancel lost to the fill
      if (link.reason === PAUSE_CANCELLED && after.get(link.followerTicket!)?.state !== 'pending')
        return kept(link)
      const o = after.get(link.followerTicket!)
      if (o !== undefined && o.state !== 'open' && o.state !== 'pending') return { link, kind: 'gone' }
      return {
        link,
        kind: 'refused',
        reason: refusalReason(r.code, r.reason),
        message: `${r.reason}; retried`,
      }
    })
  outcomes.push(...filled.map(kept))
  await finishCloses(ctx, outcomes, after, decidedAt)
  // pending copies a pause found filled (kept open, or closed since): their fill counts
  const fills = links.filter(
    (l) => l.reason === PAUSE_CANCELLED && filledState(after.get(l.followerTicket!)?.state),
  )
  if (fills.length > 0) await countPauseFills(ctx, fills)
}

/**
 * Pending copies a pause met filled: their fill counts now (its event found the link closing and counted
 * nothing), once by its `fill` record. A link kept open whose subscription ended meanwhile (the end found
 * it closing for the pause, and left it) is closed now: an ended subscription holds no copies.
 */
async function countPauseFills(ctx: CopyCtx, links: Link[]) {
  const reclose: number[] = []
  const rebates = await ctx.uow.run(async (tx) => {
    const rows = await tx
      .select({ link: copyLinks, sub: copySubscriptions })
      .from(copyLinks)
      .innerJoin(copySubscriptions, eq(copySubscriptions.id, copyLinks.subscriptionId))
      .where(
        inArray(
          copyLinks.id,
          links.map((l) => l.id),
        ),
      )
    const counted = []
    for (const r of rows) {
      const volume = links.find((l) => l.id === r.link.id)!.followerVolume
      if (await fillRecordTx(ctx, tx, r.link, r.sub)) counted.push({ ...r, volume })
      if (r.link.status !== 'open' || r.sub.status !== SUB_STATUS.DISABLED) continue
      const [moved] = await tx
        .update(copyLinks)
        .set({ status: 'closing', reason: r.sub.statusReason || 'the subscription ended', leaseUntil: 0 })
        .where(and(eq(copyLinks.id, r.link.id), eq(copyLinks.status, 'open')))
        .returning({ id: copyLinks.id })
      if (moved) reclose.push(moved.id)
    }
    return countCopiesTx(ctx, tx, counted)
  })
  if (rebates.length > 0) await settleSoon(ctx, rebates)
  if (reclose.length > 0) await closeLinks(ctx, reclose)
}

/** Closes (or cancels, if still pending) one copy through the write port, under its link's key. */
async function closeCopy(ctx: CopyCtx, link: Link, before: Map<number, OrderState>) {
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
          idempotencyKey: tradeKey(link, 'cancel'),
        })
      : await ctx.trading.close({
          ...request,
          idempotencyKey: tradeKey(link, 'close'),
        })
  return { link, r, at: ctx.clock.now() }
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
  await finish(
    ctx,
    outcomes,
    (part, now) => ({
      set: {
        status: caseOfLink(part, (o) =>
          o.kind === 'closed' ? 'closed' : o.kind === 'kept' ? 'open' : 'ended',
        ),
        reason: caseOfLink(part, (o) =>
          o.kind === 'closed' ? o.link.reason : o.kind === 'kept' ? '' : 'CLOSED_ELSEWHERE',
        ),
        updatedAt: now,
      },
      guard: eq(copyLinks.status, 'closing'),
    }),
    (o, now) => closeRecord(o, after.get(o.link.followerTicket!), decidedAt, now),
  )
}

function closeRecord(o: CloseOutcome, order: OrderState | undefined, decidedAt: number, now: number) {
  const { link } = o
  if (o.kind === 'refused')
    return recordRow(link, now, {
      key: `close-skip:${link.id}${generation(link)}`,
      action: 'close',
      result: 'skipped',
      reason: o.reason,
      message: o.message,
      decidedAt,
    })
  if (o.kind === 'kept')
    return recordRow(link, now, {
      key: `pause-kept:${link.id}${generation(link)}`,
      action: 'close',
      result: 'skipped',
      reason: 'FILLED',
      message: 'the pending copy had filled before the pause cancelled it: the position stays',
      decidedAt,
    })
  const closed = o.kind === 'closed'
  return recordRow(link, now, {
    key: `close:${link.id}${generation(link)}`,
    action: 'close',
    result: closed ? 'copied' : 'skipped',
    reason: closed ? '' : 'CLOSED_ELSEWHERE',
    message: closed ? link.reason : 'the follower position was already closed',
    decidedAt,
    masterPrice: link.masterClosePrice ?? undefined,
    masterTime: link.masterCloseTime ?? undefined,
    followerPrice: order?.closePrice ?? null,
    followerTime: closed ? o.at : (order?.closeTime ?? null),
    volume: order?.volume ?? link.followerVolume,
  })
}

type PartialOutcome =
  /** closed its part (volume > 0), or nothing to close (below the step): the link takes the new volumes */
  | { link: Link; kind: 'done'; volume: number; decidedAt: number; at: number }
  /** refused: recorded once; the reconcile job's audit tries the part again */
  | { link: Link; kind: 'refused'; reason: string; message: string; decidedAt: number }

/**
 * The master closed part of its position, leaving `remaining`: each open link closes the same ratio of
 * its follower position (domain/sizing.ts). The key names the master's remaining volume, which only
 * falls, so the event's path and the reconcile job's path close the same part once. As whole closes: the
 * follower orders read once per chunk, the parts closed together, the outcomes written in one
 * transaction (a link another path moved meanwhile, its master volume changed, is left alone).
 */
export async function partialCloseLinks(
  ctx: CopyCtx,
  links: Link[],
  remaining: number,
  masterPrice: number,
  masterTime: number,
) {
  const live = links.filter(
    (l) => l.status === 'open' && l.followerTicket !== null && remaining < l.masterVolume,
  )
  for (let i = 0; i < live.length; i += CHUNK) {
    const chunk = live.slice(i, i + CHUNK)
    const held = await ctx.trading.orderStates(chunk.map((l) => l.followerTicket!))
    const outcomes = await Promise.all(
      chunk.map((given) =>
        ctx.limit(() =>
          partOf(ctx, given, held, remaining).catch((e) => {
            // as a whole close's: the others are written; the audit job takes this link up again
            failed(ctx, given, e)
            return null
          }),
        ),
      ),
    )
    await finishPartials(
      ctx,
      outcomes.filter((o) => o !== null),
      remaining,
      masterPrice,
      masterTime,
    )
  }
}

/** One link's part of a master's partial close: worked out on what the follower holds, then closed. */
async function partOf(
  ctx: CopyCtx,
  given: Link,
  held: Map<number, OrderState>,
  remaining: number,
): Promise<PartialOutcome | null> {
  // the master's ratio of what the follower holds now (it may have closed part by hand)
  const h = held.get(given.followerTicket!)
  if (h && h.state !== 'open') return null
  const link = { ...given, followerVolume: h?.volume ?? given.followerVolume }
  const account = await ctx.accounts.read.account(link.followerLogin)
  const gs = account && (await ctx.market.refdata.forGroup(account.groupId, link.symbol))
  const lot = gs?.sec ?? { lotMin: 1, lotStep: 1 }
  const volume = partialCloseVolume(
    link.followerVolume,
    link.masterVolume,
    link.masterVolume - remaining,
    lot,
  )
  const decidedAt = ctx.clock.now()
  if (volume > 0) {
    // a turn of the loop per copy, as whole closes
    await new Promise((r) => setImmediate(r))
    const r = await ctx.trading.close({
      brandId: link.brandId,
      actor: `copy:${link.subscriptionId}`,
      idempotencyKey: tradeKey(link, `pclose:${remaining}`),
      order: link.followerTicket!,
      ...(volume < link.followerVolume ? { volume } : {}),
    })
    if (!r.ok)
      return {
        link,
        kind: 'refused',
        reason: refusalReason(r.code, r.reason),
        message: r.reason,
        decidedAt,
      }
  }
  return { link, kind: 'done', volume, decidedAt, at: ctx.clock.now() }
}

async function finishPartials(
  ctx: CopyCtx,
  outcomes: PartialOutcome[],
  remaining: number,
  masterPrice: number,
  masterTime: number,
) {
  const whole = (o: PartialOutcome) => o.kind === 'done' && o.volume >= o.link.followerVolume
  const volume = (o: PartialOutcome) => (o.kind === 'done' ? o.volume : 0)
  await finish(
    ctx,
    outcomes,
    (part, now) => ({
      set: {
        masterVolume: remaining,
        followerVolume: caseOfLink(part, (o) => o.link.followerVolume - volume(o)),
        status: caseOfLink(part, (o) => (whole(o) ? 'closed' : 'open')),
        reason: caseOfLink(part, (o) =>
          whole(o) ? 'master closed part; the rest was below lot_min' : sql`${copyLinks.reason}`,
        ),
        updatedAt: now,
      },
      // the volume each link was decided on: a link another path moved meanwhile is left alone
      guard: and(
        sql`${copyLinks.masterVolume} = ${caseOfLink(part, (o) => o.link.masterVolume)}`,
        eq(copyLinks.status, 'open'),
      )!,
    }),
    (o, now) => {
      const { link } = o
      if (o.kind === 'refused')
        return recordRow(link, now, {
          key: `pclose-skip:${link.id}:${remaining}${generation(link)}`,
          action: 'partial_close',
          result: 'skipped',
          reason: o.reason,
          message: o.message,
          decidedAt: o.decidedAt,
        })
      return recordRow(link, now, {
        key: `pclose:${link.id}:${remaining}${generation(link)}`,
        action: 'partial_close',
        result: o.volume > 0 ? 'copied' : 'skipped',
        reason: o.volume > 0 ? '' : 'VOLUME_BELOW_MINIMUM',
        message: `master ${link.masterVolume} -> ${remaining}; follower ${link.followerVolume} -> ${link.followerVolume - o.volume}`,
        decidedAt: o.decidedAt,
        masterPrice,
        masterTime,
        followerTime: o.at,
        volume: o.volume,
      })
    },
  )
}

/**
 * One transaction for a chunk's outcomes: every outcome but a refusal moves its link (one statement per
 * 100 links, under `guard`: a link another path moved meanwhile matches no row and gets no record), then
 * the records of the links moved and of the refusals.
 */
async function finish<O extends { link: Link; kind: string }>(
  ctx: CopyCtx,
  outcomes: O[],
  move: (part: O[], now: number) => { set: SQLiteUpdateSetSource<typeof copyLinks>; guard: SQL },
  record: (o: O, now: number) => typeof copyRecords.$inferInsert,
) {
  if (outcomes.length === 0) return
  const now = ctx.clock.now()
  await ctx.uow.run(async (tx) => {
    const moved = new Set<number>()
    for (let i = 0; i < outcomes.length; i += FINISH_CHUNK) {
      const part = outcomes.slice(i, i + FINISH_CHUNK).filter((o) => o.kind !== 'refused')
      if (part.length === 0) continue
      const { set, guard } = move(part, now)
      const rows = await tx
        .update(copyLinks)
        .set(set)
        .where(
          and(
            inArray(
              copyLinks.id,
              part.map((o) => o.link.id),
            ),
            guard,
          ),
        )
        .returning({ id: copyLinks.id })
      for (const r of rows) moved.add(r.id)
    }
    const rows = outcomes
      .filter((o) => o.kind === 'refused' || moved.has(o.link.id))
      .map((o) => record(o, now))
    for (let i = 0; i < rows.length; i += FINISH_CHUNK)
      await tx
        .insert(copyRecords)
        .values(rows.slice(i, i + FINISH_CHUNK))
        .onConflictDoNothing()
  })
}

function failed(ctx: CopyCtx, link: Link, e: unknown) {
  ctx.logger.log('error', 'copy close failed', { link: link.id, ticket: link.followerTicket, err: String(e) })
}

/** A close's or partial close's record of a link (the open's are written by open-copy.ts). */
function recordRow(
  link: Link,
  createdAt: number,
  r: {
    key: string
    action: 'close' | 'partial_close'
    result: 'copied' | 'skipped'
    reason: string
    message: string
    decidedAt: number
    masterPrice?: number
    masterTime?: number
    followerPrice?: number | null
    followerTime?: number | null
    volume?: number
  },
): typeof copyRecords.$inferInsert {
  return {
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
    createdAt,
  }
}
