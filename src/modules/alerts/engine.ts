import { and, between, eq, gt } from 'drizzle-orm'
import { z } from 'zod'
import { idTime } from '../../kernel/bus/bus'
import { type ChannelEntry, defineChannel, publishChange } from '../../kernel/bus/channel'
import type { Db } from '../../kernel/db/client'
import { readSkippingBadRows } from '../../kernel/db/tolerant'
import { type GroupSymbol, pricedForGroup, type Quote, type Tick } from '../market'
import type { AlertsCtx } from './context'
import { LevelBook } from './domain/book'
import {
  type AlertState,
  firedThisEpisode,
  initialState,
  restsUntil,
  resumedState,
  sameDefinition,
  watches,
} from './domain/conditions'
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
/**
 * The price an alert of the group watches on a raw quote, or null where there is none: no quote, or the
 * group's spread settings put it at 0 or below, which the market calls no price (pricedForGroup).
 */
export function groupPriceOf(raw: Quote | null | undefined, gs: GroupSymbol, side: number): number | null {
  const q = raw ? pricedForGroup(raw, gs) : null
  return q ? priceOf(q, side) : null
}
/** The resync's read: the alerts written since `since` (ms), through the index on updated_at. */
export const changedSince = (db: Db, since: number) =>
  db.select().from(priceAlerts).where(gt(priceAlerts.updatedAt, since))
/** One book: the alerts of a symbol, a side and a group (its price, with the group's spread settings). */
interface Book {
  side: number
  groupId: number
  levels: LevelBook
}
/** An alert on the books; `firing` while a firing decided for it is being written. */
type Tracked = { row: AlertRow; spec: AlertRow; state: AlertState; groupId: number; firing?: boolean }
/** A firing or an expiry decided on a tick: written with the others of its batch, or put back as it was. */
interface Decided {
  id: number
  a: Tracked
  row: AlertRow
  price: number
  before: AlertState
  symbol: string
  side: number
}

/**
 * The firings of a batch in one statement: each on the version it was decided on (still active, same
 * fired count and updated_at), so it happens once even with several instances; a once-alert is disabled.
 * `+active`: looked up by id for each firing, not by scanning the active alerts (the index on active).
 */
const FIRE = `update price_alerts set fired_count = fired_count + 1, last_fired_at = ?2, last_price = j.value ->> 3,
    active = case when repeat_mode = 0 then 0 else 1 end, updated_at = ?3
  from json_each(?1) as j
  where price_alerts.id = j.value ->> 0 and +price_alerts.active = 1
    and price_alerts.fired_count = j.value ->> 1 and price_alerts.updated_at = j.value ->> 2
  returning id`
/** Expiries of a batch: an edit written meanwhile (a new expires_at) wins. */
const EXPIRE = `update price_alerts set active = 0, updated_at = ?2
  from json_each(?1) as j
  where price_alerts.id = j.value ->> 0 and +price_alerts.active = 1 and price_alerts.updated_at = j.value ->> 1`

/** Alerts the expiry job disables in one statement (a page). */
const EXPIRE_PAGE = 500
/** A page of the active alerts past their expiry (?1, epoch seconds), by the index on (active, expires_at). */
export const DUE_PAGE =
  'select id from price_alerts where active = 1 and expires_at between 1 and ?1 limit ?3'
/**
 * A page of the alerts past their expiry, disabled in one statement: each still active and still due as it
 * runs (an edit that moved its expiry wins).
 */
const EXPIRE_DUE = `update price_alerts set active = 0, updated_at = ?2 where id in (${DUE_PAGE}) returning id`

/**
 * Evaluates active price alerts on every tick of their symbol and side, through per-symbol level books
 * (domain/book.ts): a tick wakes only the alerts whose level it reached. The firings of a batch of ticks
 * are written together, each a conditional UPDATE (still active, same version) with its notification in
 * the same transaction, so it happens once even with several instances; a once-alert is then disabled, a
 * repeat-alert waits for its reset and rests (REPEAT_REST_S). Alerts of a disabled account stay off the
 * books, kept, until it is enabled again.
 */
