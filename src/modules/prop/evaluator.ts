import { and, eq, inArray, sql } from 'drizzle-orm'
import { publishChange } from '../../kernel/bus/channel'
import type { Tx } from '../../kernel/db/client'
import { jsonRows } from '../../kernel/db/json-rows'
import type { Work } from '../../kernel/db/unit-of-work'
import { fromMinor, marginSnapshot, roundToMinor } from '../accounts'
import type { TradingApi } from '../trading'
import type { PropCtx } from './context'
import { FUNDED, ProgramStep } from './domain/program'
import { CHALLENGE, PHASE } from './domain/purchase'
import {
  dayNumber,
  daysInclusive,
  localDay,
  nextDayStart,
  type PhaseRules,
  type PhaseState,
  PhaseRules as Rules,
  verdict,
} from './domain/rules'
import { countTradingDays, RECENT_WINDOW_MS, recountDue } from './domain/trading-days'
import { PropPhasePassed } from './events'
import { PHASES_CHANGED } from './live'
import { propChallenges, type propDays, propPhases, propPrograms, propPurchases } from './schema'
import {
  assumedSnapshots,
  cacheSnapshots,
  dayStartOf,
  daysEndSeen,
  type Figures,
  insertDays,
  type PhaseRow,
  recordBreach,
  rememberDayEnds,
  type SeenFigures,
  type Snapshots,
  seenNearDayEnd,
  storedSnapshots,
  type WantedDay,
} from './state'

/** What a pass reads of a phase's latest day, and of the days it settles. */
type DayRow = Pick<
  typeof propDays.$inferSelect,
  | 'phaseId'
  | 'day'
  | 'startBalance'
  | 'startEquity'
  | 'minEquity'
  | 'positionsOpened'
  | 'tradingDay'
  | 'settled'
> & {
  /**
   * 1: a payout of the phase was made since the row was (SINCE_SETTLED): its start, the day before's end,
   * is from before the payout, which moved the highest end-of-day balance but not it.
   */
  paidSince: number
}

type DayOf = (ms: number, zone: string) => string

interface Activity {
  /** Local days with a position opened (or opened or closed, per the rules). */
  traded: Set<string>
  openedToday: number
  openPositions: number
  /** Positions opened on each of the `ending` days seen. */
  openedOn: Map<string, number>
}

/**
 * A phase's trading days, positions opened today and positions still open, in one walk of its positions;
 * and the positions opened on each of the days the pass ends (`ending`), whose rows get the day's last
 * positions (opened after the day's last pass).
 */
function activityOf(
  rules: PhaseRules,
  zone: string,
  today: string,
  since: number,
  positions: { openTime: number; closeTime: number }[],
  dayOf: DayOf,
  ending: readonly string[],
): Activity {
  const traded = new Set<string>()
  const openedOn = new Map<string, number>()
  let openedToday = 0
  let openPositions = 0
  for (const p of positions) {
    const opened = dayOf(p.openTime, zone)
    traded.add(opened)
    if (p.openTime >= since && opened === today) openedToday++
    else if (ending.length > 0 && ending.includes(opened))
      openedOn.set(opened, (openedOn.get(opened) ?? 0) + 1)
    if (p.closeTime === 0) openPositions++
    else if (rules.trading_day === 'any_trade') traded.add(dayOf(p.closeTime, zone))
  }
  return { traded, openedToday, openPositions, openedOn }
}

const QUARTER_HOUR = 900_000

/**
 * `localDay` for a pass: every zone's offset is a whole number of quarter hours (a program's zone is an
 * IANA name: domain/rules.ts isZone refuses an offset such as +05:07), so a local day starts on
 * a quarter hour of UTC and all instants of one quarter hour share their local day (Intl's formatting
 * costs microseconds, and a pass asks it twice per position). Keyed by number within each zone: a text
 * key built per call cost more than the lookup.
 */
function daysOfPass(): DayOf {
  const zones = new Map<string, Map<number, string>>()
  return (ms, zone) => {
    let seen = zones.get(zone)
    if (!seen) {
      seen = new Map()
      zones.set(zone, seen)
    }
    const q = Math.floor(ms / QUARTER_HOUR)
    let day = seen.get(q)
    if (day === undefined) {
      day = localDay(ms, zone)
      seen.set(q, day)
    }
    return day
  }
}

