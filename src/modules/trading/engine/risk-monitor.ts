import { eq } from 'drizzle-orm'
import { type AccountRecord, fromMinor, type GroupRecord, roundToMinor } from '../../accounts'
import { pricedForGroup, type Tick, valuedForGroup } from '../../market'
import { marginOf, type PricedPosition, type Pricing, pricePositions, pricing } from '../book/exposure'
import { closeTx, refreshAfterCommit, type TradeRefresh } from '../commit/execution'
import type { TradingCtx } from '../context'
import { riskFillable, stopOutOrder } from '../domain/checks'
import { isBuy } from '../domain/formulas'
import type { Holding } from '../domain/holdings'
import { type BandLimits, everyTick, riskBands } from '../domain/risk-band'
import { RiskBook } from '../domain/risk-book'
import { MarginCall } from '../events'
import { marginCallEpisodes } from '../schema'
import { URGENT } from './executions'
import type { RiskWatcher } from './risk-watch'

/** Accounts looked at for a change (not a tick) in one settle; the rest wait for the next. */
const CHECKS_PER_SETTLE = 2000

/** What the risk monitor reads of the trigger engine's book, and what it reports back. */
interface HeldPositions {
  /** The holdings of a login with open positions. */
  of(login: number): Holding[] | undefined
  logins(): Iterable<number>
  /**
   * Logins with an SL or TP waiting to be written again, the database not having answered (trigger-engine.ts,
   * `waitingLogins`, for a bounded time): the book still holds the position it closes, at the price it was
   * decided at.
   */
  waiting(): ReadonlySet<number>
  refreshes: TradeRefresh
  stats: { stoppedOut: number; riskClosed: number }
  /** Re-reads an order that lost a race. */
  refresh(ticket: number): Promise<void>
}

/**
 * The engine's watch over accounts with positions: margin calls, stop-outs and a watcher's limits (prop),
 * looked at when a tick leaves an account's price band (domain/risk-band.ts, ADR 0013) or the account
 * changed, not on every tick.
 */
export class RiskMonitor {
  /**
   * Logins in a margin-call episode (the notice is written once per episode): loaded from
   * `margin_call_episodes` when this instance takes the engine role, kept in step with it while it holds it.
   */
  private readonly marginCalled = new Set<number>()
  /** Episodes' deletes on their way, and logins whose delete failed (endEpisode). */
  private readonly ending = new Map<number, Promise<void>>()
  private readonly unended = new Set<number>()
  /** A module holding accounts to limits of its own (risk-watch.ts). */
  private riskWatcher: RiskWatcher | null = null
  /** The price bands of every login with positions (domain/risk-band.ts): inside them it reaches no limit. */
  private readonly riskBook = new RiskBook()
  /** Logins to look at on the next settle: a tick left their band (its time), or they changed. */
  private riskDue = new Map<number, number>()
  private readonly riskDirty = new Set<number>()
  /** When each login's band stops holding whatever the price (its watcher's day ends), and the first. */
  private readonly riskUntil = new Map<number, number>()
  private riskNextUntil = Number.POSITIVE_INFINITY

  constructor(
    private readonly ctx: TradingCtx,
    private readonly held: HeldPositions,
  ) {}

  /** A login has no positions any more: no margin, so its margin-call episode is over. */
  noPositions(login: number) {
    if (this.marginCalled.delete(login)) void this.endEpisode(login)
  }

  /**
   * Deletes an episode's row. Its next episode waits for a delete on its way (it would remove the new
   * row), and deletes again first where one failed (the row would hide the new episode's notice).
   */
  private endEpisode(login: number) {
    const ended = this.ctx.db
      .delete(marginCallEpisodes)
      .where(eq(marginCallEpisodes.login, login))
      .then(
        () => {
          this.unended.delete(login)
        },
        (e: unknown) => {
          this.unended.add(login)
          this.ctx.logger.log('warn', 'margin-call episode not ended', {
            login,
            err: e instanceof Error ? e.message : String(e),
          })
        },
      )
      .finally(() => {
        if (this.ending.get(login) === ended) this.ending.delete(login)
      })
    this.ending.set(login, ended)
    return ended
  }

