// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// copytrade probe 4: terms accepted while a copy's close is on its way, a fee on a net loss not delivered
// yet, sizing and fees on money the account no longer has, a master's SL/TP change lost for a copy in
// flight, and the master's login shown to its followers
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Tx } from '../../src/kernel/db/client'
import type { DeliveredEvent } from '../../src/kernel/events/topic'
import { TradeClosed, TradePartiallyClosed, TradingPort } from '../../src/modules/trading'
import { makeTestApp, type TestApp } from '../support/app'
import { copyFeeWorld, followMaster } from '../support/copy-fees'

describe('terms and fees while a copy close is on its way', () => {
  let w: Awaited<ReturnType<typeof copyFeeWorld>>
  beforeAll(async () => {
    w = await copyFeeWorld()
  })
  afterAll(() => w?.t.close())

  test('a copy closed under 10 % profit share, its close not yet delivered when 50 % terms are accepted: charged 10 %', async () => {
    await w.price(1.1)
    const masterLogin = await w.newAccount(50_000)
    const master = await w.master(masterLogin, { reward_type: 3, percent: 10 })
    const follower = await w.newAccount(50_000)
    await w.t.settle()
    const sub = await w.follow(follower, master, { volume_mode: 1, volume_param: 1 })
    const o = await w.openTrade(masterLogin, 0, 100)
    await w.t.settle()
    expect(await w.positions(follower)).toHaveLength(1)
    await w.price(1.11)
    // the master raises its share for the future
    const up = await w.request('PUT', `/copytrade/master/${master}`, {
      reward_policy: { reward_type: 3, percent: 50 },
    })
    expect(up.status).toBe(200)
    const version = up.json.policy_version
    let accepted = 0
    await w.t.app.relay.whilePaused(async () => {
      expect((await w.closeTrade(masterLogin, o.order)).status).toBe(200)
      // one relay pass: the master's close is delivered and its copy closed; the copy's own close event waits
      await w.t.app.relay.pass()
      expect(await w.positions(follower)).toHaveLength(0)
      accepted = (await w.request('POST', `/copytrade/subscription/${sub}/terms`, { version })).status
    })
    await w.t.settle()
    await w.t.runJob('copytrade.settle')
    const rows = (await w.rewardsOf(sub)).filter((r) => r.reward_name === 'PROFIT_SHARE_PER_TRADE')
    expect(rows).toHaveLength(1)
    // the copy's gain was made (and closed) under the 10 % terms: whatever the answer to the acceptance was
    expect([accepted, rows[0]!.amount]).toEqual([accepted, Math.floor(rows[0]!.base! * 0.1) / 100])
  })

  test("a copy's loss closed but not yet delivered: ending the subscription charges no performance fee on a net loss", async () => {
    await w.price(1.1)
    const masterLogin = await w.newAccount(50_000)
    const master = await w.master(masterLogin, { reward_type: 1, percent: 20, period_days: 30 })
    const follower = await w.newAccount(50_000)
    await w.t.settle()
    const sub = await w.follow(follower, master, { volume_mode: 1, volume_param: 1 })
    await w.openTrade(masterLogin, 0, 100) // BUY 1 lot
    const sell = await w.openTrade(masterLogin, 1, 200) // SELL 2 lots
    await w.t.settle()
    expect(await w.positions(follower)).toHaveLength(2)
    // 100 pips up: the BUY copy gains ~1,000, the SELL copy loses ~2,000: the copies lost ~1,000 together
    await w.price(1.11)
    let ended = 0
    await w.t.app.relay.whilePaused(async () => {
      expect((await w.closeTrade(masterLogin, sell.order)).status).toBe(200)
      await w.t.app.relay.pass()
      expect(await w.positions(follower)).toHaveLength(1)
      ended = (await w.request('DELETE', `/copytrade/subscription/${sub}`)).status
    })
    await w.t.settle()
    await w.t.runJob('copytrade.settle')
    const fees = (await w.rewardsOf(sub)).filter((r) => r.reward_name === 'PERFORMANCE_FEE_HWM')
    const view = (await w.request('GET', `/copytrade/subscription/${sub}/fees`)).json
    expect(view.copy_result).toBeLessThan(0)
    // a net loss of the copies: no performance fee, whatever the answer to the end was
    expect([ended, fees.map((f) => f.amount)]).toEqual([ended, []])
  })
})