/**
 * One evaluator pass over every active phase (the `prop.evaluate` job and `POST /cron/prop.evaluate`),
 * in a few statements for all of them: the phases, their accounts' balance and equity, their positions
 * (the recent ones, or every one since the phase began: positionsOfPass), their latest day rows (and the
 * days not settled yet); then one transaction per 2,000 phases with the day's snapshots of the phases that
 * have none yet and what changed (the days before today settled, the highest end-of-day balance, today's
 * minimum equity, positions opened, trading days).
 * Verdicts follow, each phase on its own: a loss limit or the time limit fails it, its target with the
 * minimum trading days passes it.
 */
export async function evaluateAll(ctx: PropCtx, trading: TradingApi) {
  const now = ctx.clock.now()
  const phases = await activePhases(ctx)
  const rules = await rulesOfPhases(
    ctx,
    phases.map((p) => p.id),
  )
  let passed = 0
  let failed = 0
  forgetInactive(ctx, phases)
  for (let i = 0; i < phases.length; i += CHUNK) {
    const r = await evaluateChunk(ctx, trading, phases.slice(i, i + CHUNK), rules, now)
    passed += r.passed
    failed += r.failed
  }
  return { phases: phases.length, passed, failed }
}

const CHUNK = 2000

/**
 * What a pass reads of every active phase (a phase with a verdict is read whole): a third of the columns,
 * as one JSON text (kernel/db/json-rows: 10,000 rows of eight columns took about 60 ms of a 300 ms pass).
 */
type PassRow = Pick<
  PhaseRow,
  | 'id'
  | 'accountLogin'
  | 'timeZone'
  | 'initialBalance'
  | 'highestEodBalance'
  | 'payoutCount'
  | 'tradingDays'
  | 'lastTradingDay'
  | 'startDay'
  | 'startTime'
>
const ACTIVE_PHASES = `
  select json_group_array(json_array(id, account_login, time_zone, initial_balance, highest_eod_balance,
    payout_count, trading_days, last_trading_day, start_day, start_time)) as rows
  from prop_phases where status = ?`

async function activePhases(ctx: PropCtx): Promise<PassRow[]> {
  type Raw = [number, number, string, number, number, number, number, string, string, number]
  return (await jsonRows<Raw>(ctx.db, ACTIVE_PHASES, [PHASE.active])).map(
    ([
      id,
      accountLogin,
      timeZone,
      initialBalance,
      highestEodBalance,
      payoutCount,
      tradingDays,
      lastTradingDay,
      startDay,
      startTime,
    ]) => ({
      id,
      accountLogin,
      timeZone,
      initialBalance,
      highestEodBalance,
      payoutCount,
      tradingDays,
      lastTradingDay,
      startDay,
      startTime,
    }),
  )
}

/** Each active phase's rules, parsed, per process: a phase's rules never change (copied as it starts). */
const knownRules = new WeakMap<PropCtx, Map<number, PhaseRules>>()

/**
 * The rules of these phases: read and parsed the first time a phase is seen only (10,000 copies of the
 * rules' text were most of what a pass read, and read one by one they were most of a restarted
 * evaluator's first pass); phases no longer asked for are forgotten.
 */
async function rulesOfPhases(ctx: PropCtx, ids: number[]) {
  const before = knownRules.get(ctx) ?? new Map<number, PhaseRules>()
  const out = new Map<number, PhaseRules>()
  const missing: number[] = []
  for (const id of ids) {
    const r = before.get(id)
    if (r) out.set(id, r)
    else missing.push(id)
  }
  for (let i = 0; i < missing.length; i += CHUNK) {
    // phases share their rules' text (a copy of their program step's): each text comes once, with its
    // phases' ids (a JSON text of its own: a subquery's JSON reaches the outer one as text)
    const rows = await jsonRows<[string, string]>(
      ctx.db,
      `select json_group_array(json_array(rules, ids)) as rows from (
         select rules, json_group_array(id) as ids from prop_phases
         where id in (select value from json_each(?)) group by rules)`,
      [JSON.stringify(missing.slice(i, i + CHUNK))],
    )
    for (const [text, ids] of rows) {
      const rules = Rules.parse(JSON.parse(text))
      for (const id of JSON.parse(ids) as number[]) out.set(id, rules)
    }
  }
  knownRules.set(ctx, out)
  return out
}

/** A function of one string, computed once per distinct argument. */
function memo<T>(f: (key: string) => T) {
  const seen = new Map<string, T>()
  return (key: string) => {
    if (!seen.has(key)) seen.set(key, f(key))
    return seen.get(key) as T
  }
}

const DAY_FIELDS = `d.phase_id, d.day, d.start_balance, d.start_equity, d.min_equity, d.positions_opened,
  d.trading_day, d.settled`

