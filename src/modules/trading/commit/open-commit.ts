import { and, count, getTableName, inArray } from 'drizzle-orm'
import { insertRows } from '../../../kernel/db/bulk-insert'
import type { Tx } from '../../../kernel/db/client'
import { type Committer, GroupCommit, PerRequestCommit } from '../../../kernel/db/group-commit'
import { event } from '../../../kernel/events/topic'
import type { GroupRecord } from '../../accounts'
import { marginOf, pricing } from '../book/exposure'
import { fundsOf } from '../book/holdings-table'
import type { OrderRow } from '../book/positions'
import type { TradingCtx } from '../context'
import { addHolding, type Holding } from '../domain/holdings'
import { refuse } from '../errors'
import { TradeOpened } from '../events'
import { orders, tradeRequests } from '../schema'
import { tradeEvent } from '../views'
import { FILL_PRICE_MAX_AGE_MS, priceTooOld } from './fill-age'

export const openError = (message: string) => refuse('openRefused', message)

/** OpenInput.whileWanted: the caller's id for the request, and its question (one function per kind). */
export interface WhileWanted {
  id: number
  wanted: (tx: Tx, ids: number[]) => Promise<Set<number>>
}

/** An order checked against symbol, session, volume and stops, waiting for the margin check and insert. */
export interface OpenRequest {
  values: typeof orders.$inferInsert & { login: number; brandId: number; actor: string }
  group: Pick<GroupRecord, 'id' | 'currency'>
  /** Margin of the new position in the account currency; null for a pending order (no margin yet). */
  margin: number | null
  /** The idempotency key and the fingerprint of the request it names (kernel/http/idempotency). */
  key?: { value: string; hash: string }
  /** Commit only while this order is open or pending (OpenInput.whileOpen). */
  whileOpen?: number
  /** Commit only while the caller still wants it (OpenInput.whileWanted). */
  whileWanted?: WhileWanted
}

export interface Opened {
  row: OrderRow
  groupId: number
  /** The key was seen before: this is the order its first request opened; nothing was written. */
  idempotent: boolean
  /** Its batch wrote events some consumer awaits: the relay is woken after the commit. */
  wake?: boolean
}

/**
 * Opens orders by group commit (kernel/db/group-commit): one transaction reads the balances and the
 * holdings of every login in the batch, checks each order's free margin in arrival order (an order sees
 * the ones accepted before it), inserts the accepted rows and their outbox events with one statement
 * each. The margin check runs on the committed state inside the write lock, so two opens of one account
 * never both spend the same free margin, on this instance or another.
 */
export function openCommitter(
  ctx: TradingCtx,
  track: (rows: { order: OrderRow; groupId: number }[]) => Promise<void>,
): Committer<OpenRequest, Opened> {
  const afterCommit = async (all: Opened[]) => {
    const opened = all.filter((o) => !o.idempotent)
    await ctx.positions.invalidate(...new Set(opened.map((o) => o.row.login)))
    await track(opened.map((o) => ({ order: o.row, groupId: o.groupId })))
    // most opens concern no consumer: their events are written delivered and nothing is to wake
    if (opened.some((o) => o.wake)) ctx.events.wake()
  }
  const onAfterCommitError = (e: unknown) =>
    ctx.logger.log('error', 'after trade open', { err: e instanceof Error ? e.message : String(e) })
  const handler = (tx: Tx, reqs: OpenRequest[]) => commitOpens(ctx, tx, reqs)
  if (!ctx.config.groupCommit)
    return new PerRequestCommit(ctx.db, handler, { afterCommit, onAfterCommitError })
  // bench/trading.ts: 50 connections commit as one batch of ~50 instead of alternating halves (ADR 0001);
  // an open that waits for its transaction past DATABASE_WRITE_TIMEOUT_MS answers 503, nothing written
  return new GroupCommit(ctx.db, handler, {
    afterCommit,
    onAfterCommitError,
    lingerMs: 5,
    waitMs: ctx.config.database.writeTimeoutMs,
  })
}

/**
 * Requests whose idempotency key was used before (committed, or earlier in this batch) answer with the
 * order the key opened; one reused for another request is refused. Read inside the batch's write
 * transaction, so two instances cannot both take a key.
 */
async function replays(tx: Tx, reqs: OpenRequest[]) {
  const keyed = reqs.filter((r) => r.key)
  const out = new Map<OpenRequest, { ticket: number } | { index: number } | Error>()
  if (keyed.length === 0) return out
  const stored = await tx
    .select()
    .from(tradeRequests)
    .where(inArray(tradeRequests.idempotencyKey, [...new Set(keyed.map((r) => r.key!.value))]))
  const known = new Map(stored.map((s) => [`${s.login}\u0000${s.idempotencyKey}`, s]))
  const firstInBatch = new Map<string, { index: number; hash: string }>()
  reqs.forEach((r, index) => {
    if (!r.key) return
    const id = `${r.values.login}\u0000${r.key.value}`
    const s = known.get(id)
    const earlier = firstInBatch.get(id)
    const hash = s?.requestHash ?? earlier?.hash
    if (hash !== undefined && hash !== r.key.hash) out.set(r, keyReused())
    else if (s) out.set(r, { ticket: s.ticket })
    else if (earlier) out.set(r, { index: earlier.index })
    else firstInBatch.set(id, { index, hash: r.key.hash })
  })
  return out
}

