import { and, eq, gt } from 'drizzle-orm'
import { z } from 'zod'
import { idTime } from '../../kernel/bus/bus'
import { type ChannelEntry, defineChannel, publishChange } from '../../kernel/bus/channel'
import { readSkippingBadRows } from '../../kernel/db/tolerant'
import { quoteForGroup, type Tick } from '../market'
import type { AlertsCtx } from './context'
import { LevelBook } from './domain/book'
import { type AlertState, initialState, resumedState, watches } from './domain/conditions'
import { retry, rewatch, wake } from './domain/evaluate'
import { AlertFired } from './events'
import { type AlertRow, priceAlerts } from './schema'
import { alertView } from './views'

/** A transaction may commit a little after its clock stamped updated_at. */
const RESYNC_OVERLAP_MS = 5000
/** An alert written (or removed) on an instance other than the engine, or an account moved to another group. */
type AlertChange = { row: AlertRow } | { removed: number } | { moved: number }

/** Bus entries of alert writes made on instances other than the engine. */
export const ALERTS_CHANGED = defineChannel(
  'alerts.changed',
  z.custom<AlertChange>(
    (v) =>
      typeof (v as { removed?: unknown })?.removed === 'number' ||
      typeof (v as { moved?: unknown })?.moved === 'number' ||
      typeof (v as { row?: { id?: unknown } })?.row?.id === 'number',
    'an alert change',
  ),
)
/** The price an alert watches: the bid (side 0) or the ask (side 1). */
export const priceOf = (q: { bid: number; ask: number }, side: number) => (side === 1 ? q.ask : q.bid)
/** One book: the alerts of a symbol, a side and a group (its price, with the group's spread settings). */
interface Book {
  side: number
  groupId: number
  levels: LevelBook
}
type Tracked = { row: AlertRow; spec: AlertRow; state: AlertState; groupId: number }

/**
 * Evaluates active price alerts on every tick of their symbol and side, through per-symbol level books
 * (domain/book.ts): a tick wakes only the alerts whose level it reached. A firing is a conditional UPDATE
 * (still active, same fired count) with its notification in the same transaction, so it happens once
 * even with several instances; a once-alert is then disabled, a repeat-alert waits for its reset.
 */
export class AlertEngine {
  /** By symbol, then by `side|group`. */
  private readonly books = new Map<string, Map<string, Book>>()
  private readonly alerts = new Map<number, Tracked>()
  /** Moves of an account to another group seen, by login (a filing under way notices one). */
  private readonly moves = new Map<number, number>()
  readonly stats = { fired: 0, expired: 0 }

  constructor(private readonly ctx: AlertsCtx) {}

  private book(symbol: string, side: number, groupId: number) {
    let bySymbol = this.books.get(symbol)
    if (!bySymbol) {
      bySymbol = new Map()
      this.books.set(symbol, bySymbol)
    }
    const k = `${side}|${groupId}`
    let b = bySymbol.get(k)
    if (!b) {
      b = { side, groupId, levels: new LevelBook() }
      bySymbol.set(k, b)
    }
    return b.levels
  }

  private syncedUpTo = 0

  /**
   * Loads the active alerts (start-up), then keeps up with alerts created or changed through other
   * instances: ticks are evaluated where they are applied, so that instance must know every alert.
   */
  async load() {
    const now = this.ctx.clock.now()
    const active = eq(priceAlerts.active, 1)
    const rows =
      this.syncedUpTo === 0
        ? await readSkippingBadRows(this.ctx.logger, 'price alerts', {
            all: () => this.ctx.db.select().from(priceAlerts).where(active),
            keys: async () =>
              (await this.ctx.db.select({ id: priceAlerts.id }).from(priceAlerts).where(active)).map(
                (r) => r.id,
              ),
            one: (id) => this.ctx.db.select().from(priceAlerts).where(eq(priceAlerts.id, id)),
          })
        : await this.ctx.db
            .select()
            .from(priceAlerts)
            .where(gt(priceAlerts.updatedAt, this.syncedUpTo - RESYNC_OVERLAP_MS))
    const first = this.syncedUpTo === 0
    for (const r of rows) {
      const known = this.alerts.get(r.id)
      if (!known || known.row.updatedAt !== r.updatedAt || r.active !== 1) await this.track(r, first)
    }
    this.syncedUpTo = now
  }