/**
 * Each phase's latest day, found by the primary key (its rowid from the last entry of the phase's range):
 * every column an integer but the day, so the JSON text carries them exactly.
 */
export const LATEST_DAYS = `
  select json_group_array(json_array(${DAY_FIELDS})) as rows
  from json_each(?) j join prop_days d on d.rowid =
    (select x.rowid from prop_days x where x.phase_id = j.value order by x.day desc limit 1)`

/**
 * The days of phases whose latest day is not settled: from the latest settled one (the first day the
 * pass ends), or every day when none is. Walked back by the primary key: one or two days usually. Each
 * says whether a payout was made since it was (`paidSince`; by the payouts' key, phase first).
 */
export const SINCE_SETTLED = `
  select json_group_array(json_array(${DAY_FIELDS}, exists(select 1 from prop_payouts y
    where y.phase_id = d.phase_id and y.created_at >= d.created_at))) as rows
  from json_each(?) j join prop_days d on d.phase_id = j.value and d.day >= coalesce(
    (select x.day from prop_days x where x.phase_id = j.value and x.settled = 1 order by x.day desc limit 1), '')`

type RawDay = [number, string, number, number, number, number, number, number, number?]

/**
 * The days a pass works with, per phase, oldest first: its latest day when that is settled (today's on
 * every pass but the day's first, yesterday's on that one); else every day from the latest settled one.
 * Read as one JSON text each: read as rows, the 10,000 of a later pass took a quarter of it.
 */
async function passDaysOf(ctx: PropCtx, ids: number[]) {
  const out = new Map<number, DayRow[]>()
  const unsettled: number[] = []
  const add = ([
    phaseId,
    day,
    startBalance,
    startEquity,
    minEquity,
    positionsOpened,
    tradingDay,
    settled,
    paidSince = 0,
  ]: RawDay) => {
    const d = {
      phaseId,
      day,
      startBalance,
      startEquity,
      minEquity,
      positionsOpened,
      tradingDay,
      settled,
      paidSince,
    }
    const list = out.get(phaseId)
    if (list) list.push(d)
    else out.set(phaseId, [d])
  }
  for (const raw of await jsonRows<RawDay>(ctx.db, LATEST_DAYS, [JSON.stringify(ids)]))
    if (raw[7] === 1) add(raw)
    else unsettled.push(raw[0])
  if (unsettled.length) {
    for (const raw of await jsonRows<RawDay>(ctx.db, SINCE_SETTLED, [JSON.stringify(unsettled)])) add(raw)
    for (const id of unsettled) out.get(id)?.sort((a, b) => (a.day < b.day ? -1 : a.day > b.day ? 1 : 0))
  }
  return out
}

/**
 * Marks the days in each JSON row (phase `p`, day `d`) settled, each found by its primary key: today's
 * row when another writer made it, and the unsettled days the pass ends.
 */
export const settleDays = (rows: string) => sql`update prop_days set settled = 1
  from json_each(${rows}) j
  where prop_days.phase_id = json_extract(j.value, '$.p') and prop_days.day = json_extract(j.value, '$.d')
    and prop_days.settled = 0`

/** The days before today a pass ends: their last activity, and their ends raise the highest balance. */
function endingDays(rows: DayRow[] | undefined, today: string): string[] {
  if (!rows) return []
  const out: string[] = []
  for (const r of rows) if (r.day < today) out.push(r.day)
  return out
}

/** Each phase's figures of this process's latest pass in the last minutes of a day, per context. */
const seenByPass = new WeakMap<PropCtx, Map<number, SeenFigures>>()

/** When this process last counted each phase's trading days (domain/trading-days.ts), per context. */
const lastCounted = new WeakMap<PropCtx, Map<number, number>>()

/**
 * The positions a pass reads of each phase (domain/trading-days.ts). A phase this process counted within
 * the last 26 hours is read from its recent positions: the ones still open and those closed in the last 26
 * hours, which hold today's activity and everything since that count. The others, and each phase at its
 * minute of the day, are read from every position since the phase began and counted anew; so is a phase
 * whose count does not say its last day (a phase from before that column, with days counted). An active
 * trader's phase 40 positions into its challenge reads 40 rows when counted anew: 10,000 such phases
 * read 400,000, which every phase's first pass of its day did before (ADR 0012's addendum).
 */
