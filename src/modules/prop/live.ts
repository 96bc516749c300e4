import { and, eq, gte, inArray } from 'drizzle-orm'
import { z } from 'zod'
import { defineChannel } from '../../kernel/bus/channel'
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
import { daySnapshot, type Figures, type PhaseRow, recordBreach } from './state'

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
  /** The phase failed: its positions are closed on every look until there are none. */
  closing: boolean
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

  constructor(private readonly ctx: PropCtx) {}

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
  }

  /** Every active phase (this instance took the engine role). */
  async load() {
    this.reset()
    const rows = await this.ctx.db.select().from(propPhases).where(eq(propPhases.status, PHASE.active))
    for (const r of rows) this.watch(r)
    // phases failed in the last day: a crash between the breach and the close-out left positions open
    const since = this.ctx.clock.now() - 86_400_000
    const failed = await this.ctx.db
      .select()
      .from(propPhases)
      .where(and(eq(propPhases.status, PHASE.failed), gte(propPhases.endTime, since)))
    for (const r of failed) {
      this.watch(r)
      this.byLogin.get(r.accountLogin)!.closing = true
    }
  }

  /** Phases another instance changed (bus entries of PHASES_CHANGED). */
  async reload(ids: number[]) {
    if (ids.length === 0) return
    const rows = await this.ctx.db.select().from(propPhases).where(inArray(propPhases.id, ids))
    for (const r of rows)
      if (r.status === PHASE.active) this.watch(r)
      else if (this.byLogin.get(r.accountLogin)?.closing !== true) {
        this.byLogin.delete(r.accountLogin)
        this.recheck(r.accountLogin)
      }
  }

  private watch(phase: PhaseRow) {
    const known = this.byLogin.get(phase.accountLogin)
    this.byLogin.set(phase.accountLogin, {
      phase,
      rules: Rules.parse(JSON.parse(phase.rules)),
      day: known?.day ?? '',
      dayStartEquity: known?.dayStartEquity ?? phase.initialEquity,
      warned: known?.warned ?? new Set(),
      closing: false,
    })
    this.recheck(phase.accountLogin)
  }

  async check(login: number, figures: Figures, tickTime: number): Promise<'close' | RiskRoom> {
    const w = this.byLogin.get(login)
    if (!w) return { headroom: Number.POSITIVE_INFINITY, until: Number.POSITIVE_INFINITY }
    if (w.closing) return 'close'
    const day = localDay(tickTime, w.phase.timeZone)
    if (day !== w.day) {
      const snap = await daySnapshot(this.ctx, w.phase.id, day, figures)
      w.day = day
      w.dayStartEquity = snap.equity
      w.warned.clear()
    }
    const s = this.stateOf(w, figures)
    const breach = lossBreach(w.rules, s)
    if (!breach) {
      await this.warn(w, s)
      return {
        headroom: headroom(w.rules, s, (rule, level) => w.warned.has(`${rule}:${level}`)),
        until: this.dayEnd(w.phase.timeZone, day, tickTime),
      }
    }
    await recordBreach(this.ctx, w.phase, breach, figures, tickTime)
    w.closing = true
    return 'close'
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

  /** Warnings of the levels reached, once per phase, day, rule and level (a primary key decides). */
  private async warn(w: Watched, s: PhaseState) {
    const due = warningsDue(w.rules, s).filter((x) => !w.warned.has(`${x.rule}:${x.level}`))
    if (due.length === 0) return
    const used = usedPct(w.rules, s)
    await this.ctx.uow.run(async (tx, work) => {
      for (const x of due) {
        w.warned.add(`${x.rule}:${x.level}`)
        const [row] = await tx
          .insert(propWarnings)
          .values({
            phaseId: w.phase.id,
            day: w.day,
            rule: x.rule,
            level: x.level,
            createdAt: this.ctx.clock.now(),
          })
          .onConflictDoNothing()
          .returning({ level: propWarnings.level })
        if (row)
          work.emit(PropWarning, w.phase.brandId, {
            login: w.phase.accountLogin,
            challenge_id: w.phase.challengeId,
            phase_id: w.phase.id,
            phase_index: w.phase.phaseIndex,
            currency: w.phase.currency,
            rule: x.rule,
            level: x.level,
            used_pct: Math.round(used[x.rule] * 10) / 10,
          })
      }
    })
  }
}
