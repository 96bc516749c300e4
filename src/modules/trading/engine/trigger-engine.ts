import { and, eq, inArray } from 'drizzle-orm'
import { z } from 'zod'
import { busNow, compareIds, idTime } from '../../../kernel/bus/bus'
import { type ChannelEntry, defineChannel, publishChange } from '../../../kernel/bus/channel'
import { ChunkedMap } from '../../../kernel/chunked-map'
import { CursorHeld, REPLAY_MAX_MS } from '../../../kernel/engine/role'
import { pricedForGroup, type Quote, type Tick } from '../../market'
import { pricing } from '../book/exposure'
import type { OrderRow } from '../book/positions'
import type { TradeRefresh } from '../commit/execution'
import type { TradingCtx } from '../context'
import { mayFill, stopFillable } from '../domain/checks'
import { addHolding, type Holding, removeHolding } from '../domain/holdings'
import { type Trigger, TriggerBook } from '../domain/triggers'
import { orders } from '../schema'
import { activateTx, type Execution, type NotWritten, stopWrite, writeExecutions } from './executions'
import { expireDue } from './expiry'
import { OrderSync } from './order-sync'
import { RiskMonitor } from './risk-monitor'
import type { RiskWatcher } from './risk-watch'
import { rollover } from './rollover'

/** How old a tick's own time may be to decide a trigger's session by it (else the engine's time does). */
const TICK_SESSION_SLACK_MS = 5_000

/** An order written on an instance other than the engine, with the group it was priced in. */
interface OrderChange {
  order: OrderRow
  groupId?: number
}

/** Bus entries of order writes made on instances other than the engine. */
export const ORDERS_CHANGED = defineChannel(
  'trading.orders-changed',
  z.custom<OrderChange[]>(
    (v) =>
      Array.isArray(v) &&
      v.every((c) => typeof c?.order?.ticket === 'number' && typeof c.order.updatedAt === 'number'),
    'a list of order changes',
  ),
)
const bookKey = (symbol: string, groupId: number) => `${symbol}|${groupId}`
const NONE: ReadonlySet<number> = new Set()

/** An execution the database did not take, written again (`retryLater`) at the quote that decided it. */
interface Retry {
  e: Execution
  /** The account of its order: its risk check waits for the retry (risk-monitor.ts, `waiting`). */
  login: number | undefined
  attempts: number
  /** When it was first not written (performance.now()). */
  since: number
  /** When it is tried next; Infinity while a try is in flight. */
  at: number
  /**
   * Not written because the database did not answer: a takeover must replay its tick (CursorHeld), until
   * RETRY_UNANSWERED_MS after its tick.
   */
  unavailable: boolean
}
/** The first retry after this; doubling up to RETRY_MAX_MS. */
const RETRY_FIRST_MS = 250
const RETRY_MAX_MS = 2000
/** Retries due this soon after the timer fires are written with those due. */
const RETRY_SLACK_MS = 20
/** A write the database refused is tried this many times, then left (the book decides it again on a tick). */
const RETRY_REFUSED = 5
/**
 * A write the database does not answer is tried until its tick is this old, then left, logged at error:
 * the cursor it holds must still be replayed by an engine taking the role (a cursor older than
 * REPLAY_MAX_MS is not), with room for the lease to lapse and the standby to read the cursor.
 */
export const RETRY_UNANSWERED_MS = REPLAY_MAX_MS - 10_000
/**
 * An account's risk check waits for its SL's or TP's write the database did not answer at most this long
 * from the tick that first decided one (`waitingLogins`): as long as one such retry lives, never longer,
 * however often the next tick decides it again.
 */
export const RISK_WAIT_MAX_MS = RETRY_UNANSWERED_MS

/**
 * Executes resting triggers (pending activation, SL, TP), expirations, stop-outs and swap rollovers.
 * Triggers sit in a sorted book per symbol and group (the group's spread decides the price), so a tick
 * looks only at what is due. Every execution is a conditional UPDATE, so with several instances each
 * trigger still fires once; each instance keeps its book current by tracking its own writes and
 * re-reading orders changed elsewhere (`resync`).
 */
