// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { PropPort } from '../../src/modules/prop'
import { makeTestApp, type TestApp } from '../support/app'
import { buyChallenge } from '../support/prop'
import { quoteIngest } from '../support/quotes'

/**
 * Prop challenges driven by ingested quotes (issue 20): a breach caught on the tick that caused it, and a
 * challenge that passes its evaluation phases, reaches the funded account and pays out.
 */

const clock = new ManualClock(Date.UTC(2026, 10, 23, 9, 0, 0))
let t: TestApp
let customer: string
let manager: string
let dealer: string
const ingest = quoteIngest(
  () => t,
  clock,
  () => dealer,
)

beforeAll(async () => {
  t = await makeTestApp({ clock })
  customer = await t.customerToken()
  manager = await t.staffToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
})
afterAll(() => t.close())

const buy = (programId: number) => buyChallenge(t, customer, programId)

const open = (login: number, token: string, volume = 100) =>
  t.request('POST', '/trade/open', { token, body: { login, cmd: 0, volume, symbol: 'EURUSD', sl: 0, tp: 0 } })
const detail = async (id: number) =>
  (await t.request('GET', `/prop/challenges/${id}`, { token: customer })).json

describe("the day's first evaluator pass", () => {
  test('writes the day row with the activity it finds (positions opened, a trading day); a second pass changes nothing', async () => {
    const programs = (await t.request('GET', '/prop/programs', { token: customer })).json.rows
    const c = await buy(programs.find((p: { name: string }) => p.name === 'Two-Step 10k').id)
    expect((await open(c.login, c.token, 10)).status).toBe(200)
    expect((await open(c.login, c.token, 10)).status).toBe(200)
    // no row for the day yet: the pass is the day's first (the engine may have taken it on a tick)
    const phase = (await detail(c.challenge)).current_phase.id as number
    await t.ctx.db.execute({ sql: 'delete from prop_days where phase_id = ?', args: [phase] })
    await t.runJob('prop.evaluate')
    const rows = async () =>
      (await t.request('GET', `/prop/challenges/${c.challenge}/metrics`, { token: customer })).json.rows
    const first = await rows()
    expect(first).toHaveLength(1)
    expect(first[0]).toMatchObject({ positions_opened: 2, trading_day: true })
    expect(first[0].min_equity).toBe(first[0].start_equity)
    const stored = async () =>
      (
        await t.ctx.db.execute({
          sql: 'select * from prop_days where phase_id = ? order by day',
          args: [phase],
        })
      ).rows.map((r) => ({ ...r }))
    const before = await stored()
    await t.runJob('prop.evaluate')
    expect(await stored()).toEqual(before)
    expect(await rows()).toEqual(first)
  })
})

describe('a breach on a tick', () => {
  test('daily loss: warned at 80%, then failed at the breaching quote within that tick', async () => {
    const programs = (await t.request('GET', '/prop/programs', { token: customer })).json.rows
    const c = await buy(programs.find((p: { name: string }) => p.name === 'Two-Step 10k').id)
    // the day's first evaluator pass snapshots the start equity: 10,000
    await t.runJob('prop.evaluate')
    const o = await open(c.login, c.token)
    expect(o.status).toBe(200)
    // 1 lot EURUSD bought at 1.1002: 10 USD a pip. Bid 1.0962 loses 400 + commission: over 80% of 500
    await ingest([{ symbol: 'EURUSD', bid: 1.0962, ask: 1.0964 }])
    expect((await detail(c.challenge)).challenge.status_name).toBe('active')
    // bid 1.0950 loses 520: equity under 9,500, the daily floor (10,000 - 5% of 10,000)
    const breachAt = clock.now() + 1000
    await ingest([{ symbol: 'EURUSD', bid: 1.095, ask: 1.0952 }])
    const d = await detail(c.challenge)
    expect(d.challenge.status_name).toBe('failed')
    expect(d.current_phase.status_name).toBe('failed')
    expect(d.latest_breach).toMatchObject({
      rule: 'daily_loss',
      limit: 500,
      anchor: 10_000,
      tick_time_ms: breachAt,
      tick_time: Math.floor(breachAt / 1000),
    })
    expect(d.latest_breach.observed_equity).toBeLessThanOrEqual(9500)
    // the position was closed at the breaching quote, and the account trades no more
    const history = await t.request('GET', `/trade/history?login=${c.login}`, { token: c.token })
    expect(history.json.rows[0]).toMatchObject({ close_price: 1.095 })
    expect(
      (await t.request('GET', `/trade/list?login=${c.login}`, { token: c.token })).json.rows ?? [],
    ).toEqual([])
    // the refusal says why: the challenge failed on its breach (spec 4.7 keeps the 500 of a trade error)
    const again = await open(c.login, c.token)
    expect(again.status).toBe(500)
    expect(again.json.error).toBe('OPEN_ORDER_ERROR')
    expect(again.json.message).toBe(
      `account is read-only: challenge ${c.challenge} failed: phase 1 breached its daily_loss limit (breach ${d.latest_breach.id})`,
    )
    // another tick: still one breach
    await ingest([{ symbol: 'EURUSD', bid: 1.09, ask: 1.0902 }])
    const breaches = await t.request('GET', `/prop/challenges/${c.challenge}/breaches`, { token: customer })
    expect(breaches.json.rows).toHaveLength(1)
    await t.settle()
    const notes = await t.request('GET', '/notify/list?limit=20&offset=0&filter=', { token: c.token })
    const tokens = notes.json.rows.map((n: unknown[]) => n[1])
    expect(tokens).toEqual(expect.arrayContaining(['prop.warning', 'prop.breach']))
  })
})

