// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { AccountsPort } from '../../src/modules/accounts'
import { PropPort } from '../../src/modules/prop'
import type { PropCtx } from '../../src/modules/prop/context'
import { localDay } from '../../src/modules/prop/domain/rules'
import { evaluateAll } from '../../src/modules/prop/evaluator'
import { PropWatch } from '../../src/modules/prop/live'
import { propDays } from '../../src/modules/prop/schema'
import { daySnapshot, figuresOf, recordBreach } from '../../src/modules/prop/state'
import { type TradingApi, TradingPort } from '../../src/modules/trading'
import { makeTestApp, type TestApp } from '../support/app'
import { buyChallenge } from '../support/prop'
import { quoteIngest } from '../support/quotes'

/**
 * Findings of a hostile probe of the prop module: a payout read as a trading loss, a passed phase funding
 * two accounts, a target passed after the time limit, a late breach of a passed phase failing the
 * challenge.
 */

// Monday 10:00 Prague
const clock = new ManualClock(Date.UTC(2026, 10, 23, 9, 0, 0))
const DAY = 86_400_000
const PASSWORD = 'phase-pass-1'
let t: TestApp
let customer: string
let manager: string
let dealer: string
const ingest = quoteIngest(
  () => t,
  clock,
  () => dealer,
)
const px = (x: number) => Math.round(x * 100_000) / 100_000

beforeAll(async () => {
  t = await makeTestApp({ clock })
  await signInStaff()
  await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
})
afterAll(() => t.close())

/** Sessions again after the clock moved by days. */
async function signInStaff() {
  customer = await t.customerToken()
  manager = await t.staffToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
}

const propCtx = () =>
  ({
    ...t.ctx,
    accounts: t.ports.get(AccountsPort),
    steps: t.ports.get(PropPort).steps,
  }) as unknown as PropCtx

/** One evaluation step (target 1%, one trading day), then the funded step with `funded`'s rules. */
const program = async (funded: Record<string, unknown> = {}, evaluation: Record<string, unknown> = {}) => {
  const rules = {
    profit_target_pct: 1,
    daily_loss_pct: 5,
    total_loss_pct: 10,
    min_trading_days: 1,
    ...evaluation,
  }
  const created = await t.request('POST', '/manager/prop/programs', {
    token: manager,
    body: {
      name: `Findings ${Math.random()}`,
      price: 10,
      currency: 'USD',
      active: true,
      time_zone: 'Europe/Prague',
      steps: [
        { account_group: 'prop\\eval\\USD', phase_type: 0, rules },
        {
          account_group: 'prop\\funded\\USD',
          phase_type: 1,
          profit_split: 0.8,
          rules: { ...rules, profit_target_pct: 0, min_trading_days: 0, ...funded },
        },
      ],
    },
  })
  expect(created.status).toBe(200)
  return created.json.id as number
}

const detail = async (id: number) =>
  (await t.request('GET', `/prop/challenges/${id}`, { token: customer })).json
const open = (login: number, token: string, volume = 100) =>
  t.request('POST', '/trade/open', { token, body: { login, cmd: 0, volume, symbol: 'EURUSD', sl: 0, tp: 0 } })

/** Buys 1 lot at the ask, moves the bid `pips` over it, closes: about 10 USD of profit a pip. */
async function profitAndClose(login: number, token: string, pips = 0.003) {
  const o = await open(login, token)
  expect(o.status).toBe(200)
  const ask = o.json.trade.open_price as number
  await ingest([{ symbol: 'EURUSD', bid: px(ask + pips), ask: px(ask + pips + 0.0002) }])
  const closed = await t.request('DELETE', '/trade/close', { token, body: { order: o.json.order } })
  expect(closed.status).toBe(200)
}

/** A phase account's password set by staff, and its session. */
async function signInPhase(login: number) {
  const pw = await t.request('PUT', '/password', { token: manager, body: { login, password: PASSWORD } })
  expect(pw.status).toBe(200)
  return (await t.request('POST', '/sign/in', { body: { login, password: PASSWORD } })).json.__token as string
}