export class TriggerEngine {
  readonly book = new TriggerBook()
  /** Every open position and pending order by ticket: the largest book, written on every open and close. */
  private readonly resting = new ChunkedMap<{ order: OrderRow; groupId: number }>()
  private readonly groupsBySymbol = new Map<string, Map<number, number>>()
  private readonly openByLogin = new Map<number, Set<number>>()
  /** The group each login's orders are filed in: an execution prices and books in it. */
  private readonly groupByLogin = new Map<number, number>()
  /** Holdings of every login with open positions, kept in step with `track`, for the stop-out sweep. */
  private readonly holdingsByLogin = new Map<number, Holding[]>()
  /** Pending orders with an expiration, so a tick does not walk every resting order. */
  private readonly expiring = new Set<number>()
  /**
   * Tickets whose execution is being written, with the generation that started it: a later tick of the
   * same read must not decide it again.
   */
  private readonly writing = new Map<number, number>()
  /** The executions being written (`start`); a settle waits for them. */
  private readonly inFlight = new Set<Promise<void>>()
  /** Executions not written (the database stalled or refused), by ticket; still in `writing`. */
  private readonly retrying = new Map<number, Retry>()
  /**
   * Logins whose risk check waits for an SL or TP to be written again, with the time of the tick that
   * first decided one (RISK_WAIT_MAX_MS); a login goes once a check finds none of its SL/TP waiting.
   */
  private readonly waitingSince = new Map<number, number>()
  private retryTimer: ReturnType<typeof setTimeout> | null = null
  /** When the armed retry timer fires (performance.now()); Infinity when none is armed. */
  private retryNextAt = Number.POSITIVE_INFINITY
  /** Counts `reset`s: a retry that was in flight when the book was emptied changes nothing. */
  private generation = 0
  /** The book kept in step with other instances' writes (order-sync.ts). */
  private readonly sync: OrderSync
  /** Margin calls, stop-outs and watchers' limits of the accounts with positions (risk-monitor.ts). */
  private readonly risk: RiskMonitor
  readonly stats = {
    activated: 0,
    sl: 0,
    tp: 0,
    expired: 0,
    stoppedOut: 0,
    lostRaces: 0,
    riskClosed: 0,
    retried: 0,
  }

  /** What a write of the engine refreshes once it commits (the positions cache, this book). */
  private readonly refreshes: TradeRefresh

  constructor(private readonly ctx: TradingCtx) {
    this.refreshes = {
      positions: ctx.positions,
      accountsRead: ctx.accountsRead,
      track: (o) => this.changed([{ order: o }]),
    }
    this.sync = new OrderSync(ctx, {
      resting: (ticket) => this.resting.get(ticket),
      track: (o, groupId) => this.track(o, groupId),
    })
    this.risk = new RiskMonitor(ctx, {
      of: (login) => this.holdingsByLogin.get(login),
      waiting: () => this.waitingLogins(),
      logins: () => this.holdingsByLogin.keys(),
      refreshes: this.refreshes,
      stats: this.stats,
      refresh: (ticket) => this.refresh(ticket),
    })
  }

  private groupOf = async (login: number) => (await this.ctx.accountsRead.account(login))?.groupId ?? null

  /** Files (or re-files, or removes) an order's triggers after a write. */
  async track(o: OrderRow, groupId?: number) {
    if (groupId !== undefined) return this.trackIn(o, groupId)
    this.untrack(o.ticket)
    this.closedOut(o)
    if (o.state !== 'open' && o.state !== 'pending') return
    const g = await this.groupOf(o.login)
    if (g !== null) this.trackIn(o, g)
  }

  /** `track` when the account's group is known (a batch of opens files dozens without awaiting). */
  trackIn(o: OrderRow, g: number) {
    this.untrack(o.ticket)
    this.closedOut(o)
    if (o.state !== 'open' && o.state !== 'pending') return
    this.resting.set(o.ticket, { order: o, groupId: g })
    this.groupByLogin.set(o.login, g)
    this.book.upsert(bookKey(o.symbol, g), o)
    if (o.state === 'pending' && o.expiration > 0) this.expiring.add(o.ticket)
    const bySymbol = this.groupsBySymbol.get(o.symbol) ?? new Map<number, number>()
    bySymbol.set(g, (bySymbol.get(g) ?? 0) + 1)
    this.groupsBySymbol.set(o.symbol, bySymbol)
    if (o.state === 'open') {
      const set = this.openByLogin.get(o.login) ?? new Set<number>()
      set.add(o.ticket)
      this.openByLogin.set(o.login, set)
      const held = this.holdingsByLogin.get(o.login) ?? []
      this.holdingsByLogin.set(o.login, addHolding(held, o))
      this.riskChanged(o.login)
    }
  }