describe('warnings, written after the look that reached them', () => {
  const twoStep = async () =>
    (await t.request('GET', '/prop/programs', { token: customer })).json.rows.find(
      (p: { name: string }) => p.name === 'Two-Step 10k',
    ).id as number
  const propEvents = async (login: number) =>
    (
      await t.ctx.db.execute({
        sql: "select id, topic from outbox where topic in ('prop.warning', 'prop.breached') and json_extract(payload, '$.login') = ? order by id",
        args: [login],
      })
    ).rows.map((r) => r.topic as string)
  const warnings = async (challenge: number) =>
    (
      await t.ctx.db.execute({
        sql: 'select rule, level from prop_warnings w join prop_phases p on p.id = w.phase_id where p.challenge_id = ?',
        args: [challenge],
      })
    ).rows.map((r) => `${r.rule}:${r.level}`)

  test('a look that reaches a warning level writes nothing itself; the warnings of the pass are written after it, each once', async () => {
    const program = await twoStep()
    const a = await buy(program)
    const b = await buy(program)
    await t.runJob('prop.evaluate')
    const watch = t.ports.get(PropPort).watch
    const at = clock.now()
    // a first look at no loss takes the day's snapshot (a write), so the looks below need none
    for (const c of [a, b]) await watch.check(c.login, { balance: 1_000_000, equity: 1_000_000 }, at)
    // figures in cents: 410.00 lost of the 500.00 a day allows, 82 %, over the 80 % level. The looks run
    // while a transaction holds the writer: a look that wrote its warning would wait for it, for ever
    await t.ctx.db.transaction(async () => {
      for (const c of [a, b]) await watch.check(c.login, { balance: 1_000_000, equity: 959_000 }, at)
    })
    await Bun.sleep(50)
    for (const c of [a, b]) {
      expect(await warnings(c.challenge)).toEqual(['daily_loss:80'])
      expect(await propEvents(c.login)).toEqual(['prop.warning'])
    }
    // the level is not sent again that day
    await watch.check(a.login, { balance: 1_000_000, equity: 958_000 }, at)
    await Bun.sleep(50)
    expect(await propEvents(a.login)).toEqual(['prop.warning'])
  })

  test('a breach right after a warning writes the warning first, in its transaction', async () => {
    const c = await buy(await twoStep())
    await t.runJob('prop.evaluate')
    const watch = t.ports.get(PropPort).watch
    const at = clock.now()
    expect(await watch.check(c.login, { balance: 1_000_000, equity: 959_000 }, at)).not.toBe('close')
    // the next look, before the warning's flush: 600 lost, over the limit
    expect(await watch.check(c.login, { balance: 1_000_000, equity: 940_000 }, at)).toBe('close')
    expect(await warnings(c.challenge)).toEqual(['daily_loss:80'])
    expect(await propEvents(c.login)).toEqual(['prop.warning', 'prop.breached'])
    await Bun.sleep(50)
    expect(await propEvents(c.login)).toEqual(['prop.warning', 'prop.breached'])
  })
})

