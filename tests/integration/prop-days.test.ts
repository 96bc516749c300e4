// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import type { Tx } from '../../src/kernel/db/client'
import type { WriteOrder } from '../../src/kernel/db/group-writer'
import type { PropCtx } from '../../src/modules/prop/context'
import { localDay } from '../../src/modules/prop/domain/rules'
import { evaluateAll } from '../../src/modules/prop/evaluator'
import { daySnapshots } from '../../src/modules/prop/state'
import { type TradingApi, TradingPort } from '../../src/modules/trading'
import { makeTestApp, type TestApp } from '../support/app'
import { buyChallenge, evaluationProgram } from '../support/prop'
import { quoteIngest } from '../support/quotes'

/**
 * The evaluator's calendar (spec 4.13): a phase's time limit counts the local days from the one it
 * started on, both counted, and fails the phase on the first day past it, not before; a day ends with
 * the balance and the equity the next one started with.
 */

const DAY = 86_400_000
// Monday 10:00 in Prague
const clock = new ManualClock(Date.UTC(2026, 10, 23, 9, 0, 0))
let t: TestApp
let customer: string

let dealer: string
const ingest = quoteIngest(
  () => t,
  clock,
  () => dealer,
)

beforeAll(async () => {
  t = await makeTestApp({ clock })
  customer = await t.customerToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
})
afterAll(() => t.close())

test('max_trading_days 2: running on the start day and the next, failed on the third', async () => {
  const manager = await t.staffToken()
  const created = await t.request('POST', '/manager/prop/programs', {
    token: manager,
    // a target nothing here reaches, and no position: only the time limit can end the phase
    body: evaluationProgram(
      { profit_target_pct: 50, daily_loss_pct: 5, total_loss_pct: 10, max_trading_days: 2 },
      { name: 'Two days' },
    ),
  })
  expect(created.status).toBe(200)
  const bought = await t.request('POST', '/prop/challenge/buy', {
    token: customer,
    body: { program_id: created.json.id, payer_login: 100001 },
  })
  expect(bought.status).toBe(200)
  const id = bought.json.challenge.id as number
  // a day later the session has expired: a new sign-in each time
  const status = async () => {
    await t.runJob('prop.evaluate')
    return (await t.request('GET', `/prop/challenges/${id}`, { token: await t.customerToken() })).json
  }
  expect((await status()).challenge.status_name).toBe('active')
  clock.advance(DAY)
  expect((await status()).challenge.status_name).toBe('active')
  clock.advance(DAY)
  const d = await status()
  expect(d.challenge.status_name).toBe('failed')
  expect(d.latest_breach).toMatchObject({ rule: 'max_trading_days', limit: 2 })
})

test("a day ends with the next one's start: its end balance is the balance, its end equity the equity", async () => {
  // after the test above the clock is on Wednesday; sessions are signed in again after each day
  customer = await t.customerToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
  const programs = (await t.request('GET', '/prop/programs', { token: customer })).json.rows
  const {
    login,
    challenge: id,
    token,
  } = await buyChallenge(t, customer, programs.find((p: { name: string }) => p.name === 'Two-Step 10k').id)
  await t.runJob('prop.evaluate')
  // 0.1 lot bought at 1.1002, then 20 pips up: about 18 USD of floating profit over the day's close
  const o = await t.request('POST', '/trade/open', {
    token,
    body: { login, cmd: 0, volume: 10, symbol: 'EURUSD', sl: 0, tp: 0 },
  })
  expect(o.status).toBe(200)
  await ingest([{ symbol: 'EURUSD', bid: 1.1022, ask: 1.1024 }])
  // Thursday: the first tick takes the day's snapshot on the engine, the evaluator then ends Wednesday
  clock.advance(DAY)
  dealer = await t.staffToken(3, 'dealer-pass-1')
  await ingest([{ symbol: 'EURUSD', bid: 1.1022, ask: 1.1024 }])
  await t.runJob('prop.evaluate')
  const phase = (await t.request('GET', `/prop/challenges/${id}`, { token: await t.customerToken() })).json
    .current_phase.id as number
  const [thursday, wednesday] = await metricsOf(id)
  expect(wednesday).toBeDefined()
  // the position floats: the day started with more equity than balance
  expect(thursday!.start_equity).toBeGreaterThan(thursday!.start_balance)
  expect(wednesday!.end_balance).toBe(thursday!.start_balance)
  expect(wednesday!.end_equity).toBe(thursday!.start_equity)
  expect(wednesday!.profit).toBeCloseTo(thursday!.start_balance - wednesday!.start_balance, 2)
  expect(thursday!.end_balance).toBeNull()
  expect(thursday!.end_equity).toBeNull()
  expect(thursday!.profit).toBeNull()
  // the engine's tick made Thursday's row unsettled; the pass settled it with Wednesday
  expect(await settledOf(phase)).toEqual([1, 1])
})