  untrack(ticket: number) {
    const r = this.resting.get(ticket)
    if (!r) return
    this.resting.delete(ticket)
    this.book.remove(ticket)
    this.expiring.delete(ticket)
    const bySymbol = this.groupsBySymbol.get(r.order.symbol)
    const n = (bySymbol?.get(r.groupId) ?? 1) - 1
    if (n <= 0) bySymbol?.delete(r.groupId)
    else bySymbol?.set(r.groupId, n)
    if (r.order.state !== 'open') return
    const login = r.order.login
    const set = this.openByLogin.get(login)
    set?.delete(ticket)
    const held = this.holdingsByLogin.get(login)
    if (held) removeHolding(held, r.order)
    this.riskChanged(login)
    if (!set || set.size === 0) {
      this.openByLogin.delete(login)
      this.holdingsByLogin.delete(login)
    }
  }

  /**
   * A written order that is no longer open ends its login's margin-call episode when no position is left.
   * Only a write does: taking an order off the book to file it again (an SL moved) or emptying the book
   * (the engine role lost) leaves the account's margin as it was.
   */
  private closedOut(o: OrderRow) {
    if (o.state !== 'open' && !this.openByLogin.has(o.login)) this.risk.noPositions(o.login)
  }

  /** Empties the books (this instance gave up the engine role); margin-call episodes go on. */
  reset() {
    // the executions not written go with the role: the next engine replays their ticks (CursorHeld)
    this.generation++
    if (this.retryTimer) clearTimeout(this.retryTimer)
    this.retryTimer = null
    this.retryNextAt = Number.POSITIVE_INFINITY
    for (const ticket of this.retrying.keys()) this.writing.delete(ticket)
    this.retrying.clear()
    this.waitingSince.clear()
    for (const ticket of [...this.resting.keys()]) this.untrack(ticket)
    this.groupByLogin.clear()
    this.risk.reset()
    this.sync.reset()
  }

  /**
   * Accounts changed elsewhere (a balance operation, staff settings): their figures are looked at again;
   * an account moved to another group has its orders filed again in that group (its spread, its
   * currency), read from the database.
   */
  async accountsChanged(logins: number[]) {
    for (const login of logins) {
      this.riskChanged(login)
      const filed = this.groupByLogin.get(login)
      if (filed === undefined) continue
      const g = await this.groupOf(login)
      if (g === null || g === filed) continue
      const active = await this.ctx.db
        .select()
        .from(orders)
        .where(and(eq(orders.login, login), inArray(orders.state, ['open', 'pending'])))
      // none left (closed meanwhile): nothing is filed for the login any more
      if (active.length === 0) this.groupByLogin.delete(login)
      for (const o of active) this.trackIn(o, g)
    }
  }

  /**
   * Groups' margin call or stop-out levels changed elsewhere: each login filed in one of them is looked at
   * again (the risk monitor reads the new levels; a settle looks at a bounded number, the rest wait).
   */
  async groupsChanged(groupIds: number[]) {
    const ids = new Set(groupIds)
    for (const [login, g] of this.groupByLogin) if (ids.has(g)) this.riskChanged(login)
  }

  /** Loads every active order from the database (this instance took the engine role). */
  async load() {
    this.reset()
    await this.resync()
    await this.risk.load()
  }

  /**
   * After a trade write commits: the engine files the order at once; another instance tells the engine
   * through the bus, before its request answers, so a tick ingested after the answer finds the order filed.
   */
  async changed(rows: { order: OrderRow; groupId?: number }[]) {
    if (rows.length === 0) return
    if (!this.ctx.engine.isLeader) {
      await publishChange(this.ctx.bus, this.ctx.logger, ORDERS_CHANGED, rows)
      return
    }
    for (const r of rows)
      if (r.groupId !== undefined) this.trackIn(r.order, r.groupId)
      else await this.track(r.order)
  }

  /** The engine's handler of order changes published by other instances. */
  async onChangedEntries(entries: ChannelEntry<OrderChange[]>[]) {
    for (const e of entries)
      for (const r of e.data) {
        const known = this.resting.get(r.order.ticket)
        if (known && known.order.updatedAt > r.order.updatedAt) continue
        this.sync.seen.set(r.order.ticket, r.order.updatedAt)
        await this.track(r.order, r.groupId)
      }
  }

  /**
   * Loads every active order (start-up), then keeps up with other instances' writes (order-sync.ts): only
   * the orders another instance changed since the last run are read in full.
   */
  resync() {
    return this.sync.run()
  }