  /**
   * The episodes going on, read when this instance takes the engine role (after its book is loaded): an
   * episode of a login left without positions meanwhile (closed while no instance held the role) ends.
   */
  async load() {
    const rows = await this.ctx.db.select({ login: marginCallEpisodes.login }).from(marginCallEpisodes)
    for (const { login } of rows) {
      this.marginCalled.add(login)
      if (!this.held.of(login)) this.noPositions(login)
    }
  }

  /**
   * Empties what it holds (this instance gave up the engine role). Episodes are not ended: their rows
   * stay for whichever engine comes next.
   */
  reset() {
    this.marginCalled.clear()
    this.unended.clear()
    this.riskBook.clear()
    this.riskDue.clear()
    this.riskDirty.clear()
    this.riskUntil.clear()
    this.riskNextUntil = Number.POSITIVE_INFINITY
  }

  setWatcher(w: RiskWatcher) {
    this.riskWatcher = w
    w.listen((login) => this.changed(login))
  }

  /** Every login with positions is looked at on the next settles (a change the bands cannot see: group settings). */
  recheckAll() {
    for (const login of this.held.logins()) this.riskDirty.add(login)
  }

  /**
   * A login's figures changed (its positions, balance, credit, leverage or a watcher's limits): its bands
   * no longer hold. It is looked at on the next settle, and until then on every tick of a symbol it holds.
   */
  changed(login: number) {
    this.riskDirty.add(login)
    const held = this.held.of(login)
    if (held) this.riskBook.set(login, [...new Set(held.map((h) => h.symbol))].map(everyTick))
  }

  /** A login is looked at on the next settle, with the latest tick time that made it due. */
  private markDue(login: number, time: number) {
    if (time > (this.riskDue.get(login) ?? -1)) this.riskDue.set(login, time)
  }

  /** The logins whose band a tick leaves are due. */
  tick(t: Tick) {
    this.riskBook.leaving(t.symbol, t.bid, t.ask, (login) => this.markDue(login, t.time))
    if (t.time < this.riskNextUntil) return
    // a watcher's day ended: its accounts are looked at whatever the price
    this.riskNextUntil = Number.POSITIVE_INFINITY
    for (const [login, until] of this.riskUntil)
      if (until <= t.time) {
        this.riskUntil.delete(login)
        this.markDue(login, t.time)
      } else if (until < this.riskNextUntil) this.riskNextUntil = until
  }

  private forgetBands(login: number) {
    this.riskBook.delete(login)
    this.riskUntil.delete(login)
  }

  /**
   * The accounts a tick moved out of their price band, or that changed, are priced at the quotes now (one
   * pricing per group and pass): a margin call is noticed, a stop-out closes positions, a watcher's limit
   * closes them all; each then gets new bands from how far it is from the nearest of those levels. The
   * other accounts are not looked at, nor, for a bounded time, one whose SL or TP waits to be written again. At most CHECKS_PER_SETTLE dirty ones a pass (a re-check of every
   * account must not hold up the triggers), the rest on the next.
   */
  async check() {
    if (this.riskDue.size === 0 && this.riskDirty.size === 0) return
    const due = this.riskDue
    this.riskDue = new Map()
    const now = this.ctx.clock.now()
    let dirty = 0
    for (const login of this.riskDirty) {
      if (dirty++ >= CHECKS_PER_SETTLE) break
      if (!due.has(login)) due.set(login, now)
      this.riskDirty.delete(login)
    }
    const priced = new Map<number, Pricing>()
    const waiting = this.held.waiting()
    for (const [login, time] of due) {
      // not looked at until its execution is written (a stop-out now would close that position at the
      // price now, ahead of its SL at its own): its write looks at it again, and so does the next settle
      if (waiting.has(login)) {
        this.riskDirty.add(login)
        continue
      }
      const held = this.held.of(login)
      const account = held && (await this.ctx.accountsRead.account(login))
      const group = account && (await this.ctx.accountsRead.group(account.groupId))
      if (!held || !account || !group) {
        this.forgetBands(login)
        continue
      }
      let p = priced.get(group.id)
      if (!p) {
        p = await pricing(this.ctx, [group.id])
        priced.set(group.id, p)
      }
      await this.checkAccount(login, time, p, account, group, held).catch((err: unknown) => {
        // looked at again on the next settle (and on every tick of its symbols until then)
        this.changed(login)
        this.ctx.logger.log('error', 'account check failed', {
          login,
          err: err instanceof Error ? err.message : String(err),
        })
      })
    }
  }

