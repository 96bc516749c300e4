import { and, eq, gte, inArray } from 'drizzle-orm'
import { z } from 'zod'
import { defineChannel } from '../../kernel/bus/channel'
import type { Tx } from '../../kernel/db/client'
import type { Work } from '../../kernel/db/unit-of-work'
import type { RiskRoom, RiskWatcher } from '../trading'
import type { PropCtx } from './context'
import { PHASE } from './domain/purchase'
import {
  headroom,
  localDay,
  lossBreach,
  nextDayStart,
  type PhaseRules,
  type PhaseState,
  PhaseRules as Rules,
  usedPct,
  warningsDue,
} from './domain/rules'
import { PropWarning } from './events'
import { propPhases, propWarnings } from './schema'
import {
  daySnapshot,
  dayStartOf,
  daysEndSeen,
  type Figures,
  type PhaseRow,
  recordBreach,
  type SeenFigures,
  seenNearDayEnd,
  storedSnapshots,
  type WantedDay,
} from './state'

/** Bus entries naming phases whose state changed (a purchase, a passed or failed phase). */
export const PHASES_CHANGED = defineChannel('prop.phases-changed', z.array(z.number().int()))

interface Watched {
  phase: PhaseRow
  rules: PhaseRules
  /** The local day of the snapshot held, and its start equity. */
  day: string
  dayStartEquity: number
  /** Warnings sent today (`rule:level`), so a tick does not ask the database again. */
  warned: Set<string>
  /** The figures of the latest look in the last minutes of its day: the next day's start (dayStartOf). */
  seen?: SeenFigures
  /** The phase failed: its positions are closed on every look until there are none. */
  closing: boolean
}

/** A warning level reached on a look, waiting for the flush that writes it. */
interface DueWarning {
  w: Watched
  day: string
  rule: 'daily_loss' | 'total_loss'
  level: number
  usedPct: number
}

/**
 * A failed phase's positions are looked for this long after it failed (an engine's takeover, and its
 * periodic pass): an account made read-only takes no new position, and the close-out of those it held
 * waits for fillable prices (a weekend's closed market, a feed cut off).
 */
export const CLOSE_OUT_WINDOW_MS = 7 * 86_400_000

/** The logins among these that hold open positions now. */
export type Holding = (logins: number[]) => Promise<Set<number>>

/** Rows per insert: five values each, well under SQLite's limit of bound values. */
const WARNINGS_PER_INSERT = 1000

/** Phases read by id in one statement (well under SQLite's limit of bound values). */
const ROWS_PER_READ = 1000

/**
 * The phases failed since `since` (ms), id and login: a range of the index on (status, end time, login),
 * read from the index alone (most challenges fail: every failed phase ever would be a scan).
 */
export const failedSince = (db: PropCtx['db'], since: number) =>
  db
    .select({ id: propPhases.id, login: propPhases.accountLogin })
    .from(propPhases)
    .where(and(eq(propPhases.status, PHASE.failed), gte(propPhases.endTime, since)))

/** Inserts the warnings; each one its primary key did not already hold is emitted as PropWarning. */
async function writeWarnings(ctx: PropCtx, tx: Tx, work: Work, due: readonly DueWarning[]) {
  const now = ctx.clock.now()
  for (let at = 0; at < due.length; at += WARNINGS_PER_INSERT) {
    const chunk = due.slice(at, at + WARNINGS_PER_INSERT)
    const written = await tx
      .insert(propWarnings)
      .values(
        chunk.map((d) => ({
          phaseId: d.w.phase.id,
          day: d.day,
          rule: d.rule,
          level: d.level,
          createdAt: now,
        })),
      )
      .onConflictDoNothing()
      .returning({
        phaseId: propWarnings.phaseId,
        day: propWarnings.day,
        rule: propWarnings.rule,
        level: propWarnings.level,
      })
    const fresh = new Set(written.map((r) => `${r.phaseId}:${r.day}:${r.rule}:${r.level}`))
    for (const d of chunk) {
      const p = d.w.phase
      if (!fresh.has(`${p.id}:${d.day}:${d.rule}:${d.level}`)) continue
      work.emit(PropWarning, p.brandId, {
        login: p.accountLogin,
        challenge_id: p.challengeId,
        phase_id: p.id,
        phase_index: p.phaseIndex,
        currency: p.currency,
        rule: d.rule,
        level: d.level,
        used_pct: d.usedPct,
      })
    }
  }
}