  /**
   * Files (or re-files, or drops) an alert after a write; its state starts from the current quote. Loaded
   * at a start or a takeover (`restored`), a repeat alert that fired already waits for its reset: inside
   * its region (or with no price yet) it is the same episode it fired for, not a new one.
   */
  async track(row: AlertRow, restored = false): Promise<void> {
    const moves = this.moves.get(row.login)
    // the account's group prices the alert (its spread settings): the price the account sees and trades at
    const account = row.active === 1 ? await this.ctx.accounts.read.account(row.login) : null
    const gs = account ? await this.ctx.refdata.forGroup(account.groupId, row.symbol) : null
    // the account moved while it was read: read it again
    if (this.moves.get(row.login) !== moves) return this.track(row, restored)
    // a newer version of the alert was filed while this one was read
    if ((this.alerts.get(row.id)?.row.updatedAt ?? 0) > row.updatedAt) return
    this.untrack(row.id)
    if (row.active !== 1 || !account || !gs) return
    const raw = this.ctx.quotes.peek(row.symbol)
    const p = raw ? priceOf(quoteForGroup(raw, gs), row.side) : null
    // its last write was its firing (an edit since is a new alert, armed as one)
    const firedLast = row.firedCount > 0 && Math.floor(row.updatedAt / 1000) === row.lastFiredAt
    const state = restored && row.repeatMode === 1 && firedLast ? resumedState(row, p) : initialState(row, p)
    this.alerts.set(row.id, { row, spec: row, state, groupId: account.groupId })
    this.book(row.symbol, row.side, account.groupId).place(row.id, watches(row, state, p))
  }

  /** After a write commits: the engine files it at once, another instance tells it through the bus. */
  async changed(row: AlertRow) {
    if (this.ctx.engine.isLeader) await this.track(row)
    else await publishChange(this.ctx.bus, this.ctx.logger, ALERTS_CHANGED, { row })
  }

  async removed(id: number) {
    if (this.ctx.engine.isLeader) this.untrack(id)
    else await publishChange(this.ctx.bus, this.ctx.logger, ALERTS_CHANGED, { removed: id })
  }

  /** After staff moved an account to another group (committed): its alerts follow it. */
  async accountMoved(login: number) {
    if (this.ctx.engine.isLeader) await this.regroup(login)
    else await publishChange(this.ctx.bus, this.ctx.logger, ALERTS_CHANGED, { moved: login })
  }

  /**
   * The account's alerts watch its group's price from now on, each in the state it had (a repeat alert
   * waiting for its reset still waits). Where the new group has no settings for the symbol the alert
   * leaves the books, as when it is filed for such a group.
   */
  private async regroup(login: number) {
    // a filing that read the account before the move reads it again (track)
    this.moves.set(login, (this.moves.get(login) ?? 0) + 1)
    // the move's own invalidation of the cached account may have been lost (the cache away a moment)
    await this.ctx.accounts.read.invalidateAccount(login)
    const account = await this.ctx.accounts.read.account(login)
    for (const [id, a] of [...this.alerts]) {
      if (a.row.login !== login || a.groupId === account?.groupId) continue
      const gs = account ? await this.ctx.refdata.forGroup(account.groupId, a.row.symbol) : null
      // filed afresh meanwhile: that filing read the account after the move
      if (this.alerts.get(id) !== a) continue
      if (!account || !gs) {
        this.untrack(id)
        continue
      }
      // moved in place: a tick's firing awaited meanwhile files it again in the book of its group now
      this.levelsOf(a)?.remove(id)
      a.groupId = account.groupId
      const raw = this.ctx.quotes.peek(a.row.symbol)
      const p = raw ? priceOf(quoteForGroup(raw, gs), a.row.side) : null
      this.book(a.row.symbol, a.row.side, a.groupId).place(id, watches(a.spec, a.state, p))
    }
  }

  /** The engine's handler of alert changes made on other instances. */
  async onChangedEntries(entries: ChannelEntry<AlertChange>[]) {
    for (const e of entries) {
      const d = e.data
      if ('removed' in d) this.untrack(d.removed)
      else if ('moved' in d) await this.regroup(d.moved)
      else {
        const known = this.alerts.get(d.row.id)
        if (!known || known.row.updatedAt <= d.row.updatedAt) await this.track(d.row)
      }
    }
  }

  /** Empties the books (this instance gave up the engine role). */
  reset() {
    this.alerts.clear()
    this.books.clear()
    this.syncedUpTo = 0
  }

  untrack(id: number) {
    const a = this.alerts.get(id)
    if (!a) return
    this.alerts.delete(id)
    this.levelsOf(a)?.remove(id)
  }

  /** The book an alert is filed in: its symbol's, side's and account group's. */
  private levelsOf(a: Tracked) {
    return this.books.get(a.row.symbol)?.get(`${a.row.side}|${a.groupId}`)?.levels
  }

  get size() {
    return this.alerts.size
  }