/** A challenge's metrics rows (GET /prop/challenges/{id}/metrics), newest first. */
async function metricsOf(challenge: number) {
  const r = await t.request('GET', `/prop/challenges/${challenge}/metrics`, {
    token: await t.customerToken(),
  })
  expect(r.status).toBe(200)
  return r.json.rows as {
    day: string
    start_balance: number
    start_equity: number
    end_balance: number | null
    end_equity: number | null
    profit: number | null
  }[]
}

/** Each of a phase's days, oldest first: whether the days before it are settled. */
async function settledOf(phase: number) {
  return (
    await t.ctx.db.execute({
      sql: 'select settled from prop_days where phase_id = ? order by day',
      args: [phase],
    })
  ).rows.map((r) => Number(r.settled))
}

test('day snapshots: a row another writer made first decides its phase; the others are what was sent', async () => {
  const ctx = t.ctx as unknown as PropCtx
  const day = '2031-01-01'
  const base = 9_000_000
  // the engine took phase base+1's snapshot first, with other figures and activity
  await ctx.db.execute({
    sql: `insert into prop_days (phase_id, day, start_balance, start_equity, min_equity, positions_opened,
      trading_day, created_at) values (?, ?, 500, 400, 350, 2, 1, 0)`,
    args: [base + 1, day],
  })
  const want = (phaseId: number) => ({
    phaseId,
    day,
    now: { balance: 1000, equity: 900 },
    positionsOpened: 1,
    tradingDay: 0,
  })
  const first = await daySnapshots(ctx, [want(base), want(base + 1), want(base + 2)])
  expect(first.figures.get(base)).toEqual({ balance: 1000, equity: 900 })
  expect(first.figures.get(base + 1)).toEqual({ balance: 500, equity: 400 })
  expect(first.written.get(base + 1)).toEqual({ minEquity: 350, positionsOpened: 2, tradingDay: 1 })
  expect(first.written.get(base + 2)).toEqual({ minEquity: 900, positionsOpened: 1, tradingDay: 0 })
  // all of them inserted: what was sent, read back the same
  const again = await daySnapshots(ctx, [{ ...want(base + 3), now: { balance: 7, equity: 6 } }])
  expect(again.figures.get(base + 3)).toEqual({ balance: 7, equity: 6 })
  const stored = await ctx.db.execute({
    sql: 'select phase_id, start_equity from prop_days where day = ? order by phase_id',
    args: [day],
  })
  expect(stored.rows.map((r) => [Number(r.phase_id), Number(r.start_equity)])).toEqual([
    [base, 900],
    [base + 1, 400],
    [base + 2, 900],
    [base + 3, 6],
  ])
  // the cache holds what the rows say
  expect(JSON.parse((await ctx.store.get(`prop:day:v1:${base + 1}:${day}`))!)).toEqual({
    balance: 500,
    equity: 400,
  })
})