  private async checkAccount(
    login: number,
    time: number,
    p: Pricing,
    account: AccountRecord,
    group: GroupRecord,
    held: Holding[],
  ) {
    const band = (limits: BandLimits | null) =>
      this.riskBook.set(
        login,
        riskBands(
          held,
          (h) => {
            const gs = p.symbols(group.id, h.symbol)
            const raw = p.lookup(h.symbol)
            if (!gs || !raw) return null
            // a side at zero or below counts at one point: the account's other positions are still watched
            const q = valuedForGroup(raw, gs)
            const buy = isBuy(h.cmd)
            return {
              spec: gs.info,
              raw,
              close: buy ? q.bid : q.ask,
              open: buy ? q.ask : q.bid,
              marginDivider: gs.marginDivider,
            }
          },
          group.currency,
          p.lookup,
          limits,
        ),
      )
    const m = marginOf(p, account, group, held)
    // a quote or conversion rate is missing: looked at on every tick until it can be priced
    if (!m) return band(null)
    await this.marginCallNotice(account, group, m)
    if (m.margin > 0 && m.margin_level <= group.stopOut) {
      // its positions change: it is dirty again and looked at on the next settle
      await this.stopOut(login)
      return band(null)
    }
    const w = this.riskWatcher
    let fall = Number.POSITIVE_INFINITY
    this.riskUntil.delete(login)
    if (w?.watches(login)) {
      const equity = roundToMinor(m.equity, group.currency)
      const verdict = await w.check(login, { balance: account.balance, equity }, time)
      if (verdict === 'close') {
        // looked at on every tick until its positions are closed (a close-out that failed is tried again)
        band(null)
        // positions left at a stale price: 'close' again on a later tick (its watcher keeps answering it)
        const out = await this.closeOut(login, 'risk_limit')
        if (out.left === 0) w.closedOut(login, out.closed)
        return
      }
      // two minor units for the rounding of the floating profit and of the equity
      fall = fromMinor(verdict.headroom - 2, group.currency)
      this.riskUntil.set(login, verdict.until)
      if (verdict.until < this.riskNextUntil) this.riskNextUntil = verdict.until
    }
    // in a margin-call episode its recovery is looked for on every tick; otherwise the band keeps the
    // equity above the margin-call (and so the stop-out) share of the margin, with room for rounding
    if (this.marginCalled.has(login)) return band(null)
    band({
      equity: m.equity - fromMinor(2, group.currency),
      fall,
      marginRatio: (Math.max(group.marginCall, group.stopOut) / 100) * 1.0001,
      leverage: account.leverage,
    })
  }

  /**
   * Closes every open position of an account whose price is current (fillable), in one unit of work: how
   * many it closed, and how many are left for a later tick.
   */
  async closeOut(login: number, reason: 'risk_limit') {
    const ctx = this.ctx
    const account = await ctx.accountsRead.account(login)
    const group = account && (await ctx.accountsRead.group(account.groupId))
    if (!account || !group) return { closed: 0, left: 0 }
    const positions = await ctx.positions.open(login)
    const priced = await pricePositions(ctx, account, group, positions)
    if (!priced || priced.length === 0) return { closed: 0, left: positions.length }
    const fillable = priced.filter((p) => this.fillable(p))
    if (fillable.length === 0) return { closed: 0, left: priced.length }
    const lookup = await ctx.market.quoteLookup()
    const closed = await ctx.uow.run(async (tx, work) => {
      let n = 0
      for (const p of fillable) {
        const r = await closeTx(ctx.accounts, tx, work, {
          origin: ctx.origin,
          order: p.order,
          spec: p.gs.info,
          currency: group.currency,
          volume: p.order.volume,
          price: p.closePrice,
          reason,
          comment: `[${reason}]`,
          lookup,
          now: ctx.clock.now(),
        })
        if (r) {
          refreshAfterCommit(work, this.held.refreshes, r.closed)
          n++
        }
      }
      return n
    }, URGENT)
    this.held.stats.riskClosed += closed
    return { closed, left: priced.length - closed }
  }