  /**
   * Tick listener of the engine: decides which triggers are due per group price and starts writing their
   * executions at once, one unit of work for those of this call; `settle` waits for them. While replaying
   * after a takeover, a trigger fires only on ticks published after its order was last written (the book
   * was loaded from the database as it is now).
   */
  async onTicks(ticks: Tick[], opts: { replay?: boolean } = {}) {
    const decided = new Map<number, Execution>()
    for (const t of ticks) {
      this.risk.tick(t)
      const groups = this.groupsBySymbol.get(t.symbol)
      if (!groups || groups.size === 0) continue
      for (const groupId of [...groups.keys()]) {
        const gs = await this.ctx.refdata.forGroup(groupId, t.symbol)
        if (!gs) continue
        // a group's spread that takes the price to zero or below fills nothing (market: pricedForGroup)
        const q = pricedForGroup(t, gs)
        if (!q) continue
        for (const trigger of this.book.due(bookKey(t.symbol, groupId), q.bid, q.ask)) {
          if (decided.has(trigger.ticket) || this.writing.has(trigger.ticket)) continue
          if (opts.replay && (this.resting.get(trigger.ticket)?.order.updatedAt ?? 0) > idTime(t.id)) continue
          const e = await this.prepare(trigger, q, t.id)
          if (e) decided.set(trigger.ticket, e)
        }
      }
    }
    if (decided.size > 0) this.start([...decided.values()])
  }

  /**
   * Starts writing executions: the process's write queue takes them ahead of its other waiting writes and
   * into the batch in progress (kernel/db/group-writer.ts, `urgent`), so a trigger's write waits neither
   * for the rest of the read (other ticks, other listeners) nor behind notifications and deliveries.
   */
  private start(batch: Execution[]) {
    for (const e of batch) this.writing.set(e.ticket, this.generation)
    const run = this.execute(batch).finally(() => this.inFlight.delete(run))
    this.inFlight.add(run)
  }

  /**
   * After a read of the bus: waits for the executions its ticks started (the cursor moves past a tick
   * only once they are written), then looks at the accounts whose price band a tick left (stop-out,
   * margin call, watchers) and expires pending orders; an account whose SL or TP waits to be written
   * again (the database did not answer) is not looked at meanwhile, for a bounded time (`waitingLogins`).
   * While an
   * execution waits to be written again because the database did not answer, the cursor stays before its
   * tick (CursorHeld): an engine taking the role meanwhile replays it; one whose tick is
   * RETRY_UNANSWERED_MS old is left.
   */
  async settle() {
    await Promise.all([...this.inFlight])
    await this.risk.check()
    await this.expire()
    if (this.retrying.size === 0) return
    let oldest: string | null = null
    for (const r of [...this.retrying.values()]) {
      if (!r.unavailable) continue
      if (this.unanswered(r)) {
        // it holds the cursor no longer; one in flight is left when its try fails (retryLater)
        r.unavailable = false
        if (r.at !== Number.POSITIVE_INFINITY) this.giveUp(r, 'unavailable')
        continue
      }
      if (oldest === null || compareIds(r.e.tick, oldest) < 0) oldest = r.e.tick
    }
    if (oldest !== null)
      throw new CursorHeld(`${this.retrying.size} trigger executions to write again`, oldest)
  }

  /**
   * The logins whose risk check waits for an SL or TP to be written again because the database did not
   * answer (a stop-out now would close that position at the price now, ahead of its SL at its own), for at
   * most RISK_WAIT_MAX_MS from the tick that first decided one, not restarted by the next tick deciding it
   * again while it waits. Not for a write the database refused (the next tick decides it again, refused
   * again: the account would never be looked at), nor for a pending order's activation.
   */
  private waitingLogins(): ReadonlySet<number> {
    const first = new Map<number, number>()
    // in the bus's clock, as its ticks' ids are
    const now = busNow(this.ctx.bus)
    for (const r of this.retrying.values()) {
      if (!r.unavailable || r.login === undefined || (r.e.kind !== 'sl' && r.e.kind !== 'tp')) continue
      const t = idTime(r.e.tick)
      const at = Number.isFinite(t) ? t : now
      const seen = first.get(r.login)
      if (seen === undefined || at < seen) first.set(r.login, at)
    }
    // a login none of whose SL/TP waits is looked at in this pass: its wait ends
    for (const login of [...this.waitingSince.keys()]) if (!first.has(login)) this.waitingSince.delete(login)
    if (first.size === 0) return NONE
    const logins = new Set<number>()
    for (const [login, at] of first) {
      const since = Math.min(this.waitingSince.get(login) ?? at, at)
      this.waitingSince.set(login, since)
      if (now - since < RISK_WAIT_MAX_MS) logins.add(login)
    }
    return logins
  }