/** A challenge of `programId` through its evaluation, to its funded phase. */
async function reachFunded(programId: number) {
  const c = await buyChallenge(t, customer, programId)
  await t.runJob('prop.evaluate')
  await profitAndClose(c.login, c.token)
  await t.runJob('prop.evaluate')
  const d = await detail(c.challenge)
  expect(d.current_phase.phase_type).toBe(1)
  const login = d.current_phase.account_login as number
  return { challenge: c.challenge, login, token: await signInPhase(login), evalLogin: c.login }
}

/** Accounts of the funded group, with how many phases trade on each. */
const fundedAccounts = async () =>
  (
    await t.ctx.db.execute({
      sql: `select a.login, a.balance, (select count(*) from prop_phases p where p.account_login = a.login) as phases
        from accounts a join groups g on g.id = a.group_id where g.name = 'prop\\funded\\USD' order by a.login`,
      args: [],
    })
  ).rows.map((r) => ({ login: Number(r.login), balance: Number(r.balance), phases: Number(r.phases) }))

describe('a payout is no trading loss', () => {
  for (const mode of ['static', 'trailing'] as const)
    test(`the day's start and the highest end-of-day balance move down with it (${mode})`, async () => {
      const f = await reachFunded(await program({ total_loss_mode: mode }))
      // about 793 USD of profit on the funded account, ended with the day
      await profitAndClose(f.login, f.token, 0.008)
      await t.runJob('prop.evaluate')
      clock.advance(DAY)
      await signInStaff()
      f.token = (
        await t.request('POST', '/sign/in', { body: { login: f.login, password: PASSWORD } })
      ).json.__token
      await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
      // the day's first pass: its start is the balance with the profit, the highest end-of-day balance too
      await t.runJob('prop.evaluate')
      const paid = await t.request('POST', `/prop/challenges/${f.challenge}/payout`, {
        token: customer,
        body: {},
      })
      expect(paid.status).toBe(200)
      const profit = paid.json.payout.profit as number
      expect(profit).toBeGreaterThan(500)
      await t.settle()
      // the engine's watch learnt it: a look at the account now (a position and a tick) is no breach
      const o = await open(f.login, f.token, 10)
      expect(o.status).toBe(200)
      await ingest([{ symbol: 'EURUSD', bid: 1.0999, ask: 1.1001 }])
      expect((await detail(f.challenge)).challenge.status_name).toBe('active')
      // nor is the evaluator's pass: both limits measure from the moved anchors
      await t.runJob('prop.evaluate')
      const d = await detail(f.challenge)
      expect([d.challenge.status_name, d.current_phase.status_name, d.latest_breach]).toEqual([
        'active',
        'active',
        null,
      ])
      expect(d.current_phase.progress.daily_loss_pct).toBeLessThan(0.1)
      expect(d.current_phase.progress.total_loss_pct).toBeLessThan(0.1)
      const [phase] = (
        await t.ctx.db.execute({
          sql: 'select id, initial_balance, highest_eod_balance, time_zone from prop_phases where account_login = ?',
          args: [f.login],
        })
      ).rows
      expect(Number(phase!.highest_eod_balance)).toBe(Number(phase!.initial_balance))
      // a tick compared against the anchors from before the payout (a watch its PHASES_CHANGED has not
      // reached yet) records nothing: the breach is judged again against the rows
      const ctx = propCtx()
      const stale = await recordBreach(
        ctx,
        {
          id: Number(phase!.id),
          brandId: 1,
          challengeId: f.challenge,
          accountLogin: f.login,
          phaseIndex: 2,
          currency: 'USD',
          timeZone: String(phase!.time_zone),
          rules: JSON.stringify({ profit_target_pct: 0, daily_loss_pct: 5, total_loss_pct: 10 }),
        },
        { rule: 'daily_loss', limit: 50_000, anchor: 1_000_000 + profit * 100, observed: 1_000_000 },
        { balance: 1_000_000, equity: 1_000_000 },
        clock.now(),
      )
      expect(stale).toBe('stale')
      expect((await detail(f.challenge)).challenge.status_name).toBe('active')
      // a real loss is measured from the moved start: 1 lot 55 pips down loses over 500 (5% of 10,000)
      const loser = await open(f.login, f.token, 100)
      expect(loser.status).toBe(200)
      const ask = loser.json.trade.open_price as number
      await ingest([{ symbol: 'EURUSD', bid: px(ask - 0.0055), ask: px(ask - 0.0053) }])
      const failed = await detail(f.challenge)
      expect(failed.challenge.status_name).toBe('failed')
      expect(failed.latest_breach).toMatchObject({ rule: 'daily_loss', limit: 500 })
      expect(failed.latest_breach.anchor).toBeLessThan(10_001)
      await t.settle()
    })
})

