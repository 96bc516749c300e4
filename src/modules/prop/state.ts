import { and, eq, inArray, sql } from 'drizzle-orm'
import type { Queryable, Tx } from '../../kernel/db/client'
import type { Work } from '../../kernel/db/unit-of-work'
import { fromMinor, roundToMinor } from '../accounts'
import type { PropCtx } from './context'
import { CHALLENGE, PHASE } from './domain/purchase'
import { type Breach, confirmBreach, localDay, PhaseRules } from './domain/rules'
import { PropBreached } from './events'
import { propBreaches, propChallenges, propDays, propPhases } from './schema'

export type PhaseRow = typeof propPhases.$inferSelect
export interface Figures {
  balance: number
  equity: number
}

const snapshotKey = (phaseId: number, day: string) => `prop:day:v1:${phaseId}:${day}`
const SNAPSHOT_TTL_MS = 3 * 86_400_000

/**
 * The day's start snapshot of a phase: created by the first pass of the program's local day (a tick on
 * the engine or the evaluator) as its `prop_days` row (insert or nothing; `now`: its start, dayStartOf), kept in the shared cache for the
 * engine's next ticks; whoever comes second, or a restarted evaluator, reads the row that exists.
 */
export async function daySnapshot(ctx: PropCtx, phaseId: number, day: string, now: Figures) {
  const cached = await ctx.store.get(snapshotKey(phaseId, day)).catch(() => null)
  if (cached) return JSON.parse(cached) as Figures
  return (await daySnapshots(ctx, [{ phaseId, day, now }])).figures.get(phaseId)!
}

/**
 * The last minutes of a local day: the figures a look or a pass sees then are remembered, and the next
 * day starts from the latest of them (`dayStartOf`), not from the figures of its own first look, which a
 * tick after midnight may have moved already.
 */
export const DAY_END_WINDOW_MS = 5 * 60_000

/** Figures seen at `at`, in the last minutes of the local day that ends at `end`, under `payouts` payouts. */
export interface SeenFigures extends Figures {
  at: number
  end: number
  payouts: number
}

/** What was seen of a phase at `at`, if the local day it falls on ends within DAY_END_WINDOW_MS (`end`). */
export function seenNearDayEnd(
  f: Figures,
  at: number,
  end: number,
  payouts: number,
): SeenFigures | undefined {
  return end - at <= DAY_END_WINDOW_MS
    ? { balance: f.balance, equity: f.equity, at, end, payouts }
    : undefined
}

/**
 * The start figures of local day `day` for a row made now: the latest figures seen in the last minutes
 * before its midnight (the day before's end; none from before a payout made since, which moved the
 * anchors), else the figures now. A loss on the day's first tick thus counts against the day, measured
 * from the midnight level (FTMO's daily loss), wherever the row is made (the engine's look or a pass).
 */
export function dayStartOf(
  day: string,
  zone: string,
  now: Figures,
  payouts: number,
  ...seen: (SeenFigures | null | undefined)[]
): Figures {
  let best: SeenFigures | undefined
  for (const s of seen)
    if (s && s.payouts === payouts && localDay(s.end, zone) === day && (!best || s.at > best.at)) best = s
  return best ? { balance: best.balance, equity: best.equity } : now
}

const dayEndKey = (phaseId: number) => `prop:eod:v1:${phaseId}`

/** The evaluator's figures near the day's end, for the engine's watch (which may run elsewhere). */
export async function rememberDayEnds(ctx: PropCtx, seen: ReadonlyMap<number, SeenFigures>) {
  if (seen.size === 0) return
  const entries: [string, string][] = []
  for (const [id, s] of seen) entries.push([dayEndKey(id), JSON.stringify(s)])
  await ctx.store.setMany(entries, 86_400_000).catch(() => {})
}

/** What passes saw of many phases near their latest day's end, by phase (none: nothing, or the cache is away). */
export async function daysEndSeen(ctx: PropCtx, phaseIds: number[]) {
  const out = new Map<number, SeenFigures>()
  if (phaseIds.length === 0) return out
  const raw = await ctx.store.getMany(phaseIds.map(dayEndKey)).catch(() => [])
  phaseIds.forEach((id, i) => {
    const v = raw[i]
    if (v) out.set(id, JSON.parse(v) as SeenFigures)
  })
  return out
}

/** Drops a day's cached snapshot (a payout moved its row): the next reader takes the row's. */
export async function forgetSnapshot(ctx: PropCtx, phaseId: number, day: string) {
  await ctx.store.del(snapshotKey(phaseId, day)).catch(() => {})
}

/** A phase's day snapshot the evaluator or a tick wants: its row's start figures and the day's activity. */
export interface WantedDay {
  phaseId: number
  day: string
  now: Figures
  positionsOpened?: number
  tradingDay?: number
}

/** The day snapshots that hold: each phase's start figures, and its day's row as it is now. */
export interface Snapshots {
  figures: Map<number, Figures>
  written: Map<number, { minEquity: number; positionsOpened: number; tradingDay: number }>
}