async function positionsOfPass(
  ctx: PropCtx,
  trading: TradingApi,
  phases: PassRow[],
  now: number,
  since: number,
) {
  const counted = lastCounted.get(ctx)
  const recount = new Set<number>()
  const whole: PassRow[] = []
  const recent: PassRow[] = []
  for (const p of phases) {
    const trusted = p.lastTradingDay !== '' || p.tradingDays === 0
    if (trusted && !recountDue(p.id, counted?.get(p.id), now)) recent.push(p)
    else {
      recount.add(p.id)
      whole.push(p)
    }
  }
  const all = whole.length
    ? await trading.positionsOf(
        whole.map((p) => p.accountLogin),
        Math.min(...whole.map((p) => p.startTime)),
      )
    : new Map<number, { openTime: number; closeTime: number }[]>()
  if (recent.length)
    for (const [login, list] of await trading.recentPositionsOf(
      recent.map((p) => p.accountLogin),
      since,
    ))
      all.set(login, list)
  return { all, recount }
}

/** Phases no longer active are forgotten (a pass starts with every active one). */
function forgetInactive(ctx: PropCtx, active: PassRow[]) {
  const seen = seenByPass.get(ctx)
  if (seen?.size) {
    const ids = new Set(active.map((p) => p.id))
    for (const id of seen.keys()) if (!ids.has(id)) seen.delete(id)
  }
  const before = lastCounted.get(ctx)
  if (!before) return
  const after = new Map<number, number>()
  for (const p of active) {
    const t = before.get(p.id)
    if (t !== undefined) after.set(p.id, t)
  }
  lastCounted.set(ctx, after)
}

async function evaluateChunk(
  ctx: PropCtx,
  trading: TradingApi,
  phases: PassRow[],
  rulesById: Map<number, PhaseRules>,
  now: number,
) {
  const logins = phases.map((p) => p.accountLogin)
  const ids = phases.map((p) => p.id)
  const figures = await trading.figures(logins)
  const passDays = await passDaysOf(ctx, ids)
  // phases share their zone and their rules text: each is worked out once per pass (today's day too)
  const dayOf = daysOfPass()
  const todayOf = (zone: string) => dayOf(now, zone)
  const since = now - RECENT_WINDOW_MS
  const positions = await positionsOfPass(ctx, trading, phases, now, since)
  // days since the epoch of a local day's date, once per date in the pass
  const dayNumbers = memo(dayNumber)
  // each phase's trading days, positions opened today and still open, from its positions
  const activity = new Map<number, Activity>()
  for (const p of phases) {
    const rules = rulesById.get(p.id)
    if (!rules || !figures.get(p.accountLogin)) continue
    activity.set(
      p.id,
      activityOf(
        rules,
        p.timeZone,
        todayOf(p.timeZone),
        since,
        positions.all.get(p.accountLogin) ?? [],
        dayOf,
        endingDays(passDays.get(p.id), todayOf(p.timeZone)),
      ),
    )
  }
  // the day's snapshot of the phases that have none yet (the first pass of their local day), its row
  // written with the day's activity as it is now (not updated again below)
  // starting from the figures seen just before midnight (dayStartOf: this process's last pass of the day
  // before), as the engine's watch does
  const seen = seenByPass.get(ctx) ?? new Map<number, SeenFigures>()
  seenByPass.set(ctx, seen)
  const starting = phases.filter(
    (p) => figures.get(p.accountLogin) && !passDays.get(p.id)?.some((d) => d.day === todayOf(p.timeZone)),
  )
  // and what a pass elsewhere saw (another instance holding the job's lease then, a Worker's cron run in
  // another isolate), from the cache: one read for the phases starting a day
  const shared = await daysEndSeen(
    ctx,
    starting.map((p) => p.id),
  )
  const wanted: WantedDay[] = starting.map((p) => {
    const day = todayOf(p.timeZone)
    const a = activity.get(p.id)
    return {
      phaseId: p.id,
      day,
      now: dayStartOf(
        day,
        p.timeZone,
        figures.get(p.accountLogin)!,
        p.payoutCount,
        seen.get(p.id),
        shared.get(p.id),
      ),
      positionsOpened: a?.openedToday ?? 0,
      tradingDay: a?.traded.has(day) ? 1 : 0,
    }
  })
  // the figures of this pass, where its day ends within minutes: the next day's start (also for the watch)
  const nearEnd = new Map<number, SeenFigures>()
  const endOf = memo((zone) => nextDayStart(now, zone))
  for (const p of phases) {
    const f = figures.get(p.accountLogin)
    const s = f && seenNearDayEnd(f, now, endOf(p.timeZone), p.payoutCount)
    if (s) nearEnd.set(p.id, s)
  }
  const input = { phases, figures, rulesById, passDays, activity, todayOf, dayNumbers, positions }
  // Usually no other writer made today's rows of these phases first: each day then starts at the figures
  // now, and its row, inserted settled, commits with the chunk's changes. Else the rows that exist decide
  // (read in the same transaction; those another writer made are settled by an update), and the changes
  // are worked out again from them: a row this pass inserted settled never commits without the days
  // before it settled, which no later pass would read again.
  const assumed = assumedSnapshots(wanted)
  const planned = planChunk(input, assumed, true)
  const { snaps, plan } = await ctx.uow.run(async (tx) => {
    if ((await insertDays(tx, wanted, now, true)) === wanted.length) {
      await writeChunk(tx, planned, now)
      return { snaps: assumed, plan: planned }
    }
    const stored = await storedSnapshots(tx, wanted)
    const replanned = planChunk(input, stored, false)
    await writeChunk(tx, replanned, now)
    return { snaps: stored, plan: replanned }
  })
  await cacheSnapshots(ctx, wanted, snaps.figures)
  for (const [id, f] of nearEnd) seen.set(id, f)
  await rememberDayEnds(ctx, nearEnd)
  const remembered = lastCounted.get(ctx) ?? new Map<number, number>()
  for (const id of plan.counted) remembered.set(id, now)
  lastCounted.set(ctx, remembered)
  if (plan.raised.length) await publishChange(ctx.bus, ctx.logger, PHASES_CHANGED, plan.raised)
  const { verdicts } = plan
  let passed = 0
  let failed = 0
  const whole = verdicts.length
    ? new Map(
        (
          await ctx.db
            .select()
            .from(propPhases)
            .where(
              inArray(
                propPhases.id,
                verdicts.map((x) => x.id),
              ),
            )
        ).map((p) => [p.id, p]),
      )
    : new Map<number, PhaseRow>()
  for (const { id, v, f, s } of verdicts) {
    const p = whole.get(id)
    if (!p || p.status !== PHASE.active) continue
    if (v.outcome === 'failed') {
      const outcome = await recordBreach(ctx, p, v.breach, f, now)
      if (outcome === 'recorded') await publishChange(ctx.bus, ctx.logger, PHASES_CHANGED, [p.id])
      // the phase failed (by this breach or another writer's); 'stale' and 'inactive' left it as it was
      if (outcome === 'recorded' || outcome === 'recorded_before') failed++
    } else {
      // counted only when its promotion committed (not when it found the phase moved or not passing yet)
      const committed = await passPhase(ctx, trading, p, rulesById.get(id)!, s).catch((e) => {
        ctx.logger.log('error', 'prop phase could not pass', { phase: p.id, err: String(e) })
        return false
      })
      if (committed) passed++
    }
  }
  return { passed, failed }
}