describe('sized and charged on the money the account has', () => {
  let w: Awaited<ReturnType<typeof copyFeeWorld>>
  beforeAll(async () => {
    w = await copyFeeWorld()
  })
  afterAll(() => w?.t.close())

  const list = async (login: number) =>
    (await w.t.request('GET', `/trade/list?login=${login}`, { token: await w.tradeToken(login) })).json as {
      positions: { order: number; volume: number; comment?: string }[]
    }
  const balanceOf = async (login: number) =>
    Number(
      (await w.t.ctx.db.execute({ sql: 'select balance from accounts where login = ?', args: [login] }))
        .rows[0]!.balance,
    )

  test('BALANCE_RATIO: after the follower lost 3/4 of its balance on its own trade, a copy is sized on what it has', async () => {
    await w.price(1.1)
    const masterLogin = await w.newAccount(10_000)
    const master = await w.master(masterLogin, { reward_type: 3, percent: 10 })
    const follower = await w.newAccount(10_000)
    await w.t.settle()
    // BALANCE_RATIO x1: the same balance as the master, so a master 1.00 lot is a 1.00 lot copy today
    const sub = await w.follow(follower, master, { volume_mode: 3, volume_param: 1 })
    // the follower's own trade (manual_trading_mode ALLOW_ALL): 5 lots bought, the price falls 150 pips
    const own = await w.openTrade(follower, 0, 500)
    await w.price(1.0852)
    await w.t.settle()
    // closed by hand, or stopped out on the way: either way the loss is realized
    await w.closeTrade(follower, own.order)
    await w.t.settle()
    expect((await list(follower)).positions).toHaveLength(0)
    const balance = await balanceOf(follower)
    // about 2,500 left of 10,000 (the minor/major unit does not matter: a quarter of the start)
    expect(balance).toBeLessThan(0.3 * 1_000_000)
    // the master buys 1.00 lot: the follower holds a quarter of the master's balance now
    await w.openTrade(masterLogin, 0, 100)
    await w.t.settle()
    const copies = (await list(follower)).positions
    expect(copies).toHaveLength(1)
    // sized on the money the follower has (~2,500 / 10,000 x 100 = ~25), not on the 10,000 it subscribed with
    expect(copies[0]!.volume).toBeLessThanOrEqual(30)
    expect(sub).toBeGreaterThan(0)
  })

  test('MANAGEMENT_FEE: after the follower lost 3/4 of its balance on its own trade, the fee is not charged on money gone', async () => {
    await w.price(1.1)
    const masterLogin = await w.newAccount(10_000)
    // 36.5 % a year: 0.1 % a day
    const master = await w.master(masterLogin, { reward_type: 4, annual_percent: 36.5 })
    const follower = await w.newAccount(10_000)
    await w.t.settle()
    const sub = await w.follow(follower, master, { volume_mode: 1, volume_param: 1 })
    const own = await w.openTrade(follower, 0, 500)
    await w.price(1.0852)
    await w.t.settle()
    await w.closeTrade(follower, own.order)
    await w.t.settle()
    const balance = await balanceOf(follower)
    expect(balance).toBeLessThan(0.3 * 1_000_000)
    await w.advance(2 * 86_400_000)
    await w.t.runJob('copytrade.settle')
    await w.t.settle()
    const rows = await w.rewardsOf(sub)
    const charged = rows.reduce((a, r) => a + r.amount, 0)
    // days charged x 0.1 % of what the account holds (~2,500): a few USD a day, never 10 USD a day (0.1 % of 10,000)
    const days = rows.length > 0 ? 3 : 0
    expect(charged).toBeLessThanOrEqual((days * 0.001 * balance) / 100 + 0.01)
  })
})