/**
 * `daySnapshot` for many phases at once: one statement inserts every phase's row its day does not have
 * yet (`insertDays`). When it inserted them all (the usual case), the rows are what the caller sent
 * (`assumedSnapshots`); when another writer got some first, every phase's row is read back
 * (`storedSnapshots`: the durable rows decide). The cache then holds what the rows say.
 */
export async function daySnapshots(ctx: PropCtx, wanted: WantedDay[]): Promise<Snapshots> {
  const created = await insertDays(ctx.db, wanted, ctx.clock.now())
  const snaps = created === wanted.length ? assumedSnapshots(wanted) : await storedSnapshots(ctx.db, wanted)
  await cacheSnapshots(ctx, wanted, snaps.figures)
  return snaps
}

/**
 * Inserts each phase's row of its day, with the day's activity the caller knows (positions opened, a
 * trading day), unless the row exists: the number of rows written. `settled` only from the evaluator's
 * transaction that settles the days before (schema.ts). The statement returns nothing: `returning` 2,000
 * ids cost a quarter of it on this driver.
 */
export async function insertDays(q: Queryable, wanted: WantedDay[], createdAt: number, settled = false) {
  if (wanted.length === 0) return 0
  const rows = JSON.stringify(
    wanted.map((w) => [
      w.phaseId,
      w.day,
      w.now.balance,
      w.now.equity,
      w.positionsOpened ?? 0,
      w.tradingDay ?? 0,
    ]),
  )
  const created = await q.execute({
    // `where true`: SQLite's parser needs it between a SELECT and ON CONFLICT
    sql: `insert into prop_days (phase_id, day, start_balance, start_equity, min_equity, positions_opened,
        trading_day, settled, created_at)
      select value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 3, value ->> 4, value ->> 5, ?, ?
      from json_each(?) where true
      on conflict do nothing`,
    args: [settled ? 1 : 0, createdAt, rows],
  })
  return created.rowsAffected
}

/** The snapshots as `insertDays` writes them: what holds once it wrote every row. */
export function assumedSnapshots(wanted: WantedDay[]): Snapshots {
  const out: Snapshots = { figures: new Map(), written: new Map() }
  for (const w of wanted) {
    out.figures.set(w.phaseId, w.now)
    out.written.set(w.phaseId, {
      minEquity: w.now.equity,
      positionsOpened: w.positionsOpened ?? 0,
      tradingDay: w.tradingDay ?? 0,
    })
  }
  return out
}

/** The snapshots as the phases' rows of their days hold them (another writer made some of them first). */
export async function storedSnapshots(q: Queryable, wanted: WantedDay[]): Promise<Snapshots> {
  const out: Snapshots = { figures: new Map(), written: new Map() }
  if (wanted.length === 0) return out
  const days = new Map(wanted.map((w) => [w.phaseId, w.day]))
  const stored = await q
    .select({
      phaseId: propDays.phaseId,
      day: propDays.day,
      balance: propDays.startBalance,
      equity: propDays.startEquity,
      minEquity: propDays.minEquity,
      positionsOpened: propDays.positionsOpened,
      tradingDay: propDays.tradingDay,
    })
    .from(propDays)
    .where(
      and(
        sql`${propDays.phaseId} in (select value from json_each(${JSON.stringify([...days.keys()])}))`,
        inArray(propDays.day, [...new Set(days.values())]),
      ),
    )
  for (const r of stored)
    if (days.get(r.phaseId) === r.day) {
      out.figures.set(r.phaseId, { balance: r.balance, equity: r.equity })
      out.written.set(r.phaseId, {
        minEquity: r.minEquity,
        positionsOpened: r.positionsOpened,
        tradingDay: r.tradingDay,
      })
    }
  return out
}

/** The engine's next ticks read the day's start from the shared cache (after the rows have committed). */
export async function cacheSnapshots(ctx: PropCtx, wanted: WantedDay[], figures: Map<number, Figures>) {
  const entries: [string, string][] = []
  for (const w of wanted) {
    const truth = figures.get(w.phaseId)
    if (truth) entries.push([snapshotKey(w.phaseId, w.day), JSON.stringify(truth)])
  }
  if (entries.length) await ctx.store.setMany(entries, SNAPSHOT_TTL_MS).catch(() => {})
}

/** Balance and equity of an account now (minor units), floating profit included; null without a price. */
export async function figuresOf(ctx: PropCtx, login: number): Promise<Figures | null> {
  const account = await ctx.accounts.read.account(login)
  const group = account && (await ctx.accounts.read.group(account.groupId))
  if (!account || !group) return null
  try {
    const m = await ctx.accounts.requireMargin({ account, group })
    return { balance: account.balance, equity: roundToMinor(m.equity, group.currency) }
  } catch {
    return null
  }
}