/** What a chunk's pass works out from its reads, before it writes. */
interface ChunkInput {
  phases: PassRow[]
  figures: Map<number, Figures | null>
  rulesById: Map<number, PhaseRules>
  passDays: Map<number, DayRow[]>
  activity: Map<number, Activity>
  todayOf: (zone: string) => string
  dayNumbers: (day: string) => number
  positions: { recount: Set<number> }
}

/**
 * A chunk's changes, written in three or four statements for the whole chunk (`writeChunk`), and its
 * verdicts: the days before today are settled (`snaps`: today's start and row) with their last positions
 * (opened after their last pass), each ending where the next day starts; today's minimum equity,
 * positions opened and trading day; the trading days and the highest end-of-day balance. `inserted`: this
 * pass inserted the rows of `snaps`, settled (else another writer made some of them).
 */
function planChunk(input: ChunkInput, snaps: Snapshots, inserted: boolean) {
  const { phases, figures, rulesById, passDays, activity, todayOf, dayNumbers, positions } = input
  /** `s`: what the verdict judged (a pass judges it again with the figures in its transaction) */
  const verdicts: { id: number; v: ReturnType<typeof verdict>; f: Figures; s: PhaseState }[] = []
  /** Phases whose trading days this chunk counted: remembered once its transaction has committed. */
  const counted: number[] = []
  /** Phases whose trailing loss floor moved: the engine's watch reads them again. */
  const raised: number[] = []
  const settle: { p: number; d: string }[] = []
  const days: { p: number; d: string; m: number; o: number; t: number }[] = []
  const counts: { i: number; t: number; l: string; h: number; n0: number; t0: number; l0: string }[] = []
  for (const p of phases) {
    const f = figures.get(p.accountLogin)
    if (!f) continue
    const rules = rulesById.get(p.id)
    if (!rules) continue
    const day = todayOf(p.timeZone)
    const rows = passDays.get(p.id) ?? []
    const stored = rows.find((d) => d.day === day)
    const snap = stored
      ? { balance: stored.startBalance, equity: stored.startEquity }
      : snaps.figures.get(p.id)!
    // the row this pass wrote holds the day's activity already
    const today = stored ?? snaps.written.get(p.id)
    let highest = p.highestEodBalance
    const { traded, openedToday, openPositions, openedOn } = activity.get(p.id)!
    // today's row is settled with the days before it: unless this pass inserted it
    if (stored ? stored.settled === 0 : !inserted) settle.push({ p: p.id, d: day })
    // the days before today are settled with their last positions (opened after their last pass): what
    // the day's metrics show from then on. Each ended where the next started: today's start, and the
    // start of each day after the first one read (the latest settled one, or the phase's first day). A
    // start taken before a payout (made since its row was) is not counted: the payout moved the highest
    // down, but not that row (in the trader's favour when the payout was that day's, and moved it).
    if (rows.some((d) => d.day < day)) {
      highest = Math.max(highest, snap.balance)
      for (let k = 0; k < rows.length; k++) {
        const r = rows[k]!
        if (r.day >= day) continue
        if (k > 0 && r.paidSince === 0) highest = Math.max(highest, r.startBalance)
        if (r.settled === 0) settle.push({ p: p.id, d: r.day })
        const t = traded.has(r.day) ? 1 : r.tradingDay
        const o = Math.max(r.positionsOpened, openedOn.get(r.day) ?? 0)
        if (t !== r.tradingDay || o !== r.positionsOpened)
          days.push({ p: p.id, d: r.day, m: r.minEquity, o, t })
      }
    }
    const minEquity = Math.min(today?.minEquity ?? snap.equity, f.equity)
    const tradingDay = traded.has(day) ? 1 : 0
    const { tradingDays, lastTradingDay } = countTradingDays(p, traded, positions.recount.has(p.id))
    counted.push(p.id)
    if (
      !today ||
      today.minEquity !== minEquity ||
      today.positionsOpened !== openedToday ||
      today.tradingDay !== tradingDay
    )
      days.push({ p: p.id, d: day, m: minEquity, o: openedToday, t: tradingDay })
    if (p.highestEodBalance !== highest && rules.total_loss_mode === 'trailing') raised.push(p.id)
    if (
      p.tradingDays !== tradingDays ||
      p.lastTradingDay !== lastTradingDay ||
      p.highestEodBalance !== highest
    )
      counts.push({
        i: p.id,
        t: tradingDays,
        l: lastTradingDay,
        h: highest,
        n0: p.payoutCount,
        t0: p.tradingDays,
        l0: p.lastTradingDay,
      })
    const s: PhaseState = {
      initialBalance: p.initialBalance,
      balance: f.balance,
      equity: f.equity,
      dayStartEquity: snap.equity,
      highestEodBalance: highest,
      openPositions,
      tradingDays,
      daysElapsed: daysInclusive(p.startDay, day, dayNumbers),
    }
    const v = verdict(rules, s)
    if (v.outcome !== 'running') verdicts.push({ id: p.id, v, f, s })
  }
  return { verdicts, counted, raised, settle, days, counts }
}