describe("the master's SL/TP reaches every copy", () => {
  let w: Awaited<ReturnType<typeof copyFeeWorld>>
  beforeAll(async () => {
    w = await copyFeeWorld()
  })
  afterAll(() => w?.t.close())

  const list = async (login: number) =>
    (await w.t.request('GET', `/trade/list?login=${login}`, { token: await w.tradeToken(login) })).json as {
      positions: { order: number; volume: number; sl: number; tp: number }[]
    }

  test("the master's stop moved while the copy is being opened: the copy ends up with the master's stop", async () => {
    await w.price(1.1)
    const masterLogin = await w.newAccount(50_000)
    const master = await w.master(masterLogin, { reward_type: 3, percent: 10 })
    const follower = await w.newAccount(50_000)
    await w.t.settle()
    await w.follow(follower, master, { volume_mode: 1, volume_param: 1, copy_sl_tp: 1 })
    const mToken = await w.tradeToken(masterLogin)
    const o = await w.post(
      '/trade/open',
      { login: masterLogin, symbol: 'EURUSD', cmd: 0, volume: 100, sl: 1.09, tp: 0 },
      mToken,
    )
    const port = w.t.ports.get(TradingPort)
    const open = port.open
    let moved = 0
    port.open = async (r) => {
      // another instance's relay delivers the master's modify between the copier's read and the copy's commit
      if (r.login === follower && !moved) {
        moved = (
          await w.t.request('PUT', '/trade/modify', {
            token: mToken,
            body: { order: o.order, sl: 1.095, tp: 0 },
          })
        ).status
        await w.t.app.relay.pass()
      }
      return open(r)
    }
    try {
      await w.t.settle()
    } finally {
      port.open = open
    }
    expect(moved).toBe(200)
    // the safety nets had their time
    for (let i = 0; i < 3; i++) {
      await w.advance(31_000)
      await w.t.runJob('copytrade.reconcile')
      await w.t.runJob('copytrade.audit')
      await w.t.settle()
    }
    const copies = (await list(follower)).positions
    expect(copies).toHaveLength(1)
    expect(copies[0]!.sl).toBe(1.095)
  })

  /** A master's 1-lot buy with SL 1.09, copied with its levels (copy_sl_tp) by a new follower. */
  async function copiedWithStop() {
    await w.price(1.1)
    const masterLogin = await w.newAccount(50_000)
    const master = await w.master(masterLogin, { reward_type: 3, percent: 10 })
    const follower = await w.newAccount(50_000)
    await w.t.settle()
    await w.follow(follower, master, { volume_mode: 1, volume_param: 1, copy_sl_tp: 1 })
    const mToken = await w.tradeToken(masterLogin)
    const o = await w.post(
      '/trade/open',
      { login: masterLogin, symbol: 'EURUSD', cmd: 0, volume: 100, sl: 1.09, tp: 0 },
      mToken,
    )
    await w.t.settle()
    expect((await list(follower)).positions.map((p) => p.sl)).toEqual([1.09])
    return { masterLogin, follower, mToken, o }
  }

  test("the copier's read of the copies failed (the database away a moment): the relay tries the master's change again", async () => {
    const { follower, mToken, o } = await copiedWithStop()
    const port = w.t.ports.get(TradingPort)
    const orderStates = port.orderStates
    let refused = 0
    port.orderStates = async (...args) => {
      if (refused++ === 0) throw new Error('SQLITE_BUSY: database is locked')
      return orderStates(...args)
    }
    try {
      const r = await w.t.request('PUT', '/trade/modify', {
        token: mToken,
        body: { order: o.order, sl: 1.095, tp: 0 },
      })
      expect(r.status).toBe(200)
      await w.t.settle()
      // the relay's next attempt of the event (its backoff), no audit needed
      await w.advance(5_000)
      await w.t.settle()
    } finally {
      port.orderStates = orderStates
    }
    expect(refused).toBeGreaterThanOrEqual(2)
    expect((await list(follower)).positions.map((p) => p.sl)).toEqual([1.095])
  })

  // review r3d: the relay's retry of an older change came after a newer one was copied
  test("a master's older SL change retried after its newer one leaves the copy on the master's current SL", async () => {
    const { masterLogin, follower, mToken, o } = await copiedWithStop()
    const port = w.t.ports.get(TradingPort)
    const orderStates = port.orderStates
    let refused = 0
    port.orderStates = async (...args) => {
      if (refused++ === 0) throw new Error('SQLITE_BUSY: database is locked')
      return orderStates(...args)
    }
    const modify = async (sl: number) =>
      (await w.t.request('PUT', '/trade/modify', { token: mToken, body: { order: o.order, sl, tp: 0 } }))
        .status
    try {
      // change A (1.095): the copier's read fails once; change B (1.097): copied at once
      expect(await modify(1.095)).toBe(200)
      await w.t.settle()
      expect(await modify(1.097)).toBe(200)
      await w.t.settle()
      expect((await list(follower)).positions.map((p) => p.sl)).toEqual([1.097])
      // A's retry after its backoff
      await w.advance(5_000)
      await w.t.settle()
    } finally {
      port.orderStates = orderStates
    }
    await w.t.runJob('copytrade.audit')
    await w.t.settle()
    expect((await list(masterLogin)).positions.map((p) => p.sl)).toEqual([1.097])
    expect((await list(follower)).positions.map((p) => p.sl)).toEqual([1.097])
  })

  test("the copier's SL/TP change that failed once is tried again by the audit", async () => {
    const { follower, mToken, o } = await copiedWithStop()
    const port = w.t.ports.get(TradingPort)
    const modify = port.modify
    port.modify = async () => {
      // the executor dies (or its database write fails) mid-step
      throw new Error('executor died')
    }
    try {
      expect(
        (
          await w.t.request('PUT', '/trade/modify', {
            token: mToken,
            body: { order: o.order, sl: 1.095, tp: 0 },
          })
        ).status,
      ).toBe(200)
      await w.t.settle()
    } finally {
      port.modify = modify
    }
    for (let i = 0; i < 3; i++) {
      await w.advance(31_000)
      await w.t.runJob('copytrade.reconcile')
      await w.t.runJob('copytrade.audit')
      await w.t.settle()
    }
    expect((await list(follower)).positions.map((p) => p.sl)).toEqual([1.095])
  })
})