/** A challenge of a new program with these rules, bought now (fresh sessions, a quote of now). */
async function challengeOf(rules: Record<string, unknown>, name: string) {
  customer = await t.customerToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
  const created = await t.request('POST', '/manager/prop/programs', {
    token: await t.staffToken(),
    body: evaluationProgram(rules, { name }),
  })
  expect(created.status).toBe(200)
  return buyChallenge(t, customer, created.json.id)
}

test("trading days across a day's passes: a later pass adds today once; a close counts its day under any_trade", async () => {
  const {
    login,
    challenge: id,
    token,
  } = await challengeOf(
    { profit_target_pct: 50, daily_loss_pct: 5, total_loss_pct: 10, trading_day: 'any_trade' },
    'Any trade counts',
  )
  const pass = async () => {
    await t.runJob('prop.evaluate')
    const c = (await t.request('GET', `/prop/challenges/${id}`, { token: await t.customerToken() })).json
    const days = (
      await t.ctx.db.execute({
        sql: 'select day, trading_day from prop_days where phase_id = ? order by day',
        args: [c.current_phase.id],
      })
    ).rows.map((r) => Number(r.trading_day))
    return { tradingDays: c.current_phase.latest_metric.trading_days as number, days }
  }
  // the day's first pass, then later ones: nothing traded yet
  expect(await pass()).toEqual({ tradingDays: 0, days: [0] })
  const o = await t.request('POST', '/trade/open', {
    token,
    body: { login, cmd: 0, volume: 1, symbol: 'EURUSD', sl: 0, tp: 0 },
  })
  expect(o.status).toBe(200)
  // a later pass of the day counts today, and the ones after it do not count it again
  expect(await pass()).toEqual({ tradingDays: 1, days: [1] })
  expect(await pass()).toEqual({ tradingDays: 1, days: [1] })
  // a count that does not say its last day (a phase from before that column) is counted anew
  await t.ctx.db.execute({
    sql: "update prop_phases set last_trading_day = '' where account_login = ?",
    args: [login],
  })
  expect(await pass()).toEqual({ tradingDays: 1, days: [1] })
  // the next day: nothing opened, the position still open (a day of minutes later every phase's minute
  // has passed: this pass counts every position anew)
  clock.advance(DAY)
  dealer = await t.staffToken(3, 'dealer-pass-1')
  await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
  expect(await pass()).toEqual({ tradingDays: 1, days: [1, 0] })
  // closing it on a later pass of that day: under any_trade the close makes the day a trading day
  const token2 = (await t.request('POST', '/sign/in', { body: { login, password: 'challenge-pass-1' } })).json
    .__token as string
  const closed = await t.request('DELETE', '/trade/close', {
    token: token2,
    body: { order: o.json.order },
  })
  expect(closed.status).toBe(200)
  expect(await pass()).toEqual({ tradingDays: 2, days: [1, 1] })
  expect(await pass()).toEqual({ tradingDays: 2, days: [1, 1] })
  // the day after (a day of minutes again), every position counted anew: the same two days
  clock.advance(DAY)
  dealer = await t.staffToken(3, 'dealer-pass-1')
  await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
  expect(await pass()).toEqual({ tradingDays: 2, days: [1, 1, 0] })
})