type ChunkPlan = ReturnType<typeof planChunk>

/**
 * Each statement walks the JSON rows and finds its row by primary key (the unary + keeps the planner off
 * the status index, which would scan every active phase once per JSON row). Two passes may overlap (a job
 * lease that lapsed, the cron route beside the job), and the later writer must not undo what the other
 * wrote from fresher reads: a day's minimum equity only falls, its positions opened and its trading day
 * only grow, the highest end-of-day balance only grows, and the trading days are set only over the count
 * this pass read (`t0`, `l0`: a pass that counted from a stale row leaves a recount standing; its next
 * pass adds what it missed). The highest balance falls only by a payout (payouts.ts), which also counts
 * itself in `payout_count`: where that is no longer what this pass read (`n0`), a payout was made since and
 * the pass's figures from before it (today's start, the ends of the days it settles) raise nothing. (The
 * highest balance itself is no such sign: floored at the initial balance, a payout may leave it unchanged.)
 */
async function writeChunk(tx: Tx, { settle, days, counts }: ChunkPlan, now: number) {
  const field = (name: string) => sql.raw(`json_extract(j.value, '$.${name}')`)
  if (settle.length) await tx.run(settleDays(JSON.stringify(settle)))
  if (days.length)
    await tx.run(sql`update prop_days set min_equity = min(min_equity, ${field('m')}),
        positions_opened = max(positions_opened, ${field('o')}), trading_day = max(trading_day, ${field('t')})
      from json_each(${JSON.stringify(days)}) j
      where prop_days.phase_id = ${field('p')} and prop_days.day = ${field('d')}`)
  if (counts.length) {
    const read = sql`trading_days = ${field('t0')} and last_trading_day = ${field('l0')}`
    await tx.run(sql`update prop_phases set
        trading_days = case when ${read} then ${field('t')} else trading_days end,
        last_trading_day = case when ${read} then ${field('l')} else last_trading_day end,
        highest_eod_balance = case when payout_count = ${field('n0')}
          then max(highest_eod_balance, ${field('h')}) else highest_eod_balance end,
        updated_at = ${now}
      from json_each(${JSON.stringify(counts)}) j
      where prop_phases.id = ${field('i')} and +prop_phases.status = ${PHASE.active}`)
  }
}