describe('what the price bands must not miss', () => {
  // the engine looks at an account only when a tick leaves its price band or the account changes
  // (domain/risk-band.ts): a band must also cover the symbols its conversion rate reads, and a balance
  // operation must bring the account to a look without any tick
  const twoStep = async () =>
    (await t.request('GET', '/prop/programs', { token: customer })).json.rows.find(
      (p: { name: string }) => p.name === 'Two-Step 10k',
    ).id as number

  test('a cross priced through another symbol: a tick of GBPUSD alone breaks the limit of an EURGBP position', async () => {
    await ingest([
      { symbol: 'EURGBP', bid: 0.86, ask: 0.8602 },
      { symbol: 'GBPUSD', bid: 1.27, ask: 1.2702 },
    ])
    const c = await buy(await twoStep())
    await t.runJob('prop.evaluate')
    const o = await t.request('POST', '/trade/open', {
      token: c.token,
      body: { login: c.login, cmd: 0, volume: 100, symbol: 'EURGBP', sl: 0, tp: 0 },
    })
    expect(o.status).toBe(200)
    // 32 pips on 1 lot = 320 GBP, at GBPUSD 1.27 about 406 USD of the 500 allowed
    await ingest([{ symbol: 'EURGBP', bid: 0.857, ask: 0.8572 }])
    expect((await detail(c.challenge)).challenge.status_name).toBe('active')
    // the pound alone rises: 320 GBP are now 544 USD
    // a jump this size is held back by the spike filter until two later ticks confirm it (market README):
    // the breach is at the tick that is applied, the third
    const breachAt = clock.now() + 3000
    const pound = { symbol: 'GBPUSD', bid: 1.7, ask: 1.7002 }
    for (let i = 0; i < 3; i++) await ingest([pound])
    const d = await detail(c.challenge)
    expect(d.challenge.status_name).toBe('failed')
    expect(d.latest_breach).toMatchObject({ rule: 'daily_loss', tick_time_ms: breachAt })
    const back = { symbol: 'GBPUSD', bid: 1.27, ask: 1.2702 }
    await ingest([back, back, back])
  })

  test('a balance correction by staff, with no tick after it, is looked at', async () => {
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
    const c = await buy(await twoStep())
    await t.runJob('prop.evaluate')
    expect((await open(c.login, c.token)).status).toBe(200)
    // a small floating loss (about 170 USD), far from the 9,500 floor
    await ingest([{ symbol: 'EURUSD', bid: 1.0985, ask: 1.0987 }])
    expect((await detail(c.challenge)).challenge.status_name).toBe('active')
    const w = await t.request('POST', `/manager/accounts/${c.login}/balance`, {
      token: manager,
      body: { type: 'withdrawal', amount: 400, comment: 'correction' },
    })
    expect(w.status).toBe(200)
    // the relay delivers the operation to prop, which has the engine look at the account
    await t.settle()
    for (let i = 0; i < 50 && (await detail(c.challenge)).challenge.status_name === 'active'; i++)
      await Bun.sleep(10)
    const d = await detail(c.challenge)
    expect(d.challenge.status_name).toBe('failed')
    expect(d.latest_breach.rule).toBe('daily_loss')
  })
})