const keyReused = () => refuse('keyReused', 'Idempotency-Key: already used for a different request')

async function commitOpens(ctx: TradingCtx, tx: Tx, all: OpenRequest[]): Promise<(Opened | Error)[]> {
  const seen = await replays(tx, all)
  const reqs = all.filter((r) => !seen.has(r))
  const fresh = await commitNew(ctx, tx, reqs)
  const byReq = new Map(reqs.map((r, i) => [r, fresh[i]!]))
  const tickets = [...seen.values()].flatMap((s) => ('ticket' in s ? [s.ticket] : []))
  const before = tickets.length
    ? new Map(
        (await tx.select().from(orders).where(inArray(orders.ticket, tickets))).map((o) => [o.ticket, o]),
      )
    : new Map<number, OrderRow>()
  return all.map((r) => {
    const s = seen.get(r)
    if (!s) return byReq.get(r)!
    if (s instanceof Error) return s
    if ('index' in s) {
      // a duplicate within the batch: what its first request got
      const first = byReq.get(all[s.index]!)!
      return first instanceof Error ? first : { ...first, idempotent: true }
    }
    const row = before.get(s.ticket)
    return row ? { row, groupId: r.group.id, idempotent: true } : openError(`order ${s.ticket} is gone`)
  })
}

const parentClosed = (ticket: number) =>
  refuse('parentClosed', `order ${ticket} is no longer open: nothing opened`)

/** The states of the orders some requests depend on (OpenRequest.whileOpen), read in the commit. */
async function parentStates(tx: Tx, reqs: OpenRequest[]) {
  const tickets = [...new Set(reqs.flatMap((r) => (r.whileOpen === undefined ? [] : [r.whileOpen])))]
  if (tickets.length === 0) return new Map<number, string>()
  const rows = await tx
    .select({ ticket: orders.ticket, state: orders.state })
    .from(orders)
    .where(inArray(orders.ticket, tickets))
  return new Map(rows.map((r) => [r.ticket, r.state]))
}

const tooMany = (limit: number, count: number) =>
  openError(
    `the account may hold ${limit} positions and pending orders together; it holds ${count}: nothing opened`,
  )

/**
 * Open positions and pending orders of the logins whose accounts have a limit (accounts.max_positions),
 * read in the open's write transaction: two batches, on this instance or another, cannot both take the
 * last place. Pending orders count where they are placed, so a fill never goes over the limit.
 */
async function heldOrders(tx: Tx, funds: Map<number, { login: number; maxPositions: number }>) {
  const limited = [...funds.values()].filter((f) => f.maxPositions > 0).map((f) => f.login)
  const out = new Map<number, number>()
  if (limited.length === 0) return out
  const rows = await tx
    .select({ login: orders.login, n: count() })
    .from(orders)
    .where(and(inArray(orders.login, limited), inArray(orders.state, ['open', 'pending'])))
    .groupBy(orders.login)
  for (const r of rows) out.set(r.login, r.n)
  return out
}

const notWanted = () => refuse('notWanted', 'the order is no longer wanted by its caller: nothing opened')

/** The requests their callers no longer want: one question per kind (`wanted`) for the batch. */
async function unwanted(tx: Tx, reqs: OpenRequest[]) {
  const byKind = new Map<WhileWanted['wanted'], OpenRequest[]>()
  for (const r of reqs)
    if (r.whileWanted) {
      const same = byKind.get(r.whileWanted.wanted)
      if (same) same.push(r)
      else byKind.set(r.whileWanted.wanted, [r])
    }
  const out = new Set<OpenRequest>()
  for (const [wanted, asked] of byKind) {
    const still = await wanted(tx, [...new Set(asked.map((r) => r.whileWanted!.id))])
    for (const r of asked) if (!still.has(r.whileWanted!.id)) out.add(r)
  }
  return out
}