/**
 * Rolls a promotion's transaction back: the phase was not active any more (another pass moved it), or its
 * challenge was not active on it, or the phase no longer meets its target as its transaction sees it.
 */
class PromotedElsewhere extends Error {}

/**
 * The equity of an account with no position open, in minor units: its balance and credit, worked out as
 * the evaluator's read (trading's accountFigures: marginOf, then roundToMinor) does for such an account,
 * so that a pass and its re-check agree to the minor unit.
 */
function equityWithoutPositions(funds: { balance: number; credit: number }, currency: string) {
  const m = marginSnapshot(
    {
      balance: fromMinor(funds.balance, currency),
      credit: fromMinor(funds.credit, currency),
      floatingProfit: 0,
      margin: 0,
      commission: 0,
      storage: 0,
    },
    currency,
  )
  return roundToMinor(m!.equity, currency)
}

/**
 * A phase met its target (`judged`: what the pass's verdict saw): in one transaction the phase is judged
 * again on its account's balance, equity and open positions as that transaction sees them, and passes
 * (a conditional update: of overlapping passes, one moves it) with those as its final figures; the next
 * step's account is opened with its group's default_deposit as the initial
 * balance (the purchase's finance operation), the next phase starts on it and the challenge moves to it;
 * after the last step the challenge has passed. The passed account stops trading. A pass that fails, or
 * finds the phase moved, rolls back whole, its account with it: no account is left open and funded without
 * its phase, and the next pass tries again from nothing. True when the promotion committed.
 */