test("trading days at midnight: the day's first pass adds yesterday's last position from the recent ones; a day missed behind the last counted is found at the phase's minute", async () => {
  // Thursday 2026-12-10, 23:58 in Prague (UTC+1)
  const MINUTE = 60_000
  clock.set(Date.UTC(2026, 11, 10, 22, 58))
  const { login, challenge: id } = await challengeOf(
    { profit_target_pct: 50, daily_loss_pct: 5, total_loss_pct: 10 },
    'Midnight',
  )
  const pass = async () => {
    await t.runJob('prop.evaluate')
    const c = (await t.request('GET', `/prop/challenges/${id}`, { token: await t.customerToken() })).json
    return { phase: c.current_phase.id as number, tradingDays: c.current_phase.latest_metric.trading_days }
  }
  const first = await pass()
  expect(first.tradingDays).toBe(0)
  // the phase's minute of the day (UTC) is none of the passes' below but the last one's
  const minute = first.phase % 1_440
  expect(minute).toBeLessThan(22 * 60)

  // 23:59: a position opened after the day's last pass; the next pass is the new day's first
  clock.set(Date.UTC(2026, 11, 10, 22, 59))
  const token = (await t.request('POST', '/sign/in', { body: { login, password: 'challenge-pass-1' } })).json
    .__token as string
  dealer = await t.staffToken(3, 'dealer-pass-1')
  await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
  const o = await t.request('POST', '/trade/open', {
    token,
    body: { login, cmd: 0, volume: 1, symbol: 'EURUSD', sl: 0, tp: 0 },
  })
  expect(o.status).toBe(200)
  clock.set(Date.UTC(2026, 11, 10, 23, 0, 30))
  expect((await pass()).tradingDays).toBe(1)
  // the day it ended shows that position too: a trading day, one position opened
  const metrics = await t.request('GET', `/prop/challenges/${id}/metrics`, { token: await t.customerToken() })
  expect(metrics.status).toBe(200)
  expect(
    (metrics.json.rows as { day: string; trading_day: boolean; positions_opened: number }[]).map((r) => [
      r.day,
      r.trading_day,
      r.positions_opened,
    ]),
  ).toEqual([
    ['2026-12-11', false, 0],
    ['2026-12-10', true, 1],
  ])

  // a count that lost a day behind its last one (planted): the passes between the phase's minutes read
  // its recent positions and leave it; the pass at its minute counts every position again
  await t.ctx.db.execute({
    sql: 'update prop_phases set trading_days = 0 where id = ?',
    args: [first.phase],
  })
  clock.advance(MINUTE)
  expect((await pass()).tradingDays).toBe(0)
  clock.set(Date.UTC(2026, 11, 11, 0, minute))
  expect((await pass()).tradingDays).toBe(1)
})

/** A phase of a new challenge that has had its first pass: its id, its challenge's and its program's zone. */
async function evaluatedPhase(name: string) {
  const { challenge: id } = await challengeOf(
    { profit_target_pct: 50, daily_loss_pct: 5, total_loss_pct: 10 },
    name,
  )
  await t.runJob('prop.evaluate')
  const phase = (await t.request('GET', `/prop/challenges/${id}`, { token: await t.customerToken() })).json
    .current_phase.id as number
  const zone = String(
    (await t.ctx.db.execute({ sql: 'select time_zone from prop_phases where id = ?', args: [phase] }))
      .rows[0]!.time_zone,
  )
  return { phase, zone, challenge: id as number }
}

/** A phase's days in order: start balance, start equity (minor units), whether its predecessors are settled. */
async function startsOf(phase: number) {
  return (
    await t.ctx.db.execute({
      sql: 'select start_balance, start_equity, settled from prop_days where phase_id = ? order by day',
      args: [phase],
    })
  ).rows.map((r) => [r.start_balance, r.start_equity, r.settled].map(Number))
}

test("the day's first pass when another writer made a phase's day first: that row's start ends the day before", async () => {
  const { phase, zone, challenge } = await evaluatedPhase('Raced day')
  // the next day, no tick yet: the pass reads the latest days (yesterday's), then, while it reads the
  // positions, the engine's first tick of the day writes today's row with figures of its own
  clock.advance(DAY)
  const racing = engineRacing(phase, zone)
  await evaluateAll(t.ctx as unknown as PropCtx, racing.trading)
  expect(racing.raced()).toBe(true)
  // the row that existed decides: it is kept as it was, and settled; yesterday ends where it says today
  // started
  const days = await startsOf(phase)
  expect(days).toHaveLength(2)
  expect(days[1]).toEqual([123456, 123400, 1])
  const [today, yesterday] = await metricsOf(challenge)
  expect([today!.end_balance, today!.end_equity]).toEqual([null, null])
  expect([yesterday!.end_balance, yesterday!.end_equity]).toEqual([1234.56, 1234])
})