  /** While replaying after a takeover, an alert fires only on ticks published after it was last written. */
  async onTicks(ticks: Tick[], opts: { replay?: boolean } = {}) {
    const nowS = Math.floor(this.ctx.clock.now() / 1000)
    for (const t of ticks)
      for (const { side, groupId, levels: b } of [...(this.books.get(t.symbol)?.values() ?? [])]) {
        if (b.size === 0) continue
        // the group's price; a symbol hidden from the group (or gone) fires nothing meanwhile
        const gs = await this.ctx.refdata.forGroup(groupId, t.symbol)
        if (gs?.sec.show !== 1) continue
        const p = priceOf(quoteForGroup(t, gs), side)
        // once a write failed, the rest of this tick's alerts are put back untried: the next tick retries
        let failed: unknown = null
        for (const { id, fired, before, tracked } of wake(b, p, (id) => this.alerts.get(id))) {
          const a = this.alerts.get(id)
          if (!a) continue
          // an alert changed while a write was awaited was filed afresh: its old state is not its own; one
          // whose account moved meanwhile goes back to the book of its group now
          const putBack = () => {
            const now = this.alerts.get(id)
            if (now === tracked) retry(this.book(t.symbol, side, now.groupId), id, tracked, before)
          }
          if (failed) {
            putBack()
            continue
          }
          try {
            if (a.row.expiresAt > 0 && a.row.expiresAt <= nowS) {
              await this.expire(a.row)
              continue
            }
            const stale = opts.replay && a.row.updatedAt > idTime(t.id)
            if (fired && !stale && !(await this.fire(a.row, p))) continue
            const still = this.alerts.get(id)
            if (still) rewatch(this.book(t.symbol, side, still.groupId), id, still, p)
          } catch (e) {
            failed = e
            putBack()
          }
        }
        if (failed)
          this.ctx.logger.log('warn', 'alert firings not written: retried on the next tick', {
            symbol: t.symbol,
            err: failed instanceof Error ? failed.message : String(failed),
          })
      }
  }

  /** Writes the firing and its notification; false when the alert is gone (another instance, a client). */
  private async fire(row: AlertRow, price: number): Promise<boolean> {
    const now = this.ctx.clock.now()
    const once = row.repeatMode === 0
    const updated = await this.ctx.uow.run(async (tx, work) => {
      const [r] = await tx
        .update(priceAlerts)
        .set({
          firedCount: row.firedCount + 1,
          lastFiredAt: Math.floor(now / 1000),
          lastPrice: price,
          active: once ? 0 : 1,
          updatedAt: now,
        })
        .where(
          and(
            eq(priceAlerts.id, row.id),
            eq(priceAlerts.active, 1),
            eq(priceAlerts.firedCount, row.firedCount),
            // the definition it decided on: an edit committed meanwhile is a new alert, not this firing
            eq(priceAlerts.updatedAt, row.updatedAt),
          ),
        )
        .returning()
      if (r)
        // the alert as the API shows it, cut to the topic's fields
        work.emit(AlertFired, r.brandId, AlertFired.schema.parse({ ...alertView(r), alert_id: r.id, price }))
      return r
    })
    // an alert edited while the write was awaited was filed afresh: that one stays on the book
    const mine = this.alerts.get(row.id)?.row === row
    if (!updated) {
      if (mine) this.untrack(row.id)
      return false
    }
    this.stats.fired++
    if (once && mine) this.untrack(row.id)
    else if (mine) {
      const a = this.alerts.get(row.id)
      if (a) {
        a.row = updated
        a.spec = updated
      }
    }
    return true
  }

  /** Off the book once its write commits: a failed write leaves it for the next tick or run to expire. */
  private async expire(row: AlertRow) {
    await this.ctx.db.transaction((tx) =>
      tx
        .update(priceAlerts)
        .set({ active: 0, updatedAt: this.ctx.clock.now() })
        // an edit written meanwhile (a new expires_at) wins
        .where(
          and(
            eq(priceAlerts.id, row.id),
            eq(priceAlerts.active, 1),
            eq(priceAlerts.updatedAt, row.updatedAt),
          ),
        ),
    )
    // an alert edited while the write was awaited was filed afresh: it is no longer this one
    if (this.alerts.get(row.id)?.row === row) this.untrack(row.id)
    this.stats.expired++
  }

  /** Alerts past expires_at are disabled even when their symbol does not tick. */
  async expireDue() {
    const nowS = Math.floor(this.ctx.clock.now() / 1000)
    for (const { row } of [...this.alerts.values()])
      if (row.expiresAt > 0 && row.expiresAt <= nowS) await this.expire(row)
  }
}