describe('a passed phase opens one next account', () => {
  test('two overlapping passes: one funded account, one next phase', async () => {
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
    const c = await buyChallenge(t, customer, await program())
    await t.runJob('prop.evaluate')
    await profitAndClose(c.login, c.token)
    const before = await fundedAccounts()
    const trading = t.ports.get(TradingPort)
    const ctx = propCtx()
    await Promise.all([evaluateAll(ctx, trading), evaluateAll(ctx, trading)])
    const added = (await fundedAccounts()).slice(before.length)
    expect(added).toEqual([{ login: added[0]!.login, balance: 1_000_000, phases: 1 }])
    const d = await detail(c.challenge)
    expect(d.current_phase).toMatchObject({ phase_index: 2, account_login: added[0]!.login })
    expect(d.phases.map((p: { status_name: string }) => p.status_name)).toEqual(['passed', 'active'])
  })

  test('a promotion that fails leaves no account; the next pass opens exactly one', async () => {
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
    const c = await buyChallenge(t, customer, await program())
    await t.runJob('prop.evaluate')
    await profitAndClose(c.login, c.token)
    const before = await fundedAccounts()
    // the database refuses the next account's initial balance (busy, full: any failure after it opened)
    await t.ctx.db.execute({
      sql: `create trigger findings_no_funding before insert on balance_operations
        when new.comment = 'PROP_CHALLENGE_INITIAL_BALANCE' and new.login in
          (select a.login from accounts a join groups g on g.id = a.group_id where g.name = 'prop\\funded\\USD')
        begin select raise(abort, 'database busy'); end`,
      args: [],
    })
    try {
      await t.runJob('prop.evaluate')
      await t.runJob('prop.evaluate')
    } finally {
      await t.ctx.db.execute({ sql: 'drop trigger findings_no_funding', args: [] })
    }
    expect(await fundedAccounts()).toEqual(before)
    expect((await detail(c.challenge)).current_phase.phase_index).toBe(1)
    await t.runJob('prop.evaluate')
    await t.runJob('prop.evaluate')
    const added = (await fundedAccounts()).slice(before.length)
    expect(added).toEqual([{ login: added[0]!.login, balance: 1_000_000, phases: 1 }])
    const d = await detail(c.challenge)
    expect(d.current_phase).toMatchObject({ phase_index: 2, account_login: added[0]!.login })
  })
})

test('the day after the time limit, a target met fails on the limit', async () => {
  await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
  const c = await buyChallenge(t, customer, await program({}, { max_trading_days: 1 }))
  await t.runJob('prop.evaluate')
  // day 1: a trading day, its profit still open at the day's last pass
  const o = await open(c.login, c.token)
  expect(o.status).toBe(200)
  const ask = o.json.trade.open_price as number
  await ingest([{ symbol: 'EURUSD', bid: px(ask + 0.003), ask: px(ask + 0.0032) }])
  await t.runJob('prop.evaluate')
  expect((await detail(c.challenge)).challenge.status_name).toBe('active')
  // day 2, Prague: the profit closed, target met
  clock.advance(DAY)
  await signInStaff()
  const token = (
    await t.request('POST', '/sign/in', { body: { login: c.login, password: 'challenge-pass-1' } })
  ).json.__token
  await ingest([{ symbol: 'EURUSD', bid: px(ask + 0.003), ask: px(ask + 0.0032) }])
  expect((await t.request('DELETE', '/trade/close', { token, body: { order: o.json.order } })).status).toBe(
    200,
  )
  await t.runJob('prop.evaluate')
  const d = await detail(c.challenge)
  expect(d.challenge.status_name).toBe('failed')
  expect(d.latest_breach).toMatchObject({ rule: 'max_trading_days', limit: 1 })
})