describe('what a follower sees of its rewards', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp()
  })
  afterAll(() => t?.close())

  test("a follower's reward rows do not show the master's account login (another customer's account)", async () => {
    const demo = await t.customerToken()
    const dealer = await t.staffToken(3, 'dealer-pass-1')
    const masterUser = await t.userToken(100004, 'master-pass-1')
    const quote = (bid: number) =>
      t.request('POST', '/market/quotes', {
        token: dealer,
        body: { ticks: [{ symbol: 'EURUSD', bid, ask: Math.round((bid + 0.0002) * 1e5) / 1e5 }] },
      })
    await quote(1.1)
    await t.settle()
    const masterId = (
      await t.request('GET', '/copytrade/master/mine', {
        token: await t.customerToken('master@example.com', 'master-pass-1'),
      })
    ).json.rows[0].id
    // the marketplace hides the master's login from followers
    const pub = (await t.request('GET', `/copytrade/masters/${masterId}`, { token: demo })).json
    expect(pub.login).toBeUndefined()
    expect(pub.payout_login).toBeUndefined()
    const sub = await followMaster(t, demo, 100001, masterId, { volume_mode: 0, volume_param: 10 })
    const o = await t.request('POST', '/trade/open', {
      token: masterUser,
      body: { login: 100004, symbol: 'EURUSD', cmd: 0, volume: 10, sl: 0, tp: 0 },
    })
    expect(o.status).toBe(200)
    await t.settle()
    await quote(1.11)
    await t.request('DELETE', '/trade/close', { token: masterUser, body: { order: o.json.order } })
    await t.settle()
    const rows = (await t.request('GET', `/copytrade/subscription/${sub}/rewards`, { token: demo })).json.rows
    expect(rows.length).toBeGreaterThan(0)
    // the master's account (100004, its payout account) is another customer's: not shown to its followers
    expect(rows.map((r: { payout_login?: number }) => r.payout_login)).not.toContain(100004)
  })
})

