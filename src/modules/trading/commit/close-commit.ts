import { inArray } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import { isBusy } from '../../../kernel/db/errors'
import { type Committer, GroupCommit, PerRequestCommit } from '../../../kernel/db/group-commit'
import type { Work } from '../../../kernel/db/unit-of-work'
import type { PendingEvent } from '../../../kernel/events/topic'
import { Refusal } from '../../../kernel/refusal'
import type { OrderRow } from '../book/positions'
import type { TradingCtx } from '../context'
import { profitInAccount } from '../domain/formulas'
import { refuse } from '../errors'
import { tradeRequests } from '../schema'
import { type CloseInput, type CloseResult, closeManyTx } from './execution'
import { FILL_PRICE_MAX_AGE_MS, priceTooOld } from './fill-age'
import type { TradeKey } from './idempotency'

/**
 * A close checked against account, symbol and volume, priced, waiting for its commit. Every request here
 * is a close asked for at the quote of its checks (DELETE /trade/close whole or partial, a group close,
 * the write port's close): one whose price is over FILL_PRICE_MAX_AGE_MS old when its batch decides is
 * refused 503 PRICE_STALE. Closes the engine decides (SL, TP, stop-out, a watcher's close-out) do not come
 * here: they close at the price of the tick that reached them, dated at that tick, through their own
 * guarded write (engine/executions.ts closeTx), and are never refused for the time they waited for the
 * database (that would hand them to the next tick, refused again, in a loop; README, trigger retries).
 */
export interface CloseRequest {
  input: Omit<CloseInput, 'now'>
  /** When its price was read (the clock at its close check): the age the commit refuses it at. */
  pricedAt: number
  /** The idempotency key and who asks (recorded with the key). */
  key?: TradeKey
  actor: string
  /**
   * What the close check answers for a result that finds no conversion rate (fillRates' noRate: 503
   * PRICE_STALE naming a pair whose feed stopped, else `none`); the commit answers the same when it finds
   * none, as a refusal (a group close skips the position) and not a fault.
   */
  noRate?: (none: () => Error) => Error
}

/** What a close commit answers: closed, a repeat of a key already used (nothing done), or the position moved. */
export type Closed = { kind: 'closed'; result: CloseResult } | { kind: 'replay' } | { kind: 'moved' }

/**
 * Prices closes again (a group close's closes still to write at the edge): the symbols' quotes and the
 * cross rates read now, one read a symbol, and each close checked at them: its request, or its refusal.
 * Throws when the batch must stop (the instance's prices stale, a dependency away).
 */
export type Reprice = (part: CloseRequest[]) => Promise<(CloseRequest | Error)[]>

/**
 * The committer of closes, and of many closes of one request (a group close): `submitAll` answers each
 * close with its outcome or an Error of its own (a refusal, or a fault: the closes a failed transaction
 * held, and those not tried after it, answer the same Error object).
 */
export interface CloseCommitter extends Committer<CloseRequest, Closed> {
  submitAll(reqs: CloseRequest[], reprice?: Reprice): Promise<(Closed | Error)[]>
}

/** Closes a transaction of a group close takes at the edge (closeManyTx writes 100 to a statement). */
export const CLOSES_PER_TRANSACTION = 100

/**
 * A group close's transaction at the edge that starts this long after its closes were priced prices them
 * again first (`Reprice`): a close price is never more than about this older than its close time.
 */
export const REPRICE_AFTER_MS = 250

/** An Error that is no refusal: the database or a dependency failed; what it held may have committed. */
const isFault = (o: unknown): o is Error => o instanceof Error && !(o instanceof Refusal)

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
  /**
   * After a fault the closes it held may have committed (an error on COMMIT, the connection lost): the
   * caches of their logins are dropped all the same, so GET /trade/list reads the database again.
   */
  const forget = async (reqs: CloseRequest[]) => {
    const logins = [...new Set(reqs.map((r) => r.input.order.login))]
    if (logins.length === 0) return
    try {
      await ctx.positions.invalidate(...logins)
      await ctx.accountsRead.invalidateAccount(...logins)
    } catch (e) {
      ctx.logger.log('error', 'after a failed trade close', {
        err: e instanceof Error ? e.message : String(e),
      })
    }
  }
  const forgetOnFault =
    <T>(r: CloseRequest) =>
    async (e: unknown): Promise<T> => {
      if (isFault(e)) await forget([r])
      throw e
    }
  const handler = (tx: Tx, reqs: CloseRequest[]) => commitCloses(ctx, tx, reqs)
  if (ctx.config.groupCommit) {
    // a close that waits for its transaction past DATABASE_WRITE_TIMEOUT_MS answers 503, nothing written
    const group = new GroupCommit(ctx.db, handler, {
      afterCommit,
      onAfterCommitError,
      lingerMs: 5,
      waitMs: ctx.config.database.writeTimeoutMs,
    })
    return {
      submit: (r) => group.submit(r).catch(forgetOnFault<Closed>(r)),
      // submitted together, they join the group commit's batches as concurrent closes do (priced once)
      submitAll: async (reqs) => {
        const out = await Promise.all(reqs.map((r) => group.submit(r).catch(asError)))
        await forget(reqs.filter((_, i) => isFault(out[i])))
        return out
      },
    }
  }
  const single = new PerRequestCommit(ctx.db, handler, { afterCommit, onAfterCommitError })
  return {
    submit: (r) => single.submit(r).catch(forgetOnFault<Closed>(r)),
    submitAll: (reqs, reprice) =>
      closeInSequence(ctx, reqs, reprice, afterCommit, forget, onAfterCommitError),
  }
}