/**
 * The engine's watch of active phase accounts (trading's RiskWatcher): on every tick that moves one of
 * their positions, the equity is checked against the phase's loss limits, at that quote. A breach is
 * recorded before the answer `close`, so positions are closed only once it is durable.
 */
export class PropWatch implements RiskWatcher {
  private readonly byLogin = new Map<number, Watched>()
  private recheck: (login: number) => void = () => {}
  /** The end of the local day each zone is in, so a look does not search for midnight again. */
  private readonly dayEnds = new Map<string, { day: string; end: number }>()
  private pending: DueWarning[] = []
  private flushing: Promise<void> | null = null
  /**
   * Failed phases (ids) within CLOSE_OUT_WINDOW_MS this engine found without open positions: the periodic
   * pass does not ask trading about them again. Their accounts are read-only: trading opens nothing there,
   * and a pending order that reaches its price is cancelled (`trade_disabled`), not filled. Forgotten when
   * they leave the window, and on a takeover (`load` asks about every one once).
   */
  private readonly emptyFailed = new Set<number>()

  /**
   * `holding`: the logins that hold open positions now (trading's port); without it every login counts as
   * holding some (a failed phase is then watched until the engine has closed it out).
   */
  constructor(
    private readonly ctx: PropCtx,
    private readonly holding: Holding = async (logins) => new Set(logins),
  ) {}

  watches(login: number) {
    return this.byLogin.has(login)
  }

  listen(recheck: (login: number) => void) {
    this.recheck = recheck
  }

  get size() {
    return this.byLogin.size
  }

  reset() {
    this.byLogin.clear()
    this.emptyFailed.clear()
  }

  /** Every active phase, and the failed ones with positions left (this instance took the engine role). */
  async load() {
    this.reset()
    const rows = await this.ctx.db.select().from(propPhases).where(eq(propPhases.status, PHASE.active))
    for (const r of rows) this.watch(r)
    // a crash (or a lost PHASES_CHANGED) between a breach and its close-out left positions open
    await this.closeOutFailed()
  }

  /**
   * The engine's periodic pass (job `prop.closeouts`): every phase failed within CLOSE_OUT_WINDOW_MS
   * whose account still holds positions is closed out, whoever failed it (the watch, or the evaluator
   * whose PHASES_CHANGED never came); a failed phase watched for its close-out whose account holds none
   * any more (closed meanwhile) stops being watched. It reads the window's ids and logins from an index
   * (`prop_phases_status_end`), asks trading only about the phases not yet found without positions
   * (`emptyFailed`), and reads whole rows only of those it closes out.
   */
  async closeOutFailed() {
    const failed = await failedSince(this.ctx.db, this.ctx.clock.now() - CLOSE_OUT_WINDOW_MS)
    const inWindow = new Set(failed.map((r) => r.id))
    for (const id of this.emptyFailed) if (!inWindow.has(id)) this.emptyFailed.delete(id)
    const unknown = failed.filter((r) => !this.emptyFailed.has(r.id))
    const closing = [...this.byLogin].filter(([, w]) => w.closing).map(([login]) => login)
    const logins = [...new Set([...unknown.map((r) => r.login), ...closing])]
    const holding = logins.length ? await this.holding(logins) : new Set<number>()
    for (const login of closing) if (!holding.has(login)) this.byLogin.delete(login)
    const held: number[] = []
    for (const r of unknown) {
      if (!holding.has(r.login)) this.emptyFailed.add(r.id)
      else if (!this.byLogin.get(r.login)?.closing) held.push(r.id)
    }
    for (let at = 0; at < held.length; at += ROWS_PER_READ) {
      const rows = await this.ctx.db
        .select()
        .from(propPhases)
        .where(inArray(propPhases.id, held.slice(at, at + ROWS_PER_READ)))
      for (const r of rows) if (r.status === PHASE.failed) this.closeOut(r)
    }
  }