  /** Its tick is too old for a takeover to replay (RETRY_UNANSWERED_MS), aged in the bus's clock as the role's cursor is. */
  private unanswered(r: Retry) {
    return busNow(this.ctx.bus) - idTime(r.e.tick) >= RETRY_UNANSWERED_MS
  }

  /**
   * Writes a batch of executions (executions.ts); one that lost its race re-reads its order, one the
   * database did not take is written again (`retryLater`), the others leave `writing`.
   */
  private async execute(batch: Execution[], again = false) {
    const generation = this.generation
    const results = await writeExecutions(this.ctx, batch, again)
    if (generation !== this.generation) {
      // the book was emptied meanwhile: only this generation's markers go (a new one may hold the ticket)
      for (const e of batch) if (this.writing.get(e.ticket) === generation) this.writing.delete(e.ticket)
      return
    }
    // one time for the batch: what it did not write is tried again together
    const now = performance.now()
    for (const [i, r] of results.entries()) {
      const e = batch[i]!
      if (r === 'unavailable' || r === 'failed') {
        this.retryLater(e, r, now)
        continue
      }
      this.retrying.delete(e.ticket)
      try {
        if (r === null) await this.refresh(e.ticket)
        else if (r !== 'cancelled') this.stats[r]++
      } catch (err) {
        this.ctx.logger.log('error', 'trigger execution refresh failed', {
          ticket: e.ticket,
          err: String(err),
        })
      } finally {
        this.writing.delete(e.ticket)
      }
    }
  }