test('a late breach of a passed phase changes nothing: the challenge goes on with the next phase', async () => {
  await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
  const c = await buyChallenge(t, customer, await program())
  await t.runJob('prop.evaluate')
  await profitAndClose(c.login, c.token)
  await t.runJob('prop.evaluate')
  const [old] = (
    await t.ctx.db.execute({
      sql: 'select * from prop_phases where challenge_id = ? and phase_index = 1',
      args: [c.challenge],
    })
  ).rows
  expect(Number(old!.status)).toBe(2)
  // the engine's watch still held phase 1 (its PHASES_CHANGED not read yet) and a tick broke its limit
  const r = await recordBreach(
    propCtx(),
    {
      id: Number(old!.id),
      brandId: Number(old!.brand_id),
      challengeId: c.challenge,
      accountLogin: c.login,
      phaseIndex: 1,
      currency: 'USD',
      timeZone: String(old!.time_zone),
      rules: String(old!.rules),
    },
    { rule: 'daily_loss', limit: 50_000, anchor: 1_000_000, observed: 940_000 },
    { balance: 940_000, equity: 940_000 },
    clock.now(),
  )
  expect(r).toBe('inactive')
  const d = await detail(c.challenge)
  expect([d.challenge.status_name, ...d.phases.map((p: { status_name: string }) => p.status_name)]).toEqual([
    'active',
    'passed',
    'active',
  ])
  expect(d.latest_breach).toBeNull()
})

/** A phase's row (by its account), as numbers. */
const phaseOf = async (login: number) => {
  const [r] = (
    await t.ctx.db.execute({
      sql: 'select id, status, initial_balance, highest_eod_balance, time_zone from prop_phases where account_login = ?',
      args: [login],
    })
  ).rows
  return {
    id: Number(r!.id),
    status: Number(r!.status),
    initialBalance: Number(r!.initial_balance),
    highest: Number(r!.highest_eod_balance),
    timeZone: String(r!.time_zone),
  }
}

describe('a payout no pass has counted yet', () => {
  // idle: days the engine started (its first look of the day made their rows) with no pass since; the
  // payout commits while the pass reads (between its reads and its writes), or before it
  for (const [idle, when] of [
    [0, 'while the pass reads'],
    [1, 'while the pass reads'],
    [1, 'before the pass'],
  ] as const)
    test(`raises no highest end-of-day balance from figures before it (${idle} day(s) without a pass, ${when})`, async () => {
      await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
      const f = await reachFunded(await program({ total_loss_mode: 'trailing' }))
      // about 1,200 USD of profit, ended with the day: more than the trailing 10% (1,000) room
      await profitAndClose(f.login, f.token, 0.012)
      await t.runJob('prop.evaluate')
      const ctx = propCtx()
      const phase = await phaseOf(f.login)
      // the highest is still the initial balance: yesterday's end is counted by the next day's first pass
      expect(phase.highest).toBe(phase.initialBalance)
      for (let d = 0; d <= idle; d++) {
        clock.advance(DAY)
        await signInStaff()
        await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
        // the engine's first look of the day: its row, unsettled, starts at the balance with the profit
        const now = await figuresOf(ctx, f.login)
        expect(now!.balance).toBeGreaterThan(phase.initialBalance + 110_000)
        await daySnapshot(ctx, phase.id, localDay(clock.now(), phase.timeZone), now!)
      }
      // the pass read the phase, the figures and the days; the payout commits before the pass writes
      const trading = t.ports.get(TradingPort)
      let paid: Awaited<ReturnType<TestApp['request']>> | null =
        when === 'before the pass'
          ? await t.request('POST', `/prop/challenges/${f.challenge}/payout`, { token: customer, body: {} })
          : null
      const payFirst =
        <A extends unknown[], R>(read: (...a: A) => Promise<R>) =>
        async (...a: A) => {
          paid ??= await t.request('POST', `/prop/challenges/${f.challenge}/payout`, {
            token: customer,
            body: {},
          })
          return read(...a)
        }
      const hooked: TradingApi = {
        ...trading,
        positionsOf: payFirst(trading.positionsOf),
        recentPositionsOf: payFirst(trading.recentPositionsOf),
      }
      await evaluateAll(ctx, hooked)
      expect(paid!.status).toBe(200)
      expect(paid!.json.payout.profit).toBeGreaterThan(1_100)
      // the payout left the highest at the initial balance: the pass's figures from before it raise nothing
      expect((await phaseOf(f.login)).highest).toBe(phase.initialBalance)
      expect((await detail(f.challenge)).challenge.status_name).toBe('active')
      // nor does the next pass fail the trader, whose equity is the initial balance
      await t.runJob('prop.evaluate')
      const d = await detail(f.challenge)
      expect([d.challenge.status_name, d.current_phase.status_name, d.latest_breach]).toEqual([
        'active',
        'active',
        null,
      ])
      expect((await phaseOf(f.login)).highest).toBe(phase.initialBalance)
    })
})