  /**
   * Phases another instance changed (bus entries of PHASES_CHANGED): each is read again, with the start of
   * the day it is watched on (a payout moved it). A failed one is closed out if its account holds positions
   * (the evaluator failed it: a time limit, a loss it found), as the watch's own breach is; a passed or
   * cancelled one stops being watched.
   */
  async reload(ids: number[]) {
    if (ids.length === 0) return
    const rows = await this.ctx.db.select().from(propPhases).where(inArray(propPhases.id, ids))
    const watchedDays: WantedDay[] = []
    for (const r of rows) {
      const day = r.status === PHASE.active ? this.byLogin.get(r.accountLogin)?.day : undefined
      if (day) watchedDays.push({ phaseId: r.id, day, now: { balance: 0, equity: 0 } })
    }
    const starts = (await storedSnapshots(this.ctx.db, watchedDays)).figures
    const days = new Map(watchedDays.map((w) => [w.phaseId, w.day]))
    const failed = rows.filter((r) => r.status === PHASE.failed)
    const holding = failed.length ? await this.holding(failed.map((r) => r.accountLogin)) : new Set<number>()
    for (const r of rows)
      if (r.status === PHASE.active) {
        const day = days.get(r.id)
        const start = starts.get(r.id)
        this.watch(r, day !== undefined && start ? { day, equity: start.equity } : undefined)
      } else if (r.status === PHASE.failed && holding.has(r.accountLogin)) this.closeOut(r)
      else if (this.byLogin.get(r.accountLogin)?.closing !== true) {
        this.byLogin.delete(r.accountLogin)
        this.recheck(r.accountLogin)
      }
  }

  /**
   * A failed phase's positions are closed on the engine's next look at its account (`check` answers
   * `close` until there are none). Its breach is recorded already, once (the breach row's key and the
   * phase's conditional update): closing it again is only the engine's close-out, of the positions open.
   */
  private closeOut(phase: PhaseRow) {
    if (!this.byLogin.get(phase.accountLogin)?.closing) this.watch(phase, undefined, true)
  }

  /**
   * `start`: the start of the day it was watched on, as its row held it when read. Taken only if the watch
   * is still on that day: a look that crossed midnight meanwhile holds the new day's start.
   */
  private watch(phase: PhaseRow, start?: { day: string; equity: number }, closing = false) {
    const known = this.byLogin.get(phase.accountLogin)
    this.byLogin.set(phase.accountLogin, {
      phase,
      rules: Rules.parse(JSON.parse(phase.rules)),
      day: known?.day ?? '',
      dayStartEquity:
        start && known?.day === start.day ? start.equity : (known?.dayStartEquity ?? phase.initialEquity),
      warned: known?.warned ?? new Set(),
      seen: known?.seen,
      closing,
    })
    this.recheck(phase.accountLogin)
  }

  async check(login: number, figures: Figures, tickTime: number, again = false): Promise<'close' | RiskRoom> {
    const w = this.byLogin.get(login)
    if (!w) return { headroom: Number.POSITIVE_INFINITY, until: Number.POSITIVE_INFINITY }
    if (w.closing) return 'close'
    const day = localDay(tickTime, w.phase.timeZone)
    if (day !== w.day) {
      // a row made now starts from the figures seen just before midnight (this watch's latest look, or the
      // evaluator's latest pass), not from this look's, which the day's first tick may have moved
      const p = w.phase
      const start = dayStartOf(
        day,
        p.timeZone,
        figures,
        p.payoutCount,
        w.seen,
        (await daysEndSeen(this.ctx, [p.id])).get(p.id),
      )
      const snap = await daySnapshot(this.ctx, p.id, day, start)
      w.day = day
      w.dayStartEquity = snap.equity
      w.warned.clear()
    }
    const until = this.dayEnd(w.phase.timeZone, day, tickTime)
    w.seen = seenNearDayEnd(figures, tickTime, until, w.phase.payoutCount) ?? w.seen
    const s = this.stateOf(w, figures)
    const breach = lossBreach(w.rules, s)
    if (!breach) {
      this.warn(w, s)
      return {
        headroom: headroom(w.rules, s, (rule, level) => w.warned.has(`${rule}:${level}`)),
        until,
      }
    }
    // its warnings not written yet go first, in the breach's transaction (queued again if it fails)
    const warned = this.takePending(w)
    let outcome: Awaited<ReturnType<typeof recordBreach>>
    try {
      outcome = await recordBreach(this.ctx, w.phase, breach, figures, tickTime, (tx, work) =>
        writeWarnings(this.ctx, tx, work, warned),
      )
    } catch (e) {
      this.pending.push(...warned)
      if (warned.length) this.scheduleFlush()
      throw e
    }
    if (outcome === 'recorded' || outcome === 'recorded_before') {
      w.closing = true
      return 'close'
    }
    // rolled back with its warnings: they were reached against the anchors no longer held (or the phase
    // is over), and are sent again when a look reaches them
    for (const d of warned) w.warned.delete(`${d.rule}:${d.level}`)
    // the phase passed (its pass made the account read-only), or its anchors moved (a payout whose
    // PHASES_CHANGED has not come yet): it is read again, and looked at once more
    await this.reload([w.phase.id])
    if (outcome === 'inactive' || again) return { headroom: 0, until: tickTime }
    return this.check(login, figures, tickTime, true)
  }