// review of probe 4: the audit's retry of a refused SL/TP change, closes parked in dead letters, the fee
// preview's figures
describe("the audit's retry of a copier's SL/TP change", () => {
  let w: Awaited<ReturnType<typeof copyFeeWorld>>
  beforeAll(async () => {
    w = await copyFeeWorld()
  })
  afterAll(() => w?.t.close())
  const list = async (login: number) =>
    (await w.t.request('GET', `/trade/list?login=${login}`, { token: await w.tradeToken(login) })).json as {
      positions: { order: number; sl: number }[]
    }
  /** A master position with SL 1.09 copied, then moved to 1.095 while the copier's change fails. */
  const failedChange = async () => {
    await w.price(1.1)
    const masterLogin = await w.newAccount(50_000)
    const master = await w.master(masterLogin, { reward_type: 3, percent: 10 })
    const follower = await w.newAccount(50_000)
    await w.t.settle()
    await w.follow(follower, master, { volume_mode: 1, volume_param: 1, copy_sl_tp: 1 })
    const mToken = await w.tradeToken(masterLogin)
    const o = await w.post(
      '/trade/open',
      { login: masterLogin, symbol: 'EURUSD', cmd: 0, volume: 100, sl: 1.09, tp: 0 },
      mToken,
    )
    await w.t.settle()
    const port = w.t.ports.get(TradingPort)
    const modify = port.modify
    port.modify = async () => {
      throw new Error('executor died')
    }
    try {
      await w.t.request('PUT', '/trade/modify', { token: mToken, body: { order: o.order, sl: 1.095, tp: 0 } })
      await w.t.settle()
    } finally {
      port.modify = modify
    }
    return { follower, port }
  }

  test("the follower's own SL set after the copier's change failed survives the audit", async () => {
    const { follower } = await failedChange()
    const copy = (await list(follower)).positions[0]!
    const own = await w.t.request('PUT', '/trade/modify', {
      token: await w.tradeToken(follower),
      body: { order: copy.order, sl: 1.08, tp: 0 },
    })
    expect(own.status).toBe(200)
    expect((await list(follower)).positions.map((p) => p.sl)).toEqual([1.08])
    await w.advance(31_000)
    await w.t.runJob('copytrade.audit')
    await w.t.settle()
    expect((await list(follower)).positions.map((p) => p.sl)).toEqual([1.08])
  })

  test('a change that keeps failing is tried a bounded number of times, not at every audit for ever', async () => {
    const { follower, port } = await failedChange()
    const modify = port.modify
    let tries = 0
    port.modify = async () => {
      tries++
      throw new Error('executor died')
    }
    try {
      for (let i = 0; i < 9; i++) {
        await w.advance(31_000)
        await w.t.runJob('copytrade.audit')
        await w.t.settle()
      }
    } finally {
      port.modify = modify
    }
    expect(tries).toBe(5)
    expect((await list(follower)).positions.map((p) => p.sl)).toEqual([1.09])
  })
})

describe('a copy close parked in dead letters', () => {
  let w: Awaited<ReturnType<typeof copyFeeWorld>>
  beforeAll(async () => {
    w = await copyFeeWorld()
  })
  afterAll(() => w?.t.close())

  /** Runs `fn` while every delivery of a close of `login`'s positions to copy trading fails (parked). */
  const closesFail = async (login: number, fn: () => Promise<void>) => {
    const consumers = [TradeClosed.name, TradePartiallyClosed.name].flatMap((topic) =>
      w.t.ctx.events.consumersOf(topic).filter((c) => c.name.startsWith('copytrade.')),
    )
    const saved = consumers.map((c) => ({ c, handle: c.handle, handleMany: c.handleMany }))
    const ofLogin = (e: DeliveredEvent<unknown>) => (e.payload as { login: number }).login === login
    for (const { c, handle, handleMany } of saved) {
      c.handle = async (e: DeliveredEvent<unknown>, tx: Tx) => {
        if (ofLogin(e)) throw new Error('close delivery fails')
        return handle!.call(c, e, tx)
      }
      if (handleMany)
        c.handleMany = async (es: DeliveredEvent<unknown>[], tx: Tx) => {
          if (es.some(ofLogin)) throw new Error('close delivery fails')
          return handleMany.call(c, es, tx)
        }
    }
    try {
      await fn()
    } finally {
      for (const { c, handle, handleMany } of saved) {
        c.handle = handle
        c.handleMany = handleMany
      }
    }
  }
  const park = async () => {
    for (let i = 0; i < 10; i++) {
      await w.t.settle()
      w.clock.advance(301_000)
    }
    await w.t.settle()
    await w.advance(0)
  }
  const parkedCloses = async (login: number) =>
    (await w.request('GET', '/manager/events/dead-letters', undefined, w.s.staff)).json.rows.filter(
      (d: { consumer: string; retried_time: number; payload: { login: number } }) =>
        d.consumer.startsWith('copytrade.') && !d.retried_time && d.payload.login === login,
    )

  test("a copy's loss parked: ending the subscription charges no performance fee on a net loss", async () => {
    await w.price(1.1)
    const masterLogin = await w.newAccount(50_000)
    const master = await w.master(masterLogin, { reward_type: 1, percent: 20, period_days: 30 })
    const follower = await w.newAccount(50_000)
    await w.t.settle()
    const sub = await w.follow(follower, master, { volume_mode: 1, volume_param: 1 })
    await w.openTrade(masterLogin, 0, 100) // BUY 1 lot
    const sell = await w.openTrade(masterLogin, 1, 200) // SELL 2 lots
    await w.t.settle()
    expect(await w.positions(follower)).toHaveLength(2)
    // 100 pips up: the BUY copy gains ~1,000, the SELL copy loses ~2,000: the copies lost ~1,000 together
    await w.price(1.11)
    await closesFail(follower, async () => {
      expect((await w.closeTrade(masterLogin, sell.order)).status).toBe(200)
      await park()
    })
    expect(await w.positions(follower)).toHaveLength(1)
    expect(await parkedCloses(follower)).toHaveLength(1)
    // the parked loss is in the preview's result and equity
    const view = await w.preview(sub)
    expect(view.copy_result).toBeLessThan(-1_500)
    expect(view.performance_fee_now).toBe(0)
    expect((await w.request('DELETE', `/copytrade/subscription/${sub}`)).status).toBe(200)
    await w.t.settle()
    await w.t.runJob('copytrade.settle')
    const fees = (await w.rewardsOf(sub)).filter((r) => r.reward_name === 'PERFORMANCE_FEE_HWM')
    expect(fees.map((f) => f.amount)).toEqual([])
  })

  test('new terms are not accepted while a copy close is parked (409 ACCOUNT_SETTLING)', async () => {
    await w.price(1.1)
    const masterLogin = await w.newAccount(50_000)
    const master = await w.master(masterLogin, { reward_type: 3, percent: 10 })
    const follower = await w.newAccount(50_000)
    await w.t.settle()
    const sub = await w.follow(follower, master, { volume_mode: 1, volume_param: 1 })
    const o = await w.openTrade(masterLogin, 0, 100)
    await w.t.settle()
    await w.price(1.11)
    await closesFail(follower, async () => {
      expect((await w.closeTrade(masterLogin, o.order)).status).toBe(200)
      await park()
    })
    expect(await w.positions(follower)).toHaveLength(0)
    const parked = await parkedCloses(follower)
    expect(parked).toHaveLength(1)
    const up = await w.request('PUT', `/copytrade/master/${master}`, {
      reward_policy: { reward_type: 3, percent: 50 },
    })
    expect(up.status).toBe(200)
    const accepted = await w.request('POST', `/copytrade/subscription/${sub}/terms`, {
      version: up.json.policy_version,
    })
    expect([accepted.status, accepted.json.error]).toEqual([409, 'ACCOUNT_SETTLING'])
    // staff send it back: delivered under the terms it closed under (10 %)
    const retried = await w.request(
      'POST',
      `/manager/events/dead-letters/${parked[0].id}/retry`,
      undefined,
      w.s.staff,
    )
    expect(retried.status).toBe(200)
    await w.t.settle()
    await w.t.runJob('copytrade.settle')
    const rows = (await w.rewardsOf(sub)).filter((r) => r.reward_name === 'PROFIT_SHARE_PER_TRADE')
    expect(rows).toHaveLength(1)
    expect(rows[0]!.amount).toBe(Math.floor(rows[0]!.base! * 0.1) / 100)
  })
})