/**
 * The trading port of a pass during which the engine's first tick of the day writes the phase's row
 * (123456 / 123400), after the pass read the latest days, while it reads the positions.
 */
function engineRacing(phase: number, zone: string) {
  const trading = t.ports.get(TradingPort)
  let raced = 0
  const race = async () => {
    if (raced++) return
    await t.ctx.db.execute({
      sql: `insert into prop_days (phase_id, day, start_balance, start_equity, min_equity, created_at)
        values (?, ?, 123456, 123400, 123400, 0)`,
      args: [phase, localDay(clock.now(), zone)],
    })
  }
  const racing: TradingApi = {
    ...trading,
    positionsOf: async (logins, since) => {
      await race()
      return trading.positionsOf(logins, since)
    },
    recentPositionsOf: async (logins, since) => {
      await race()
      return trading.recentPositionsOf(logins, since)
    },
  }
  return { trading: racing, raced: () => raced > 0 }
}

/** A phase's highest end-of-day balance (minor units). */
async function highestOf(phase: number) {
  const r = await t.ctx.db.execute({
    sql: 'select highest_eod_balance as h from prop_phases where id = ?',
    args: [phase],
  })
  return Number(r.rows[0]!.h)
}

test("another writer's row makes the day's insert come short: the rows the pass inserts commit with the days before them settled, or not at all", async () => {
  const a = await evaluatedPhase('Short insert A')
  const b = await evaluatedPhase('Short insert B')
  const ctx = t.ctx as unknown as PropCtx
  const lower = () =>
    t.ctx.db.execute({
      sql: 'update prop_phases set highest_eod_balance = highest_eod_balance - 500 where id = ?',
      args: [a.phase],
    })
  // A's highest end-of-day balance below its balance: the next day's first pass raises it to the day's start
  await lower()
  clock.advance(DAY)
  // the statements of the chunk's changes fail after the day rows' insert (a writer timeout, a lost
  // connection): nothing of the pass stays, not A's row without its day before settled
  const failing = Object.create(ctx) as PropCtx
  const failingTx = (tx: Tx) =>
    new Proxy(tx, {
      get(target, key) {
        if (key === 'run') return () => Promise.reject(new Error('the transaction failed'))
        const v = Reflect.get(target, key)
        return typeof v === 'function' ? v.bind(target) : v
      },
    })
  failing.uow = {
    run: (fn: Parameters<PropCtx['uow']['run']>[0], order?: WriteOrder) =>
      ctx.uow.run((tx, work) => fn(failingTx(tx), work), order),
  } as unknown as PropCtx['uow']
  const first = engineRacing(b.phase, b.zone)
  await expect(evaluateAll(failing, first.trading)).rejects.toThrow('the transaction failed')
  expect(first.raced()).toBe(true)
  expect(await startsOf(a.phase)).toHaveLength(1)
  // the next pass settles A's day before today, with its end in the highest balance, and B's row
  await t.runJob('prop.evaluate')
  const aDays = await startsOf(a.phase)
  expect(aDays.map((d) => d[2])).toEqual([1, 1])
  expect(await highestOf(a.phase)).toBe(aDays[1]![0])
  expect((await startsOf(b.phase)).map((d) => d[2])).toEqual([1, 1])
  // and when the short insert's transaction commits, A's day commits settled with the day before it
  await lower()
  clock.advance(DAY)
  const second = engineRacing(b.phase, b.zone)
  await evaluateAll(ctx, second.trading)
  expect(second.raced()).toBe(true)
  const after = await startsOf(a.phase)
  expect(after.map((d) => d[2])).toEqual([1, 1, 1])
  expect(await highestOf(a.phase)).toBe(after[2]![0])
  expect((await startsOf(b.phase)).map((d) => d[2])).toEqual([1, 1, 1])
})

