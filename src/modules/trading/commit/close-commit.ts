import { inArray } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import { isBusy } from '../../../kernel/db/errors'
import { type Committer, GroupCommit, PerRequestCommit } from '../../../kernel/db/group-commit'
import type { Work } from '../../../kernel/db/unit-of-work'
import type { PendingEvent } from '../../../kernel/events/topic'
import type { OrderRow } from '../book/positions'
import type { TradingCtx } from '../context'
import { refuse } from '../errors'
import { tradeRequests } from '../schema'
import { type CloseInput, type CloseResult, closeManyTx } from './execution'
import type { TradeKey } from './idempotency'

/** A close checked against account, symbol and volume, priced, waiting for its commit. */
export interface CloseRequest {
  input: Omit<CloseInput, 'now'>
  /** The idempotency key and who asks (recorded with the key). */
  key?: TradeKey
  actor: string
}

/** What a close commit answers: closed, a repeat of a key already used (nothing done), or the position moved. */
export type Closed = { kind: 'closed'; result: CloseResult } | { kind: 'replay' } | { kind: 'moved' }

/**
 * The committer of closes, and of many closes of one request (a group close): `submitAll` answers each
 * close with its outcome or an Error of its own.
 */
export interface CloseCommitter extends Committer<CloseRequest, Closed> {
  submitAll(reqs: CloseRequest[]): Promise<(Closed | Error)[]>
}

/** Closes a transaction of a group close takes at the edge (closeManyTx writes 100 to a statement). */
export const CLOSES_PER_TRANSACTION = 100

const asError = (e: unknown) => (e instanceof Error ? e : new Error(String(e)))

const keyReused = () => refuse('keyReused', 'Idempotency-Key: already used for a different request')

/**
 * Closes by group commit (kernel/db/group-commit, as opens: ADR 0001, 0019): the closes that arrive
 * together (a master's followers, a burst of clients) commit in one transaction with a few set-based
 * statements (commit/execution.ts closeManyTx) instead of five round trips each. Keys are read inside the write
 * transaction, so a repeat racing its first request on another instance closes nothing twice.
 */
export function closeCommitter(
  ctx: TradingCtx,
  track: (rows: { order: OrderRow }[]) => Promise<void>,
): CloseCommitter {
  const afterCommit = async (all: Closed[]) => {
    // the position that stays open after a partial close, the closed row after a whole one
    const changed = all.flatMap((c) => (c.kind === 'closed' ? [c.result.rest ?? c.result.closed] : []))
    if (changed.length === 0) return
    const logins = [...new Set(changed.map((o) => o.login))]
    await ctx.positions.invalidate(...logins)
    await ctx.accountsRead.invalidateAccount(...logins)
    await track(changed.map((order) => ({ order })))
    ctx.events.wake()
  }
  const onAfterCommitError = (e: unknown) =>
    ctx.logger.log('error', 'after trade close', { err: e instanceof Error ? e.message : String(e) })
  const handler = (tx: Tx, reqs: CloseRequest[]) => commitCloses(ctx, tx, reqs)
  if (ctx.config.groupCommit) {
    const group = new GroupCommit(ctx.db, handler, { afterCommit, onAfterCommitError, lingerMs: 5 })
    return {
      submit: (r) => group.submit(r),
      // submitted together, they join the group commit's batches as concurrent closes do
      submitAll: (reqs) => Promise.all(reqs.map((r) => group.submit(r).catch(asError))),
    }
  }
  const single = new PerRequestCommit(ctx.db, handler, { afterCommit, onAfterCommitError })
  return {
    submit: (r) => single.submit(r),
    submitAll: (reqs) => closeInSequence(ctx, reqs, afterCommit, onAfterCommitError),
  }
}

/**
 * Without group commit (the edge, where a Worker's request does its own work): the closes of one request
 * are written in sequence, CLOSES_PER_TRANSACTION to a write transaction of a few statements (never one
 * transaction a position: concurrent, those contended for the write lock and many were refused; one by
 * one, each spent several of a Worker's subrequests), and the caches and the engine are told once, after
 * the last. A transaction the database refused as busy (nothing written) is tried once more; one that
 * fails answers its error for its closes and those after it (not tried), while the closes committed
 * before it stay, told as the others.
 */