describe('passing: phase 1, phase 2, funded, payout', () => {
  async function profitAndClose(login: number, token: string) {
    const o = await open(login, token)
    expect([o.status, o.json.error, o.json.message]).toEqual([200, undefined, undefined])
    const ask = o.json.trade.open_price as number
    // 30 pips up on 1 lot: about 300 USD over a 1% (100 USD) target
    const px = (x: number) => Math.round(x * 100_000) / 100_000
    await ingest([{ symbol: 'EURUSD', bid: px(ask + 0.003), ask: px(ask + 0.0032) }])
    const closed = await t.request('DELETE', '/trade/close', { token, body: { order: o.json.order } })
    expect(closed.status).toBe(200)
  }

  test('one pass over phases of different rules judges each phase by its own', async () => {
    // the same profit (~3%) passes a 1% target and not a 20% one; the pass reads both rules together
    const challenge = async (target: number) => {
      const created = await t.request('POST', '/manager/prop/programs', {
        token: manager,
        body: {
          name: `Target ${target}`,
          price: 10,
          currency: 'USD',
          active: true,
          steps: [
            {
              account_group: 'prop\\eval\\USD',
              phase_type: 0,
              rules: { profit_target_pct: target, daily_loss_pct: 5, total_loss_pct: 10 },
            },
          ],
        },
      })
      expect(created.status).toBe(200)
      return buy(created.json.id)
    }
    const easy = await challenge(1)
    const hard = await challenge(20)
    await t.runJob('prop.evaluate')
    await profitAndClose(easy.login, easy.token)
    await profitAndClose(hard.login, hard.token)
    await t.runJob('prop.evaluate')
    expect((await detail(easy.challenge)).challenge.status_name).toBe('passed')
    expect((await detail(hard.challenge)).challenge.status_name).toBe('active')
  })

  test('each target met with its trading day opens the next phase; the funded trader takes 80% of the profit', async () => {
    const rules = { profit_target_pct: 1, daily_loss_pct: 5, total_loss_pct: 10, min_trading_days: 1 }
    // `evaluations` evaluation steps, then the funded one with this split
    const quick = (evaluations: number, profit_split: number) => ({
      name: 'Quick',
      price: 10,
      currency: 'USD',
      active: true,
      time_zone: 'America/New_York',
      steps: [
        ...Array.from({ length: evaluations }, () => ({
          account_group: 'prop\\eval\\USD',
          phase_type: 0,
          rules,
        })),
        {
          account_group: 'prop\\funded\\USD',
          phase_type: 1,
          profit_split,
          rules: { ...rules, profit_target_pct: 0, min_trading_days: 0 },
        },
      ],
    })
    const created = await t.request('POST', '/manager/prop/programs', { token: manager, body: quick(2, 0.8) })
    expect(created.status).toBe(200)
    const c = await buy(created.json.id)
    // replaced after the purchase: one evaluation step, a 10% split; this challenge keeps what it bought
    const edited = await t.request('PUT', `/manager/prop/programs/${created.json.id}`, {
      token: manager,
      body: quick(1, 0.1),
    })
    expect(edited.status).toBe(200)
    let login = c.login
    let token = c.token
    for (const phase of [1, 2]) {
      await t.runJob('prop.evaluate')
      await profitAndClose(login, token)
      await t.runJob('prop.evaluate')
      const d = await detail(c.challenge)
      expect(d.phases[phase - 1].status_name).toBe('passed')
      expect(d.challenge).toMatchObject({ status_name: 'active', current_phase_index: phase + 1 })
      expect(d.current_phase).toMatchObject({ status_name: 'active', initial_balance: 10_000 })
      // the passed account trades no more; the next one signs in with a password set by staff
      expect((await open(login, token)).status).not.toBe(200)
      login = d.current_phase.account_login
      await t.request('PUT', `/manager/accounts/${login}`, { token: manager, body: { comment: 'prop' } })
      await t.request('PUT', '/password', { token: manager, body: { login, password: 'phase-pass-1' } })
      token = (await t.request('POST', '/sign/in', { body: { login, password: 'phase-pass-1' } })).json
        .__token
    }
    const funded = await detail(c.challenge)
    expect(funded.current_phase).toMatchObject({ phase_type: 1, account_group: 'prop\\funded\\USD' })
    // nothing to take yet
    const early = await t.request('POST', `/prop/challenges/${c.challenge}/payout`, {
      token: customer,
      body: {},
    })
    expect([early.status, early.json.error]).toEqual([409, 'NO_PROFIT'])
    // a hedge whose winning side is closed: the balance shows ~300 of profit, the open side has lost it
    // (a hostile client's probe: it was paid out, and the loss closed after it)
    const buy1 = await open(login, token)
    const sell1 = await t.request('POST', '/trade/open', {
      token,
      body: { login, cmd: 1, volume: 100, symbol: 'EURUSD', sl: 0, tp: 0 },
    })
    expect([buy1.status, sell1.status]).toEqual([200, 200])
    const ask = buy1.json.trade.open_price as number
    const px = (x: number) => Math.round(x * 100_000) / 100_000
    await ingest([{ symbol: 'EURUSD', bid: px(ask + 0.003), ask: px(ask + 0.0032) }])
    expect(
      (await t.request('DELETE', '/trade/close', { token, body: { order: buy1.json.order } })).status,
    ).toBe(200)
    expect(
      (await t.request('GET', `/manager/accounts/${login}`, { token: manager })).json.balance,
    ).toBeGreaterThan(10_200)
    // a credit is not the trader's result: it covers no floating loss either (a review's finding)
    const creditOp = (type: string) =>
      t.request('POST', `/manager/accounts/${login}/balance`, {
        token: manager,
        body: { type, amount: 1000, comment: 'bonus' },
      })
    expect((await creditOp('credit_in')).status).toBe(200)
    const hedged = await t.request('POST', `/prop/challenges/${c.challenge}/payout`, {
      token: customer,
      body: {},
    })
    expect([hedged.status, hedged.json.error]).toEqual([409, 'NO_PROFIT'])
    expect((await creditOp('credit_out')).status).toBe(200)
    expect(
      (await t.request('DELETE', '/trade/close', { token, body: { order: sell1.json.order } })).status,
    ).toBe(200)
    await profitAndClose(login, token)
    const balance = (await t.request('GET', `/manager/accounts/${login}`, { token: manager })).json
      .balance as number
    const payerBefore = (await t.request('GET', '/manager/accounts/100001', { token: manager })).json
      .balance as number
    // asked five times at once: the profit leaves once
    const asked = await Promise.all(
      Array.from({ length: 5 }, () =>
        t.request('POST', `/prop/challenges/${c.challenge}/payout`, { token: customer, body: {} }),
      ),
    )
    const paid = asked.filter((r) => r.status === 200)
    expect(paid).toHaveLength(1)
    for (const r of asked) if (r.status !== 200) expect(r.json.error).toBe('NO_PROFIT')
    const p = paid[0]!
    const profit = Math.round((balance - 10_000) * 100) / 100
    expect(p.json.payout).toMatchObject({ seq: 1, profit, profit_split: 0.8 })
    expect(p.json.payout.share).toBe(Math.floor(profit * 80) / 100)
    expect((await t.request('GET', `/manager/accounts/${login}`, { token: manager })).json.balance).toBe(
      10_000,
    )
    expect((await t.request('GET', '/manager/accounts/100001', { token: manager })).json.balance).toBe(
      Math.round((payerBefore + p.json.payout.share) * 100) / 100,
    )
    const again = await t.request('POST', `/prop/challenges/${c.challenge}/payout`, {
      token: customer,
      body: {},
    })
    expect(again.json.error).toBe('NO_PROFIT')
    // the funded account holds the firm's capital: no deposit, no withdrawal, no fee paid with it
    const methods = await t.request('GET', `/cashier/methods?login=${login}`, { token: customer })
    expect([methods.status, methods.json.error]).toEqual([403, 'ACCOUNT_MANAGED'])
    const deposit = await t.request('POST', '/cashier/deposit', {
      token: customer,
      body: { login, method: 'card', amount: 100 },
    })
    expect([deposit.status, deposit.json.error]).toEqual([403, 'ACCOUNT_MANAGED'])
    const payers = await t.request('GET', `/prop/programs/${created.json.id}/payers`, { token: customer })
    expect(payers.json.rows.find((r: { login: number }) => r.login === login)).toMatchObject({
      can_pay: false,
      reason: 'INVALID_PAYER_ACCOUNT',
    })
    const paidWithCapital = await t.request('POST', '/prop/challenge/buy', {
      token: customer,
      body: { program_id: created.json.id, payer_login: login },
    })
    expect(paidWithCapital.json.error).toBe('INVALID_PAYER_ACCOUNT')
    // nor a copy subscription, whose fees it would pay
    const masters = await t.request('GET', '/copytrade/masters', { token: customer })
    const master = masters.json.rows[0]
    expect(master).toBeDefined()
    await t.request('POST', '/copytrade/follower', { token: customer, body: { login } })
    const follow = await t.request('POST', '/copytrade/subscription', {
      token: customer,
      body: { follower_login: login, master_id: master.id, policy_version: master.policy_version },
    })
    expect([follow.status, follow.json.error]).toEqual([403, 'INVALID_ACCOUNT'])
    const metrics = await t.request('GET', `/prop/challenges/${c.challenge}/metrics`, { token: customer })
    expect(metrics.json.rows.some((r: { trading_day: boolean }) => r.trading_day)).toBe(true)
  })
})