  /**
   * An execution not written is tried again with a backoff, at the quote that decided it (the fill of
   * the tick that reached it, whatever the price did since), until it commits or its guarded update finds
   * the order changed. Its ticket stays in `writing`, so no later tick decides it again meanwhile. One the
   * database refused is left after RETRY_REFUSED tries, one it never answered once its tick is
   * RETRY_UNANSWERED_MS old, logged: the trigger is still on the book, and the next tick that reaches it
   * decides it again. A retry writes the deal's time as its tick's (executions.ts).
   */
  private retryLater(e: Execution, why: NotWritten, now: number) {
    const r = this.retrying.get(e.ticket) ?? {
      e,
      login: this.resting.get(e.ticket)?.order.login,
      attempts: 0,
      since: now,
      at: now,
      unavailable: false,
    }
    r.attempts++
    r.unavailable = why === 'unavailable'
    if ((why === 'failed' && r.attempts >= RETRY_REFUSED) || (why === 'unavailable' && this.unanswered(r)))
      return this.giveUp(r, why)
    r.at = now + Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** (r.attempts - 1))
    this.retrying.set(e.ticket, r)
    this.armRetry(r.at)
  }

  /** An execution not written is given up, logged at error (the next tick that reaches it decides it). */
  private giveUp(r: Retry, why: NotWritten) {
    this.ctx.logger.log('error', 'trigger execution left unwritten', {
      ticket: r.e.ticket,
      why,
      attempts: r.attempts,
      ms: Math.round(performance.now() - r.since),
      tick: r.e.tick,
    })
    this.retrying.delete(r.e.ticket)
    this.writing.delete(r.e.ticket)
    // its account is looked at again (its risk check waited for it)
    if (r.login !== undefined) this.riskChanged(r.login)
  }

  /** The retry timer fires by `at` (one already armed sooner stays): no scan of the retries. */
  private armRetry(at: number) {
    if (this.retryTimer && this.retryNextAt <= at) return
    if (this.retryTimer) clearTimeout(this.retryTimer)
    this.retryNextAt = at
    this.retryTimer = setTimeout(() => void this.retryDue(), Math.max(0, at - performance.now()))
  }

  /** Writes the executions whose retry is due, in one unit of work (executions.ts), at their ticks' quotes. */
  private async retryDue() {
    this.retryTimer = null
    this.retryNextAt = Number.POSITIVE_INFINITY
    // those due within a moment go with them (one unit of work, one timer fewer)
    const now = performance.now() + RETRY_SLACK_MS
    const due: Execution[] = []
    let next = Number.POSITIVE_INFINITY
    for (const r of [...this.retrying.values()])
      if (r.at <= now) {
        // its tick too old to be replayed: a write now would be one a takeover could not have made
        if (r.unavailable && this.unanswered(r)) {
          this.giveUp(r, 'unavailable')
          continue
        }
        r.at = Number.POSITIVE_INFINITY
        due.push(r.e)
      } else if (r.at < next) next = r.at
    if (next !== Number.POSITIVE_INFINITY) this.armRetry(next)
    if (due.length > 0) {
      this.stats.retried += due.length
      await this.execute(due, true)
    }
  }

  /** The write of a due trigger, with what it needs read before the transaction. */
  private async prepare(trigger: Trigger, q: Quote, tick: string): Promise<Execution | null> {
    const r = this.resting.get(trigger.ticket)
    if (!r) {
      this.book.remove(trigger.ticket)
      return null
    }
    const o = r.order
    // the session is the tick's: one stamped just before the close and handled just after it still decides
    // (a tick's own time is taken only when recent: a feed's stale stamp opens no closed session)
    const now = this.ctx.clock.now()
    const sessionAt = q.time <= now && now - q.time <= TICK_SESSION_SLACK_MS ? q.time : now
    const gs = await this.ctx.refdata.forGroup(r.groupId, o.symbol)
    if (!gs) return null
    if (trigger.kind === 'activate') {
      // past its expiration it expires (settle, or the trading.expire job), it is not filled: a tick
      // after a quiet spell (a weekend's gap) found it still on the book
      if (o.expiration > 0 && o.expiration * 1000 <= now) return null
      // it fills only where a market order of its direction would: a symbol made close-only, long only or
      // not tradable, or a tick outside its session, leaves it pending (looked at again on the next tick);
      // decided from the reference data in memory, before any read a held-back order would pay each tick
      if (!mayFill(gs, o.cmd, sessionAt)) return null
    } else if (!stopFillable(gs.info, sessionAt)) {
      // an SL or TP closes only where a client's close would: a tick outside the symbol's session (a
      // dealer's weekend quote) leaves it resting, the first tick in session decides it at its own price
      return null
    }
    // the group the book priced the trigger in (no read of the account: after each trade of the login
    // its cached row is gone, and on a remote database that read was most of the time to a decision)
    const group = await this.ctx.accountsRead.group(r.groupId)
    if (!group) return null
    if (trigger.kind === 'activate') {
      const p = await pricing(this.ctx, [group.id])
      return {
        ticket: o.ticket,
        tick,
        kind: 'activate',
        write: (tx, work, at) => activateTx(this.ctx, this.refreshes, tx, work, o, group, p, q, at),
      }
    }
    const lookup = await this.ctx.market.quoteLookup()
    return {
      ticket: o.ticket,
      tick,
      kind: trigger.kind,
      write: stopWrite(this.ctx, this.refreshes, o, trigger.kind, gs.info, group, q, lookup),
    }
  }

  /** Lost a race: re-read the order so the book matches the database. */
  private async refresh(ticket: number) {
    this.stats.lostRaces++
    const [row] = await this.ctx.db.select().from(orders).where(eq(orders.ticket, ticket))
    if (row) await this.track(row)
    else this.untrack(ticket)
  }

  /** Pending orders past their expiration become `expired` (expiry.ts). */
  expire() {
    const nowS = Math.floor(this.ctx.clock.now() / 1000)
    const due: { order: OrderRow; groupId: number }[] = []
    for (const t of this.expiring) {
      const r = this.resting.get(t)
      if (r && r.order.state === 'pending' && r.order.expiration <= nowS) due.push(r)
    }
    return expireDue(this.ctx, due, this.refreshes, (t) => this.refresh(t), this.stats)
  }

  setRiskWatcher(w: RiskWatcher) {
    this.risk.setWatcher(w)
  }

  /** Every login with positions is looked at on the next settles (a change the bands cannot see). */
  recheckAll() {
    this.risk.recheckAll()
  }

  /** A login's figures changed without a tick: its bands no longer hold (risk-monitor.ts). */
  riskChanged(login: number) {
    this.risk.changed(login)
  }

  /** Closes every open position of an account at current prices (a watcher's limit): closed, and left. */
  closeOut(login: number, reason: 'risk_limit') {
    return this.risk.closeOut(login, reason)
  }

  /** Daily swap of every open position (rollover.ts). */
  rollover() {
    return rollover(this.ctx, this.resting.values(), this.refreshes, (t) => this.refresh(t))
  }
}