test("days no pass settled (the evaluator stopped while the engine took each day's snapshot): each ends where the next started, all settled by the next pass", async () => {
  const { phase, zone, challenge } = await evaluatedPhase('Missed days')
  // two days without a pass: the engine's first tick of each takes its snapshot
  for (let k = 1; k <= 2; k++) {
    clock.advance(DAY)
    // the first of them the higher: its start is the end of the day before, not of the last one
    const figures = { balance: 1_000_000 + 3 - k, equity: 999_000 + k }
    await daySnapshots(t.ctx as unknown as PropCtx, [
      { phaseId: phase, day: localDay(clock.now(), zone), now: figures },
    ])
  }
  clock.advance(DAY)
  await t.runJob('prop.evaluate')
  const days = await startsOf(phase)
  expect(days).toHaveLength(4)
  // the pass settled the engine's two rows with the day it inserted
  expect(days.map((d) => d[2])).toEqual([1, 1, 1, 1])
  // each day ends where the next one started, as the metrics show it
  const metrics = (await metricsOf(challenge)).reverse()
  expect(metrics).toHaveLength(4)
  for (let k = 0; k < 3; k++) {
    expect(metrics[k]!.end_balance).toBe(metrics[k + 1]!.start_balance)
    expect(metrics[k]!.end_equity).toBe(metrics[k + 1]!.start_equity)
  }
  expect(metrics[3]!.end_balance).toBeNull()
  // every day's end counts for the highest end-of-day balance: the engine's first snapshot is the highest
  // (today started at the account's balance, 1,000,000)
  expect(days[3]![0]).toBe(1_000_000)
  expect(await highestOf(phase)).toBe(1_000_002)
})

test('two passes that overlap: the one that read the phase first does not undo the recount the other wrote', async () => {
  // Sunday 2026-12-20, 23:40 in Prague
  clock.set(Date.UTC(2026, 11, 20, 22, 40))
  const { login } = await challengeOf(
    { profit_target_pct: 50, daily_loss_pct: 5, total_loss_pct: 10 },
    'Overlap',
  )
  const phaseRow = async () =>
    (
      await t.ctx.db.execute({
        sql: 'select id, trading_days, last_trading_day from prop_phases where account_login = ? and status = 1',
        args: [login],
      })
    ).rows[0]!
  const openOne = async () => {
    dealer = await t.staffToken(3, 'dealer-pass-1')
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
    const token = (await t.request('POST', '/sign/in', { body: { login, password: 'challenge-pass-1' } }))
      .json.__token as string
    const o = await t.request('POST', '/trade/open', {
      token,
      body: { login, cmd: 0, volume: 1, symbol: 'EURUSD', sl: 0, tp: 0 },
    })
    expect(o.status).toBe(200)
  }
  // pass B's context counts the phase on Sunday
  const b = t.ctx as unknown as PropCtx
  const trading = t.ports.get(TradingPort)
  await openOne()
  await evaluateAll(b, trading)
  const phase = Number((await phaseRow()).id)
  expect(phase % 1_440).toBeLessThan(22 * 60)
  expect(Number((await phaseRow()).trading_days)).toBe(1)
  // Monday 00:05: another position; the count has lost Sunday (planted): two days traded, none counted
  clock.set(Date.UTC(2026, 11, 20, 23, 5))
  await openOne()
  await t.ctx.db.execute({ sql: 'update prop_phases set trading_days = 0 where id = ?', args: [phase] })
  // B reads the phase (0 days, the last Sunday), then, while it reads the recent positions, pass A (a
  // process of its own: every position counted anew) writes the right count; B then adds Monday to 0
  let overlapped = 0
  const racing: TradingApi = {
    ...trading,
    recentPositionsOf: async (logins, since) => {
      if (!overlapped++) await evaluateAll({ ...t.ctx } as unknown as PropCtx, trading)
      return trading.recentPositionsOf(logins, since)
    },
  }
  await evaluateAll(b, racing)
  expect(overlapped).toBeGreaterThan(0)
  const after = await phaseRow()
  expect([Number(after.trading_days), String(after.last_trading_day)]).toEqual([2, '2026-12-21'])
})