async function closeInSequence(
  ctx: TradingCtx,
  reqs: CloseRequest[],
  afterCommit: (all: Closed[]) => Promise<void>,
  onAfterCommitError: (e: unknown) => void,
): Promise<(Closed | Error)[]> {
  const out: (Closed | Error)[] = []
  const write = (part: CloseRequest[]) => ctx.db.transaction((tx) => commitCloses(ctx, tx, part))
  for (let at = 0; at < reqs.length; at += CLOSES_PER_TRANSACTION) {
    const part = reqs.slice(at, at + CLOSES_PER_TRANSACTION)
    try {
      out.push(
        ...(await write(part).catch(async (e) => {
          if (!isBusy(e)) throw e
          await new Promise((r) => setTimeout(r, 100))
          return write(part)
        })),
      )
    } catch (e) {
      const failed = asError(e)
      while (out.length < reqs.length) out.push(failed)
      break
    }
  }
  await afterCommit(out.filter((o): o is Closed => !(o instanceof Error))).catch(onAfterCommitError)
  return out
}

async function commitCloses(ctx: TradingCtx, tx: Tx, reqs: CloseRequest[]): Promise<(Closed | Error)[]> {
  const keyed = reqs.filter((r) => r.key)
  const stored = keyed.length
    ? await tx
        .select()
        .from(tradeRequests)
        .where(inArray(tradeRequests.idempotencyKey, [...new Set(keyed.map((r) => r.key!.value))]))
    : []
  const known = new Map(stored.map((s) => [`${s.login}\u0000${s.idempotencyKey}`, s.requestHash]))
  // a repeat within the batch answers what the first with its key comes to (below)
  const firstInBatch = new Map<string, { index: number; hash: string }>()
  const repeats: { index: number; first: number }[] = []
  const out: (Closed | Error | null)[] = reqs.map((r, index) => {
    if (!r.key) return null
    const id = `${r.input.order.login}\u0000${r.key.value}`
    const earlier = firstInBatch.get(id)
    const hash = known.get(id) ?? earlier?.hash
    if (hash !== undefined && hash !== r.key.hash) return keyReused()
    if (known.has(id)) return { kind: 'replay' as const }
    if (earlier) {
      repeats.push({ index, first: earlier.index })
      return { kind: 'replay' as const }
    }
    firstInBatch.set(id, { index, hash: r.key.hash })
    return null
  })
  const fresh = reqs.flatMap((r, i) => (out[i] === null ? [{ r, i }] : []))
  const now = ctx.clock.now()
  const events: PendingEvent[] = []
  const work: Work = {
    emit: (topic, brandId, payload) => events.push({ brandId, topic: topic.name, payload }),
    after: () => {},
  }
  const results = await closeManyTx(
    ctx.accounts,
    tx,
    work,
    fresh.map(({ r }) => ({ ...r.input, now })),
  )
  const recorded: (typeof tradeRequests.$inferInsert)[] = []
  fresh.forEach(({ r, i }, k) => {
    const res = results[k]!
    if (res instanceof Error) out[i] = res
    else if (res === null) out[i] = { kind: 'moved' }
    else {
      out[i] = { kind: 'closed', result: res }
      if (r.key)
        recorded.push({
          login: r.input.order.login,
          idempotencyKey: r.key.value,
          kind: 'close',
          requestHash: r.key.hash,
          ticket: r.input.order.ticket,
          actor: r.actor,
          createdAt: now,
        })
    }
  })
  // the first closed it: the repeat is its replay; the first failed or found it moved: so does the repeat
  for (const { index, first } of repeats) {
    const o = out[first]
    if (o && !(o instanceof Error) && o.kind === 'closed') continue
    out[index] = o ?? null
  }
  if (recorded.length) await tx.insert(tradeRequests).values(recorded)
  await ctx.events.write(tx, events, now)
  return out as (Closed | Error)[]
}