async function passPhase(
  ctx: PropCtx,
  trading: TradingApi,
  p: PhaseRow,
  rules: PhaseRules,
  judged: PhaseState,
): Promise<boolean> {
  const [challenge] = await ctx.db.select().from(propChallenges).where(eq(propChallenges.id, p.challengeId))
  const [purchase] = await ctx.db
    .select()
    .from(propPurchases)
    .where(eq(propPurchases.id, challenge!.purchaseId))
  const [program] = await ctx.db.select().from(propPrograms).where(eq(propPrograms.id, p.programId))
  if (!challenge || !purchase || !program) return false
  // the steps as bought: later edits of the program apply to new purchases only
  const steps = ProgramStep.array().parse(JSON.parse(purchase.steps))
  const next = steps[p.phaseIndex]
  const now = ctx.clock.now()
  const pass = async (tx: Tx, work: Work, opened: Opened | null) => {
    // the figures the verdict saw were read before this transaction: a position opened and closed since
    // (at a loss) may have taken the target back, or one may still be open (its open committed first:
    // this write transaction holds the write lock, and an open committed after it finds the account
    // read-only). Judged again on what the transaction sees, the phase passes only when it still meets
    // its target; else nothing passes, and a limit broken meanwhile is the watch's or the next pass's.
    // A position open: the target is met with none open, so the phase is simply not passing yet (before
    // any pricing: a stale feed does not turn that into an error). With none, equity is the funds alone.
    if ((await trading.openPositionsOf(p.accountLogin, tx)).length > 0)
      throw new PromotedElsewhere(`phase ${p.id} has a position open`)
    const funds = (await ctx.accounts.fundsOf(tx, [p.accountLogin])).get(p.accountLogin)
    if (!funds) throw new Error(`account ${p.accountLogin} of phase ${p.id} is gone`)
    const figures = { balance: funds.balance, equity: equityWithoutPositions(funds, p.currency) }
    if (verdict(rules, { ...judged, ...figures, openPositions: 0 }).outcome !== 'passed')
      throw new PromotedElsewhere(`phase ${p.id} no longer meets its target`)
    const [done] = await tx
      .update(propPhases)
      .set({
        status: PHASE.passed,
        finalBalance: figures.balance,
        finalEquity: figures.equity,
        endTime: now,
        updatedAt: now,
      })
      .where(and(eq(propPhases.id, p.id), eq(propPhases.status, PHASE.active)))
      .returning({ id: propPhases.id })
    if (!done) throw new PromotedElsewhere(`phase ${p.id} is no longer active`)
    let nextId: number | null = null
    if (opened && next) {
      await ctx.accounts.postOperationTx(tx, work, {
        brandId: p.brandId,
        login: opened.login,
        op: 'OP_BALANCE_IN',
        amountMinor: opened.deposit,
        reason: 'TR_REASON_PROP',
        comment: 'PROP_CHALLENGE_INITIAL_BALANCE',
        apiData: {
          module: 'prop',
          operation: 'initial_balance',
          program_id: program.id,
          purchase_id: purchase.id,
          customer_id: challenge.customerId,
          payer_login: purchase.payerLogin,
          challenge_login: opened.login,
          idempotency_key: purchase.idempotencyKey,
        },
        // the key names the passed phase, but it is unique per account, and the account is new: what keeps
        // a phase from being promoted twice is the phase's conditional pass above and the unique
        // (challenge, phase index) of the next phase
        idempotencyKey: `prop:${purchase.id}:phase:${p.id}:next-initial`,
        createdBy: 'prop',
      })
      const [row] = await tx
        .insert(propPhases)
        .values({
          brandId: p.brandId,
          challengeId: p.challengeId,
          programId: p.programId,
          phaseIndex: p.phaseIndex + 1,
          phaseType: next.phase_type,
          accountLogin: opened.login,
          accountGroup: opened.group,
          currency: opened.currency,
          rules: JSON.stringify(next.rules),
          timeZone: p.timeZone,
          status: PHASE.active,
          initialBalance: opened.deposit,
          initialEquity: opened.deposit,
          highestEodBalance: opened.deposit,
          startDay: localDay(now, p.timeZone),
          startTime: now,
          createdAt: now,
          updatedAt: now,
        })
        .returning({ id: propPhases.id })
      nextId = row!.id
    }
    const [advanced] = await tx
      .update(propChallenges)
      .set(
        opened
          ? { currentPhaseIndex: p.phaseIndex + 1, accountLogin: opened.login, updatedAt: now }
          : { status: CHALLENGE.passed, endTime: now, updatedAt: now },
      )
      .where(
        and(
          eq(propChallenges.id, p.challengeId),
          eq(propChallenges.status, CHALLENGE.active),
          eq(propChallenges.currentPhaseIndex, p.phaseIndex),
        ),
      )
      .returning({ id: propChallenges.id })
    // the challenge is not on this phase any more (or not active): nothing of the promotion commits
    if (!advanced)
      throw new PromotedElsewhere(`challenge ${p.challengeId} is not active on phase ${p.phaseIndex}`)
    await ctx.accounts.setReadOnlyTx(
      tx,
      work,
      p.brandId,
      p.accountLogin,
      opened
        ? `phase ${p.phaseIndex} of challenge ${p.challengeId} passed: trade on account ${opened.login}`
        : `challenge ${p.challengeId} passed`,
    )
    work.emit(PropPhasePassed, p.brandId, {
      login: p.accountLogin,
      challenge_id: p.challengeId,
      phase_id: p.id,
      phase_index: p.phaseIndex,
      currency: p.currency,
      next_login: opened?.login ?? null,
      funded: next?.phase_type === FUNDED,
    })
    return nextId
  }
  let moved: number | null = null
  try {
    if (next) {
      const group = await ctx.accounts.findGroup(p.brandId, next.account_group)
      if (!group) throw new Error(`group ${next.account_group} of program ${program.id} is gone`)
      // the account opens in the pass's transaction (`within`): it commits with the pass or not at all
      await ctx.steps.openAccount(
        {
          brandId: p.brandId,
          customerId: challenge.customerId,
          group: group.name,
          password: crypto.randomUUID(),
          maxPositions: next.rules.max_positions,
        },
        async (tx, work, login) => {
          moved = await pass(tx, work, {
            login,
            group: group.name,
            deposit: group.defaultDeposit,
            currency: group.currency,
          })
        },
      )
    } else await ctx.uow.run(async (tx, work) => void (await pass(tx, work, null)))
  } catch (e) {
    if (e instanceof PromotedElsewhere) return false
    throw e
  }
  await publishChange(ctx.bus, ctx.logger, PHASES_CHANGED, moved ? [p.id, moved] : [p.id])
  return true
}

interface Opened {
  login: number
  group: string
  deposit: number
  currency: string
}