export class AlertEngine {
  /** By symbol, then by `side|group`. */
  private readonly books = new Map<string, Map<string, Book>>()
  private readonly alerts = new Map<number, Tracked>()
  /** Changes of an account (group, enable) seen, by login (a filing under way notices one). */
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
        : await changedSince(this.ctx.db, this.syncedUpTo - RESYNC_OVERLAP_MS)
    const first = this.syncedUpTo === 0
    for (const r of rows) {
      const known = this.alerts.get(r.id)
      if (!known || known.row.updatedAt !== r.updatedAt || r.active !== 1) await this.track(r, first)
    }
    this.syncedUpTo = now
  }

  /**
   * Files (or re-files, or drops) an alert after a write; its state starts from the current quote. Loaded
   * at a start, a takeover or its account enabled again (`restored`), a repeat alert that fired since what
   * it watches last changed (domain firedThisEpisode, `watch_changed_at`) waits for its reset: inside its
   * region (or with no price yet) it is the same episode it fired for, not a new one. A version of an
   * alert on the book that watches the same thing (its own firing read back by the resync before the
   * engine recorded it, a change of message or expiry) keeps its state: only an edit of what it watches
   * re-arms it.
   */
  async track(row: AlertRow, restored = false): Promise<void> {
    const moves = this.moves.get(row.login)
    // the account's group prices the alert (its spread settings): the price the account sees and trades at
    const account = row.active === 1 ? await this.ctx.accounts.read.account(row.login) : null
    // a disabled account's alerts rest, kept, until it is enabled again (accountMoved)
    const enabled = account?.enable === 1 ? account : null
    const gs = enabled ? await this.ctx.refdata.forGroup(enabled.groupId, row.symbol) : null
    // the account moved (or was disabled or enabled) while it was read: read it again
    if (this.moves.get(row.login) !== moves) return this.track(row, restored)
    const known = this.alerts.get(row.id)
    // a newer version of the alert was filed while this one was read
    if ((known?.row.updatedAt ?? 0) > row.updatedAt) return
    if (row.active !== 1 || !enabled || !gs) return this.untrack(row.id)
    const p = groupPriceOf(this.ctx.quotes.peek(row.symbol), gs, row.side)
    if (known && sameDefinition(known.spec, row)) {
      // the same alert, maybe with firings recorded: its state and its place in the books stay (a tick
      // firing it meanwhile puts it back itself); only an account move changes its book (two writes may
      // share a millisecond: what it watches is compared, not updated_at)
      known.row = row
      known.spec = row
      if (known.groupId !== enabled.groupId) {
        const levels = this.levelsOf(known)
        const filed = levels?.has(row.id) ?? false
        levels?.remove(row.id)
        known.groupId = enabled.groupId
        if (filed) this.book(row.symbol, row.side, known.groupId).place(row.id, watches(row, known.state, p))
      }
      return
    }
    this.untrack(row.id)
    // it fired since what it watches last changed (a message or an expiry edited since changed nothing of
    // it): the same episode, waiting for its reset; an edit of what it watches made it a new alert
    const state =
      restored && row.repeatMode === 1 && firedThisEpisode(row) ? resumedState(row, p) : initialState(row, p)
    this.alerts.set(row.id, { row, spec: row, state, groupId: enabled.groupId })
    this.book(row.symbol, row.side, enabled.groupId).place(row.id, watches(row, state, p))
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

  /**
   * After staff moved an account to another group, or disabled or enabled it (committed): its alerts
   * follow it. Told through the bus as `moved` from other instances.
   */
  async accountMoved(login: number) {
    if (this.ctx.engine.isLeader) await this.regroup(login)
    else await publishChange(this.ctx.bus, this.ctx.logger, ALERTS_CHANGED, { moved: login })
  }

  /**
   * The account's alerts watch its group's price from now on, each in the state it had (a repeat alert
   * waiting for its reset still waits). Where the new group has no settings for the symbol the alert
   * leaves the books, as when it is filed for such a group. A disabled account's alerts leave the books
   * (they stay active in the database); once it is enabled they are filed again, as at a start.
   */
  private async regroup(login: number) {
    // a filing that read the account before the change reads it again (track)
    this.moves.set(login, (this.moves.get(login) ?? 0) + 1)
    const read = await this.ctx.accounts.read.accountAsCommitted(login)
    const account = read?.enable === 1 ? read : null
    for (const [id, a] of [...this.alerts]) {
      if (a.row.login !== login || a.groupId === account?.groupId) continue
      const gs = account ? await this.ctx.refdata.forGroup(account.groupId, a.row.symbol) : null
      // filed afresh meanwhile: that filing read the account after the change
      if (this.alerts.get(id) !== a) continue
      if (!account || !gs) {
        this.untrack(id)
        continue
      }
      // moved in place: a tick's firing awaited meanwhile files it again in the book of its group now
      this.levelsOf(a)?.remove(id)
      a.groupId = account.groupId
      const p = groupPriceOf(this.ctx.quotes.peek(a.row.symbol), gs, a.row.side)
      this.book(a.row.symbol, a.row.side, a.groupId).place(id, watches(a.spec, a.state, p))
    }
    if (!account) return
    // the alerts it kept while disabled (or while this engine started) join the books again
    const rows = await this.ctx.db
      .select()
      .from(priceAlerts)
      .where(and(eq(priceAlerts.login, login), eq(priceAlerts.active, 1)))
    for (const r of rows) if (!this.alerts.has(r.id)) await this.track(r, true)
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

  /**
   * Steps the woken alerts of a batch of ticks, then writes its firings and expiries in one transaction.
   * While replaying after a takeover, an alert fires only on ticks published after it was last written.
   */
  async onTicks(ticks: Tick[], opts: { replay?: boolean } = {}) {
    const nowS = Math.floor(this.ctx.clock.now() / 1000)
    const firings: Decided[] = []
    const expiries: Decided[] = []
    for (const t of ticks)
      for (const { side, groupId, levels: b } of [...(this.books.get(t.symbol)?.values() ?? [])]) {
        if (b.size === 0) continue
        // the group's price; a symbol hidden from the group (or gone) fires nothing meanwhile, nor does a
        // tick the group's spread puts at 0 or below (no price: as if there were no quote)
        const gs = await this.ctx.refdata.forGroup(groupId, t.symbol)
        if (gs?.sec.show !== 1) continue
        const p = groupPriceOf(t, gs, side)
        if (p === null) continue
        for (const { id, fired, before } of wake(b, p, (id) => this.alerts.get(id))) {
          const a = this.alerts.get(id)
          if (!a) continue
          const d: Decided = { id, a, row: a.row, price: p, before, symbol: t.symbol, side }
          // off the book until its expiry is written
          if (a.row.expiresAt > 0 && a.row.expiresAt <= nowS) {
            expiries.push(d)
            continue
          }
          const stale = opts.replay && a.row.updatedAt > idTime(t.id)
          if (fired && !stale) {
            // resting (or its firing still being written): not taken, evaluated again on the next tick
            if (a.firing || nowS < restsUntil(a.row)) {
              retry(this.book(t.symbol, side, a.groupId), id, a, before)
              continue
            }
            a.firing = true
            firings.push(d)
            // a once-alert stays off the book: it is done once its firing is written
            if (a.row.repeatMode === 0) continue
          }
          rewatch(this.book(t.symbol, side, a.groupId), id, a, p)
        }
      }
    if (firings.length || expiries.length) await this.record(firings, expiries, nowS)
  }

  /**
   * Writes a batch's expiries and firings (with their notifications) in one transaction, each on the
   * version it was decided on. If the write fails, every alert of the batch is put back as it was before
   * its tick, to be tried again on the next one.
   */
  private async record(firings: Decided[], expiries: Decided[], nowS: number) {
    const now = this.ctx.clock.now()
    // an alert changed while the batch was decided (an edit, a removal, its account disabled) was filed
    // afresh or dropped: what was decided on the old one is not written
    const current = (d: Decided) => this.alerts.get(d.id) === d.a
    const fired = (d: Decided): AlertRow => ({
      ...d.row,
      firedCount: d.row.firedCount + 1,
      lastFiredAt: nowS,
      lastPrice: d.price,
      active: d.row.repeatMode === 0 ? 0 : 1,
      updatedAt: now,
    })
    let written: { fired: Set<number>; expired: Decided[]; firings: Decided[] }
    try {
      written = await this.ctx.uow.run(async (tx, work) => {
        const expired = expiries.filter(current)
        const firing = firings.filter(current)
        if (expired.length)
          await tx.execute({
            sql: EXPIRE,
            args: [JSON.stringify(expired.map((d) => [d.id, d.row.updatedAt])), now],
          })
        const ids = new Set<number>()
        if (firing.length) {
          const items = firing.map((d) => [d.id, d.row.firedCount, d.row.updatedAt, d.price])
          const res = await tx.execute({ sql: FIRE, args: [JSON.stringify(items), nowS, now] })
          for (const r of res.rows) ids.add(Number(r.id))
        }
        for (const d of firing)
          if (ids.has(d.id))
            // the alert as the API shows it, cut to the topic's fields
            work.emit(
              AlertFired,
              d.row.brandId,
              AlertFired.schema.parse({ ...alertView(fired(d)), alert_id: d.id, price: d.price }),
            )
        return { fired: ids, expired, firings: firing }
      })
    } catch (e) {
      for (const d of [...firings, ...expiries]) {
        d.a.firing = false
        if (current(d)) retry(this.book(d.symbol, d.side, d.a.groupId), d.id, d.a, d.before)
      }
      this.ctx.logger.log('warn', 'alert firings not written: retried on the next tick', {
        firings: firings.length,
        expiries: expiries.length,
        err: e instanceof Error ? e.message : String(e),
      })
      return
    }
    for (const d of firings) d.a.firing = false
    for (const d of written.expired) {
      // an alert edited while the write was awaited was filed afresh: it is no longer this one (one read
      // back with a firing meanwhile stays for the expiry job, which writes its expiry on that version)
      if (current(d) && d.a.row === d.row) this.untrack(d.id)
      this.stats.expired++
    }
    for (const d of written.firings) {
      if (!written.fired.has(d.id)) {
        if (!current(d)) continue
        // a version watching the same thing was filed in place meanwhile (a new message): the firing is
        // decided again on it, from the next tick
        if (d.a.row !== d.row) retry(this.book(d.symbol, d.side, d.a.groupId), d.id, d.a, d.before)
        // gone or changed in the database (another instance, a client): the resync files what is there
        else this.untrack(d.id)
        continue
      }
      this.stats.fired++
      if (!current(d)) continue
      if (d.row.repeatMode === 0) this.untrack(d.id)
      else if (d.a.row.updatedAt <= now) {
        // read back meanwhile (the resync), the same version is already filed in place
        d.a.row = fired(d)
        d.a.spec = d.a.row
      }
    }
  }

  /**
   * Alerts past expires_at are disabled even when their symbol does not tick, and whether or not they are on
   * the books (those of a disabled account, or of a symbol the account's group no longer has, are not):
   * in the database, a page at a time, then dropped from the books. A failed write leaves them active for
   * the next tick or run to expire.
   */
  async expireDue() {
    const nowS = Math.floor(this.ctx.clock.now() / 1000)
    // nothing due (the common case) is a read: a write transaction every 2 s would take a remote
    // database's write lock for nothing, beside every write of the API
    const [due] = await this.ctx.db
      .select({ id: priceAlerts.id })
      .from(priceAlerts)
      .where(and(eq(priceAlerts.active, 1), between(priceAlerts.expiresAt, 1, nowS)))
      .limit(1)
    if (!due) return
    for (;;) {
      const now = this.ctx.clock.now()
      const res = await this.ctx.db.transaction((tx) =>
        tx.execute({ sql: EXPIRE_DUE, args: [nowS, now, EXPIRE_PAGE] }),
      )
      for (const r of res.rows) {
        const id = Number(r.id)
        const a = this.alerts.get(id)
        // a version filed since with a later expiry (an edit that re-activated it) stays
        if (a && a.row.expiresAt > 0 && a.row.expiresAt <= nowS) this.untrack(id)
        this.stats.expired++
      }
      if (res.rows.length < EXPIRE_PAGE) return
    }
  }
}