/**
 * Without group commit (the edge, where a Worker's request does its own work): the closes of one request
 * are written in sequence, CLOSES_PER_TRANSACTION to a write transaction of a few statements (never one
 * transaction a position: concurrent, those contended for the write lock and many were refused; one by
 * one, each spent several of a Worker's subrequests), and the caches and the engine are told once, after
 * the last. A transaction the database refused as busy (nothing written) is tried once more; one that
 * fails answers its error for its closes and those after it (not tried), while the closes committed
 * before it stay, told as the others; the caches of a failed transaction's logins are dropped too (it
 * may have committed). A transaction that would start REPRICE_AFTER_MS or more after the closes were last
 * priced prices those still to write again first (`reprice`, one read a symbol): a large group takes
 * seconds, and its later closes are at the quotes of their own time, as a single close is.
 */
async function closeInSequence(
  ctx: TradingCtx,
  reqs: CloseRequest[],
  reprice: Reprice | undefined,
  afterCommit: (all: Closed[]) => Promise<void>,
  forget: (reqs: CloseRequest[]) => Promise<void>,
  onAfterCommitError: (e: unknown) => void,
): Promise<(Closed | Error)[]> {
  const out: (Closed | Error)[] = []
  const write = (part: CloseRequest[]) => ctx.db.transaction((tx) => commitCloses(ctx, tx, part))
  // each close as last priced (the caller priced them all just before), or refused when priced again
  const pending: (CloseRequest | Error)[] = [...reqs]
  let pricedAt = ctx.clock.now()
  for (let at = 0; at < reqs.length; at += CLOSES_PER_TRANSACTION) {
    try {
      if (reprice && ctx.clock.now() - pricedAt >= REPRICE_AFTER_MS) {
        // all those still to write, at one read: the next transactions need no read of their own while
        // this one is recent
        pricedAt = ctx.clock.now()
        const left = pending.flatMap((p, i) => (i >= at && !(p instanceof Error) ? [i] : []))
        const again = await reprice(left.map((i) => pending[i] as CloseRequest))
        left.forEach((i, k) => {
          pending[i] = again[k]!
        })
      }
      const part = pending.slice(at, at + CLOSES_PER_TRANSACTION)
      const ready = part.filter((p): p is CloseRequest => !(p instanceof Error))
      const written = ready.length
        ? await write(ready).catch(async (e) => {
            if (!isBusy(e)) throw e
            await new Promise((r) => setTimeout(r, 100))
            return write(ready)
          })
        : []
      let k = 0
      for (const p of part) out.push(p instanceof Error ? p : written[k++]!)
    } catch (e) {
      const failed = asError(e)
      while (out.length < reqs.length) out.push(failed)
      break
    }
  }
  const closed = out.filter((o): o is Closed => !(o instanceof Error))
  await afterCommit(closed).catch(onAfterCommitError)
  // afterCommit dropped the caches of the logins it told of
  const told = new Set(closed.flatMap((c) => (c.kind === 'closed' ? [c.result.closed.login] : [])))
  await forget(reqs.filter((r, i) => isFault(out[i]) && !told.has(r.input.order.login)))
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
  // a result that finds no conversion rate now is refused as the close check refuses it (closeRequest),
  // not written: closeManyTx would answer it a plain Error, a fault
  reqs.forEach((r, i) => {
    if (out[i] !== null) return
    const { spec, order: o, volume, price, currency, lookup } = r.input
    if (profitInAccount(spec, o.cmd, volume, o.openPrice, price, currency, lookup) !== null) return
    const none = () => refuse('closeRefused', `no conversion rate for ${o.symbol} into ${currency}`)
    out[i] = r.noRate ? r.noRate(none) : none()
  })
  // read once for the batch, after its reads (the keys): a close priced more than FILL_PRICE_MAX_AGE_MS
  // before is not filled at that price (ADR 0014 §3); a repeat of a key used before answers as above
  const now = ctx.clock.now()
  reqs.forEach((r, i) => {
    if (out[i] === null && now - r.pricedAt > FILL_PRICE_MAX_AGE_MS)
      out[i] = priceTooOld(now - r.pricedAt, 'close')
  })
  const fresh = reqs.flatMap((r, i) => (out[i] === null ? [{ r, i }] : []))
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