async function commitNew(ctx: TradingCtx, tx: Tx, reqs: OpenRequest[]): Promise<(Opened | Error)[]> {
  const parents = await parentStates(tx, reqs)
  const dropped = await unwanted(tx, reqs)
  // every login's funds: a pending order needs no margin, but it counts against the account's limit
  const funds = await fundsOf(ctx.accounts, tx, [...new Set(reqs.map((r) => r.values.login))])
  const held = await heldOrders(tx, funds)
  const p = await pricing(
    ctx,
    reqs.map((r) => r.group.id),
  )
  // read once for the batch, after its last read: each of those round trips may have taken up to the
  // statement timeout, and the prices' age is measured at the moment the batch decides (fill-age.ts)
  const now = ctx.clock.now()
  const results: (Opened | Error | null)[] = []
  const accepted: OpenRequest[] = []
  for (const r of reqs) {
    if (dropped.has(r)) {
      results.push(notWanted())
      continue
    }
    if (r.whileOpen !== undefined) {
      const state = parents.get(r.whileOpen)
      if (state !== 'open' && state !== 'pending') {
        results.push(parentClosed(r.whileOpen))
        continue
      }
    }
    // an account made read-only or disabled since it was read (a prop verdict, staff) takes no order
    if (funds.get(r.values.login)?.tradeAllowed === false) {
      results.push(openError('the account is read-only or disabled now: nothing opened'))
      continue
    }
    // checked against the group it was read in: a staff move committed since (whose own check did not see
    // this order) may have taken the account to a group that cannot price it
    const groupNow = funds.get(r.values.login)?.groupId
    if (groupNow !== undefined && groupNow !== r.group.id) {
      results.push(openError('the account moved to another group meanwhile: nothing opened; retry'))
      continue
    }
    const limit = funds.get(r.values.login)?.maxPositions ?? 0
    const count = held.get(r.values.login) ?? 0
    if (limit > 0 && count >= limit) {
      results.push(tooMany(limit, count))
      continue
    }
    // a market open fills at the price of its checks: not when that is older than the guard's bound
    if (r.values.state === 'open' && now - r.values.openTime > FILL_PRICE_MAX_AGE_MS) {
      results.push(priceTooOld(now - r.values.openTime, 'order'))
      continue
    }
    if (r.margin !== null) {
      const v = r.values
      const a = funds.get(v.login)
      const trial: Holding[] = (a?.holdings ?? []).map((h) => ({ ...h }))
      addHolding(trial, {
        symbol: v.symbol,
        cmd: v.cmd,
        volume: v.volume,
        openPrice: v.openPrice,
        commission: v.commission ?? 0,
        storage: 0,
      })
      const m = a && marginOf(p, a, r.group, trial)
      if (!m || m.margin_free < 0) {
        results.push(
          openError(
            `not enough money: the position needs ${r.margin.toFixed(2)} ${r.group.currency} of margin`,
          ),
        )
        continue
      }
      if (a) a.holdings = trial
    }
    if (limit > 0) held.set(r.values.login, count + 1)
    results.push(null)
    accepted.push(r)
  }
  if (accepted.length === 0) return results as Error[]
  const rows = await insertOrders(tx, accepted)
  const keyed = accepted.flatMap((r, i) =>
    r.key
      ? [
          {
            login: r.values.login,
            idempotencyKey: r.key.value,
            kind: 'open' as const,
            requestHash: r.key.hash,
            ticket: rows[i]!.ticket,
            actor: r.values.actor,
            createdAt: now,
          },
        ]
      : [],
  )
  if (keyed.length) await tx.insert(tradeRequests).values(keyed)
  const wake = await ctx.events.write(
    tx,
    rows.map((row, i) => event(TradeOpened, row.brandId, tradeEvent(row, accepted[i].group.currency))),
    now,
  )
  let i = 0
  return results.map((r) => r ?? { row: rows[i], groupId: accepted[i++].group.id, idempotent: false, wake })
}

/** The columns an open writes, in the order of the positional rows below. */
const INSERTED = [
  'brandId',
  'login',
  'symbol',
  'cmd',
  'volume',
  'state',
  'openPrice',
  'openTime',
  'sl',
  'tp',
  'expiration',
  'comment',
  'commission',
  'rolloverDay',
  'updatedAt',
  'origin',
  'actor',
] as const satisfies readonly (keyof Omit<OrderRow, 'ticket'>)[]
const INSERTED_COLUMNS = INSERTED.map((k) => orders[k].name)

/**
 * Inserts the accepted orders with multi-row statements of bound values (kernel/db/bulk-insert; the
 * rows once travelled as one JSON parameter, but SQLite's JSON extraction cost more than the insert) and
 * returns them as stored, with their tickets.
 */
async function insertOrders(tx: Tx, reqs: OpenRequest[]): Promise<OrderRow[]> {
  const rows = reqs.map(
    (r): Omit<OrderRow, 'ticket'> => ({
      brandId: r.values.brandId,
      login: r.values.login,
      symbol: r.values.symbol,
      cmd: r.values.cmd,
      volume: r.values.volume,
      state: r.values.state,
      openPrice: r.values.openPrice,
      openTime: r.values.openTime,
      sl: r.values.sl ?? 0,
      tp: r.values.tp ?? 0,
      expiration: r.values.expiration ?? 0,
      comment: r.values.comment ?? '',
      commission: r.values.commission ?? 0,
      storage: 0,
      profit: 0,
      closePrice: 0,
      closeTime: 0,
      closeReason: '',
      parent: null,
      rolloverDay: r.values.rolloverDay ?? 0,
      updatedAt: r.values.updatedAt,
      origin: r.values.origin ?? '',
      actor: r.values.actor,
    }),
  )
  const tickets = await insertRows(
    tx,
    getTableName(orders),
    INSERTED_COLUMNS,
    rows.map((r) => INSERTED.map((k) => r[k])),
  )
  return rows.map((r, i) => ({ ...r, ticket: tickets[i] }))
}