describe('the fee preview', () => {
  let w: Awaited<ReturnType<typeof copyFeeWorld>>
  beforeAll(async () => {
    w = await copyFeeWorld()
  })
  afterAll(() => w?.t.close())

  test('a copy closed, its close on its way: copy_equity is the sum of the figures shown; managed_equity shown', async () => {
    await w.price(1.1)
    const masterLogin = await w.newAccount(50_000)
    const master = await w.master(masterLogin, { reward_type: 4, annual_percent: 36.5 })
    const follower = await w.newAccount(50_000)
    await w.t.settle()
    const sub = await w.follow(follower, master, { volume_mode: 1, volume_param: 1 })
    await w.openTrade(masterLogin, 0, 100)
    const sell = await w.openTrade(masterLogin, 1, 100)
    await w.t.settle()
    await w.price(1.11)
    let v: Record<string, number> = {}
    await w.t.app.relay.whilePaused(async () => {
      expect((await w.closeTrade(masterLogin, sell.order)).status).toBe(200)
      await w.t.app.relay.pass()
      expect(await w.positions(follower)).toHaveLength(1)
      v = await w.preview(sub)
    })
    await w.t.settle()
    // the SELL copy lost ~1,000 (its close not delivered yet): in the result shown
    expect(v.copy_result).toBeLessThan(-500)
    expect(v.copy_equity).toBeCloseTo(
      v.copy_capital! + v.copy_result! - v.fees_paid! - v.fees_owed! + v.floating!,
      2,
    )
    expect(v.managed_equity).toBeCloseTo(v.copy_equity!, 2)
    expect(v.management_fee_per_day).toBeGreaterThan(0)
  })
})