test("a reload that read yesterday's start keeps the day a look crossed midnight to", async () => {
  await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
  const c = await buyChallenge(t, customer, await program())
  await t.runJob('prop.evaluate')
  // a watch of its own, whose next read of the days (the reload's) first lets a look cross midnight
  const hook: { run: (() => Promise<unknown>) | null } = { run: null }
  const db = new Proxy(t.ctx.db, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown
      if (typeof v !== 'function') return v
      if (prop !== 'select') return v.bind(target)
      return (...args: unknown[]) => {
        const builder = v.apply(target, args)
        const from = builder.from.bind(builder)
        builder.from = (table: unknown) => {
          const q = from(table)
          const run = hook.run
          if (table !== propDays || !run) return q
          hook.run = null
          // the read (`select … from prop_days where …`) starts once the hook has run
          const where = q.where.bind(q)
          q.where = (...w: unknown[]) => {
            const read = where(...w)
            return run().then(() => read)
          }
          return q
        }
        return builder
      }
    },
  })
  const watch = new PropWatch({ ...propCtx(), db } as PropCtx)
  await watch.load()
  const yesterday = clock.now()
  await watch.check(c.login, { balance: 1_000_000, equity: 1_000_000 }, yesterday)
  clock.advance(DAY)
  const today = clock.now()
  // today starts at 10,100: the look that crosses midnight makes its row
  hook.run = () => watch.check(c.login, { balance: 1_010_000, equity: 1_010_000 }, today)
  const [phase] = (
    await t.ctx.db.execute({ sql: 'select id from prop_phases where account_login = ?', args: [c.login] })
  ).rows
  await watch.reload([Number(phase!.id)])
  expect(hook.run).toBeNull()
  const held = (
    watch as unknown as { byLogin: Map<number, { day: string; dayStartEquity: number }> }
  ).byLogin.get(c.login)
  expect(held).toMatchObject({ day: localDay(today, 'Europe/Prague'), dayStartEquity: 1_010_000 })
  await signInStaff()
})

test('a promotion whose challenge is not on the phase rolls back whole', async () => {
  await signInStaff()
  await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
  const c = await buyChallenge(t, customer, await program())
  await t.runJob('prop.evaluate')
  await profitAndClose(c.login, c.token)
  const before = await fundedAccounts()
  // the challenge moved on (another writer): the phase's pass must not commit without it
  await t.ctx.db.execute({
    sql: 'update prop_challenges set current_phase_index = 7 where id = ?',
    args: [c.challenge],
  })
  try {
    await t.runJob('prop.evaluate')
  } finally {
    await t.ctx.db.execute({
      sql: 'update prop_challenges set current_phase_index = 1 where id = ?',
      args: [c.challenge],
    })
  }
  expect(await fundedAccounts()).toEqual(before)
  const phases = (
    await t.ctx.db.execute({
      sql: 'select phase_index, status from prop_phases where challenge_id = ? order by phase_index',
      args: [c.challenge],
    })
  ).rows.map((r) => [Number(r.phase_index), Number(r.status)])
  expect(phases).toEqual([[1, 1]])
  // with the challenge on the phase again, the next pass promotes it once
  await t.runJob('prop.evaluate')
  const added = (await fundedAccounts()).slice(before.length)
  expect(added).toEqual([{ login: added[0]!.login, balance: 1_000_000, phases: 1 }])
  const d = await detail(c.challenge)
  expect(d.current_phase).toMatchObject({ phase_index: 2, account_login: added[0]!.login })
})