/**
 * What became of a breach: `recorded`; `recorded_before` (another writer's breach ended the phase);
 * `inactive` (the phase is no longer active: it passed or was cancelled, so no breach is recorded);
 * `stale` (its anchor moved since the equity was compared, a payout, and the limit is not reached).
 */
export type BreachOutcome = 'recorded' | 'recorded_before' | 'inactive' | 'stale'

/** Rolls a breach's transaction back, with the outcome to answer. */
class NoBreach extends Error {
  constructor(readonly outcome: 'inactive' | 'stale') {
    super(outcome)
  }
}

/**
 * Ends a phase on a breach, once: the breach row (unique per phase) decides who records it; then the phase
 * (still active) and the challenge (on that phase still) fail, trading is disabled on the account, and
 * `prop.breached` is emitted, all in one transaction. A loss limit is judged again there, against its
 * anchor as the rows hold it then. The engine closes the positions right after (or on its next look,
 * after a crash).
 */
export async function recordBreach(
  ctx: PropCtx,
  phase: Pick<
    PhaseRow,
    'id' | 'brandId' | 'challengeId' | 'accountLogin' | 'phaseIndex' | 'currency' | 'timeZone' | 'rules'
  >,
  found: Breach,
  figures: Figures,
  tickTime: number,
  /** Runs first in the breach's transaction (the phase's warnings not written yet). */
  before?: (tx: Tx, work: Work) => Promise<void>,
): Promise<BreachOutcome> {
  try {
    return await ctx.uow.run(async (tx, work) => {
      await before?.(tx, work)
      const now = ctx.clock.now()
      const held = await anchorsNow(tx, phase, tickTime)
      // a failed phase has its breach; one that passed meanwhile keeps its pass, and its challenge goes
      // on with the next phase
      if (held.status === PHASE.failed) return 'recorded_before'
      if (held.status !== PHASE.active) throw new NoBreach('inactive')
      const breach = confirmBreach(PhaseRules.parse(JSON.parse(phase.rules)), found, held)
      if (!breach) throw new NoBreach('stale')
      const [b] = await tx
        .insert(propBreaches)
        .values({
          brandId: phase.brandId,
          phaseId: phase.id,
          challengeId: phase.challengeId,
          rule: breach.rule,
          limitValue: breach.limit,
          anchor: breach.anchor,
          observed: breach.observed,
          tickTime,
          detectedAt: now,
        })
        .onConflictDoNothing()
        .returning({ id: propBreaches.id })
      if (!b) return 'recorded_before'
      const [failed] = await tx
        .update(propPhases)
        .set({
          status: PHASE.failed,
          finalBalance: figures.balance,
          finalEquity: figures.equity,
          endTime: now,
          updatedAt: now,
        })
        .where(and(eq(propPhases.id, phase.id), eq(propPhases.status, PHASE.active)))
        .returning({ id: propPhases.id })
      if (!failed) throw new NoBreach('inactive')
      await tx
        .update(propChallenges)
        .set({ status: CHALLENGE.failed, endTime: now, updatedAt: now })
        .where(
          and(
            eq(propChallenges.id, phase.challengeId),
            eq(propChallenges.status, CHALLENGE.active),
            eq(propChallenges.currentPhaseIndex, phase.phaseIndex),
          ),
        )
      await ctx.accounts.setReadOnlyTx(
        tx,
        work,
        phase.brandId,
        phase.accountLogin,
        `challenge ${phase.challengeId} failed: phase ${phase.phaseIndex} breached its ${breach.rule} limit (breach ${b.id})`,
      )
      const money = (x: number) => fromMinor(x, phase.currency)
      work.emit(PropBreached, phase.brandId, {
        login: phase.accountLogin,
        challenge_id: phase.challengeId,
        phase_id: phase.id,
        phase_index: phase.phaseIndex,
        currency: phase.currency,
        rule: breach.rule,
        limit: breach.rule === 'max_trading_days' ? breach.limit : money(breach.limit),
        anchor: money(breach.anchor),
        observed: money(breach.observed),
      })
      return 'recorded' as const
    })
  } catch (e) {
    if (e instanceof NoBreach) return e.outcome
    throw e
  }
}

/**
 * A phase's status and the anchors of its loss limits as its rows hold them in `tx` (a write transaction:
 * no writer moves them before it ends): the day's start is null without a row of the day.
 */
async function anchorsNow(tx: Tx, phase: Pick<PhaseRow, 'id' | 'timeZone'>, tickTime: number) {
  const [held] = await tx
    .select({
      status: propPhases.status,
      initialBalance: propPhases.initialBalance,
      highestEodBalance: propPhases.highestEodBalance,
    })
    .from(propPhases)
    .where(eq(propPhases.id, phase.id))
  const [day] = await tx
    .select({ startEquity: propDays.startEquity })
    .from(propDays)
    .where(and(eq(propDays.phaseId, phase.id), eq(propDays.day, localDay(tickTime, phase.timeZone))))
  if (!held) throw new NoBreach('inactive')
  return { ...held, dayStartEquity: day?.startEquity ?? null }
}