  private dayEnd(zone: string, day: string, at: number) {
    const known = this.dayEnds.get(zone)
    if (known?.day === day) return known.end
    const end = nextDayStart(at, zone)
    this.dayEnds.set(zone, { day, end })
    return end
  }

  /** The engine closed a failed phase's positions: it stops being watched. */
  closedOut(login: number) {
    if (this.byLogin.get(login)?.closing) this.byLogin.delete(login)
  }

  private stateOf(w: Watched, f: Figures): PhaseState {
    return {
      initialBalance: w.phase.initialBalance,
      balance: f.balance,
      equity: f.equity,
      dayStartEquity: w.dayStartEquity,
      highestEodBalance: w.phase.highestEodBalance,
      openPositions: 1,
      tradingDays: w.phase.tradingDays,
      daysElapsed: 1,
    }
  }

  /**
   * Warnings of the levels reached, once per phase, day, rule and level (a primary key decides). They are
   * marked sent at once (the headroom answered now counts them) and written by the next flush, with the
   * other looks' warnings of the pass: a tick that brings hundreds of accounts to a level together wrote
   * a transaction per account before the next account, a breach among them, was looked at.
   */
  private warn(w: Watched, s: PhaseState) {
    const due = warningsDue(w.rules, s).filter((x) => !w.warned.has(`${x.rule}:${x.level}`))
    if (due.length === 0) return
    const used = usedPct(w.rules, s)
    for (const x of due) {
      w.warned.add(`${x.rule}:${x.level}`)
      this.pending.push({ w, day: w.day, ...x, usedPct: Math.round(used[x.rule] * 10) / 10 })
    }
    this.scheduleFlush()
  }

  /** The warnings of one phase not written yet, taken out of the queue (its breach writes them first). */
  private takePending(w: Watched) {
    // by phase: a reload replaces the watched entry (it keeps what was warned)
    const mine = this.pending.filter((d) => d.w.phase.id === w.phase.id)
    if (mine.length) this.pending = this.pending.filter((d) => d.w.phase.id !== w.phase.id)
    return mine
  }

  /** One flush at a time, after the current pass; what queues meanwhile goes with the next. */
  private scheduleFlush() {
    if (this.flushing) return
    this.flushing = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.flush())
      .finally(() => {
        this.flushing = null
        if (this.pending.length) this.scheduleFlush()
      })
  }

  /** Writes the queued warnings, or forgets that they were sent so that a later look tries again. */
  private async flush() {
    const batch = this.pending
    this.pending = []
    // a breach may have taken them all
    if (batch.length === 0) return
    try {
      await this.ctx.uow.run((tx, work) => writeWarnings(this.ctx, tx, work, batch))
    } catch (e) {
      // the bands counted them as sent: each account is looked at again, and warned then
      for (const d of batch) {
        d.w.warned.delete(`${d.rule}:${d.level}`)
        this.recheck(d.w.phase.accountLogin)
      }
      this.ctx.logger.log('error', 'prop warnings not written', {
        count: batch.length,
        err: e instanceof Error ? e.message : String(e),
      })
    }
  }
}