  /**
   * Whether a position may be closed by risk at its symbol's price now (domain/checks.ts riskFillable):
   * no fill at a price this instance knows to be stale, a stop-out's no more than a client's.
   */
  private fillable(p: PricedPosition) {
    const quotes = this.ctx.quotes
    if (this.ctx.market.staleness()) return false
    const raw = quotes.peek(p.order.symbol)
    // nothing is closed at a group price of zero or below: that position waits, the others go first
    if (raw && !pricedForGroup(raw, p.gs)) return false
    const seen = raw ? quotes.seenAt(p.order.symbol, raw) : null
    return riskFillable(p.gs.info, seen, this.ctx.clock.now())
  }

  /**
   * Stop-out of one account: while its margin level is at or below its group's stop-out level, close the
   * position with the largest loss and re-check (MetaTrader's order).
   */
  private async stopOut(login: number) {
    const ctx = this.ctx
    for (let guard = 0; guard < 1000; guard++) {
      const account = await ctx.accountsRead.account(login)
      const group = account && (await ctx.accountsRead.group(account.groupId))
      if (!account || !group) break
      // The check prices holdings (one row per symbol); only an account at stop-out prices its positions.
      const m = marginOf(await pricing(ctx, [group.id]), account, group, this.held.of(login) ?? [])
      if (!m || m.margin <= 0 || m.margin_level > group.stopOut) break
      const priced = await pricePositions(ctx, account, group, await ctx.positions.open(login))
      // the largest loss among the positions whose price is current; with none, the next tick of one of
      // its symbols looks again (the account stays out of any price band until then)
      const fillable = priced?.filter((p) => this.fillable(p)) ?? []
      if (fillable.length === 0) break
      const worst = stopOutOrder(fillable.map((p) => ({ ...p, ticket: p.order.ticket })))[0]
      const lookup = await ctx.market.quoteLookup()
      const closed = await ctx.uow.run(async (tx, work) => {
        const r = await closeTx(ctx.accounts, tx, work, {
          origin: ctx.origin,
          order: worst.order,
          spec: worst.gs.info,
          currency: group.currency,
          volume: worst.order.volume,
          price: worst.closePrice,
          reason: 'stopout',
          comment: `[so: ${m.margin_level.toFixed(2)}%/${m.equity.toFixed(2)}/${m.margin.toFixed(2)}]`,
          lookup,
          now: ctx.clock.now(),
          marginLevel: m.margin_level,
        })
        if (r) refreshAfterCommit(work, this.held.refreshes, r.closed)
        return r
      }, URGENT)
      if (!closed) {
        await this.held.refresh(worst.order.ticket)
        break
      }
      this.held.stats.stoppedOut++
    }
  }

  /**
   * One margin-call notification per episode: written when the level first reaches the group's margin
   * call, again only after it has recovered above it. The episode's row is written with the notice, in one
   * transaction, and survives the engine role moving and the cache restarting.
   */
  private async marginCallNotice(
    account: { login: number; brandId: number },
    group: { marginCall: number; stopOut: number },
    m: { margin: number; margin_level: number },
  ) {
    const login = account.login
    if (m.margin <= 0 || m.margin_level > group.marginCall) {
      if (this.marginCalled.delete(login)) await this.endEpisode(login)
      return
    }
    if (this.marginCalled.has(login)) return
    this.marginCalled.add(login)
    const now = this.ctx.clock.now()
    // not written: the next look tries again
    const written = (async () => {
      await this.ending.get(login)
      if (this.unended.has(login)) {
        await this.endEpisode(login)
        if (this.unended.has(login)) throw new Error('the last episode could not be ended')
      }
      await this.ctx.uow.run(async (tx, work) => {
        // a row already there is an episode another engine notified (the role moving while it wrote)
        const [started] = await tx
          .insert(marginCallEpisodes)
          .values({ login, startedAt: now })
          .onConflictDoNothing()
          .returning({ login: marginCallEpisodes.login })
        if (!started) return
        work.emit(MarginCall, account.brandId, {
          login: account.login,
          margin_level: m.margin_level,
          margin_call: group.marginCall,
          stop_out: group.stopOut,
        })
      })
    })()
    await written.catch((e: unknown) => {
      this.marginCalled.delete(login)
      throw e
    })
  }
}
