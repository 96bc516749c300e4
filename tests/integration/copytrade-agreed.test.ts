// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type TradingApi, TradingPort } from '../../src/modules/trading'
import { copyFeeWorld } from '../support/copy-fees'

/**
 * Money moves only as the follower agreed (findings of a hostile probe): a rebate only for a copy that
 * became a position, no copies of copies whatever the timing, the master's stops copied as they are now,
 * a revived copy sized on what the master holds, the equity stop guarding a paused subscription's
 * copies, and a pause that places nothing new.
 */
let w: Awaited<ReturnType<typeof copyFeeWorld>>
beforeAll(async () => {
  w = await copyFeeWorld()
})
afterAll(() => w?.t.close())

const list = async (login: number) =>
  (await w.t.request('GET', `/trade/list?login=${login}`, { token: await w.tradeToken(login) })).json as {
    positions: { order: number; volume: number; sl: number }[]
    orders: { order: number }[]
  }
const action = (sub: number, what: 'pause' | 'resume' | 'disable') =>
  w.request('POST', `/copytrade/subscription/${sub}/${what}`, {})
/** A master and a follower of it (MULTIPLIER 1) with these settings, EURUSD at 1.1. */
async function pair(policy: object, settings: object = {}) {
  await w.price(1.1)
  const masterLogin = await w.newAccount(50_000)
  const master = await w.master(masterLogin, policy)
  const follower = await w.newAccount(50_000)
  await w.t.settle()
  const sub = await w.follow(follower, master, { volume_mode: 1, volume_param: 1, ...settings })
  return { masterLogin, master, follower, sub, token: await w.tradeToken(masterLogin) }
}
const buyLimit = (login: number, token: string, volume: number, price: number) =>
  w.post('/trade/open', { login, symbol: 'EURUSD', cmd: 2, volume, open_price: price, sl: 0, tp: 0 }, token)
/** The ask reaches `price` (a buy limit there fills). */
async function reach(price: number) {
  await w.price(price - 0.0002)
  await w.t.settle()
}

describe('VOLUME_REBATE: per lot of a copy that became a position', () => {
  test('a pending copy cancelled before it fills owes nothing', async () => {
    const p = await pair({ reward_type: 2, per_lot: 10 })
    const o = await buyLimit(p.masterLogin, p.token, 500, 1.05)
    await w.t.settle()
    expect((await list(p.follower)).orders).toHaveLength(1)
    const c = await w.t.request('DELETE', '/trade/cancel', { token: p.token, body: { order: o.order } })
    expect(c.status).toBe(200)
    await w.t.settle()
    await w.t.runJob('copytrade.settle')
    expect((await list(p.follower)).orders).toHaveLength(0)
    expect(await w.rewardsOf(p.sub)).toEqual([])
  })

  test('a pending copy that fills owes its lots once, when it fills', async () => {
    const p = await pair({ reward_type: 2, per_lot: 10 })
    await buyLimit(p.masterLogin, p.token, 500, 1.095)
    await w.t.settle()
    expect(await w.rewardsOf(p.sub)).toEqual([])
    await reach(1.095)
    await w.t.settle()
    await w.t.runJob('copytrade.settle')
    expect((await list(p.follower)).positions.map((x) => x.volume)).toEqual([500])
    const rows = await w.rewardsOf(p.sub)
    expect(rows.map((r) => r.amount)).toEqual([50])
    // the copy's history says it filled
    const copies = (await w.request('GET', `/copytrade/subscription/${p.sub}/copies`)).json.rows as {
      action: string
      result: string
    }[]
    expect(copies.filter((r) => r.action === 'fill').map((r) => r.result)).toEqual(['copied'])
  })
})

describe('no copies of copies', () => {
  /** B's follower A is a master too, with follower F: B's trade reaches A, never F. */
  async function chain(window: (port: TradingApi, a: number) => () => void) {
    const b = await w.newAccount(50_000)
    const a = await w.newAccount(50_000)
    const f = await w.newAccount(50_000)
    const mB = await w.master(b, { reward_type: 3, percent: 10 })
    const mA = await w.master(a, { reward_type: 3, percent: 10 })
    await w.t.settle()
    await w.follow(f, mA, { volume_mode: 1, volume_param: 1 })
    await w.follow(a, mB, { volume_mode: 1, volume_param: 1 })
    const undo = window(w.t.ports.get(TradingPort), a)
    try {
      await w.openTrade(b, 0, 100)
      await w.t.settle()
    } finally {
      undo()
    }
    return { a, f }
  }

  test("a relay delivers the copy's open before the copier recorded its ticket", async () => {
    const { a, f } = await chain((port, a) => {
      const open = port.open
      port.open = async (r) => {
        const res = await open(r)
        // another instance's relay passes between the copy's commit and the copier's record of it
        if (r.login === a && res.ok) await w.t.app.relay.pass()
        return res
      }
      return () => {
        port.open = open
      }
    })
    expect((await list(a)).positions).toHaveLength(1)
    expect((await list(f)).positions).toHaveLength(0)
  })

  test('an executor dies between the copy and its record; the reconcile job takes the link over', async () => {
    const { a, f } = await chain((port, a) => {
      const open = port.open
      port.open = async (r) => {
        const res = await open(r)
        if (r.login === a && res.ok) throw new Error('executor died after the commit')
        return res
      }
      return () => {
        port.open = open
      }
    })
    w.clock.advance(20_000)
    await w.t.runJob('copytrade.reconcile')
    await w.t.settle()
    expect((await list(a)).positions).toHaveLength(1)
    expect((await list(f)).positions).toHaveLength(0)
  })
})

test("the master's stop moved back to an earlier level is copied", async () => {
  const p = await pair({ reward_type: 3, percent: 10 }, { copy_sl_tp: 1 })
  const o = await w.post(
    '/trade/open',
    { login: p.masterLogin, symbol: 'EURUSD', cmd: 0, volume: 100, sl: 1.09, tp: 0 },
    p.token,
  )
  await w.t.settle()
  const stops = []
  for (const sl of [1.095, 1.092, 1.095]) {
    const r = await w.t.request('PUT', '/trade/modify', {
      token: p.token,
      body: { order: o.order, sl, tp: 0 },
    })
    expect(r.status).toBe(200)
    await w.t.settle()
    stops.push((await list(p.follower)).positions.map((x) => x.sl))
  }
  expect(stops).toEqual([[1.095], [1.092], [1.095]])
})

test('a link skipped while paused is copied on resume as the master holds it now', async () => {
  const p = await pair({ reward_type: 3, percent: 10 })
  expect((await action(p.sub, 'pause')).status).toBe(200)
  const o = await w.openTrade(p.masterLogin, 0, 100)
  await w.t.settle()
  const part = await w.t.request('DELETE', '/trade/close', {
    token: p.token,
    body: { order: o.order, volume: 60 },
  })
  expect(part.status).toBe(200)
  await w.t.settle()
  expect((await action(p.sub, 'resume')).status).toBe(200)
  await w.t.settle()
  expect((await list(p.follower)).positions.map((x) => x.volume)).toEqual([40])
})

test("a paused subscription's equity stop still closes the copies it holds; it stays paused", async () => {
  const p = await pair({ reward_type: 3, percent: 10 }, { equity_stop: 100, equity_stop_type: 0 })
  await w.openTrade(p.masterLogin, 0, 100)
  await w.t.settle()
  expect((await list(p.follower)).positions).toHaveLength(1)
  expect((await action(p.sub, 'pause')).status).toBe(200)
  // the copy is about 1,000 USD down; the stop is 100
  await w.price(1.09)
  await w.t.runJob('copytrade.equity-stops')
  await w.t.settle()
  expect((await list(p.follower)).positions).toHaveLength(0)
  const d = (await w.request('GET', `/copytrade/subscription/${p.sub}`)).json
  expect([d.status, d.status_reason]).toEqual([1, 'EQUITY_STOP'])
  // nothing left to guard: the next run records no second stop
  await w.t.runJob('copytrade.equity-stops')
  const copies = (await w.request('GET', `/copytrade/subscription/${p.sub}/copies`)).json.rows as {
    action: string
  }[]
  expect(copies.filter((r) => r.action === 'stop')).toHaveLength(1)
})

describe('a pause places nothing new', () => {
  test("the follower's pending copy is cancelled; after the resume the master's fill is copied once", async () => {
    const p = await pair({ reward_type: 3, percent: 10 })
    await buyLimit(p.masterLogin, p.token, 100, 1.095)
    await w.t.settle()
    expect((await list(p.follower)).orders).toHaveLength(1)
    expect((await action(p.sub, 'pause')).status).toBe(200)
    await w.t.settle()
    expect((await list(p.follower)).orders).toHaveLength(0)
    expect((await action(p.sub, 'resume')).status).toBe(200)
    await w.t.settle()
    await reach(1.095)
    await w.t.settle()
    expect((await list(p.masterLogin)).positions).toHaveLength(1)
    const f = await list(p.follower)
    expect([f.positions.map((x) => x.volume), f.orders]).toEqual([[100], []])
  })

  test("while paused, the master's fill is not copied", async () => {
    const p = await pair({ reward_type: 3, percent: 10 })
    await buyLimit(p.masterLogin, p.token, 100, 1.095)
    await w.t.settle()
    expect((await action(p.sub, 'pause')).status).toBe(200)
    await w.t.settle()
    await reach(1.095)
    await w.t.settle()
    expect((await list(p.masterLogin)).positions).toHaveLength(1)
    const f = await list(p.follower)
    expect([f.positions, f.orders]).toEqual([[], []])
  })

  test("a master's order placed while paused and filled after the resume is copied", async () => {
    const p = await pair({ reward_type: 3, percent: 10 })
    expect((await action(p.sub, 'pause')).status).toBe(200)
    await buyLimit(p.masterLogin, p.token, 100, 1.095)
    await w.t.settle()
    expect((await action(p.sub, 'resume')).status).toBe(200)
    await w.t.settle()
    await reach(1.095)
    await w.t.settle()
    expect((await list(p.follower)).positions.map((x) => x.volume)).toEqual([100])
  })
})

describe('a pause or an end the follower was answered stops a copy in flight', () => {
  for (const what of ['pause', 'disable'] as const)
    test(`${what} answered 200 after the copier read the subscription: no copy is placed`, async () => {
      const p = await pair({ reward_type: 3, percent: 10 })
      const port = w.t.ports.get(TradingPort)
      const open = port.open
      let answered = 0
      port.open = async (r) => {
        // the follower's request commits (and is answered) between the copier's read and the copy's commit
        if (r.login === p.follower && !answered)
          answered = (await w.request('POST', `/copytrade/subscription/${p.sub}/${what}`, {})).status
        return open(r)
      }
      try {
        await w.openTrade(p.masterLogin, 0, 100)
        await w.t.settle()
      } finally {
        port.open = open
      }
      expect(answered).toBe(200)
      const placed = await w.t.ctx.db.execute({
        sql: 'select count(*) as n from orders where login = ?',
        args: [p.follower],
      })
      expect(Number(placed.rows[0]!.n)).toBe(0)
      const copies = (await w.request('GET', `/copytrade/subscription/${p.sub}/copies`)).json.rows as {
        action: string
        result: string
        reason: string
      }[]
      expect(copies.map((r) => [r.action, r.result, r.reason])).toEqual([
        ['open', 'skipped', 'SUBSCRIPTION_NOT_ACTIVE'],
      ])
      if (what === 'pause') {
        // the master's position is copied once the subscription resumes
        expect((await action(p.sub, 'resume')).status).toBe(200)
        await w.t.settle()
        expect((await list(p.follower)).positions.map((x) => x.volume)).toEqual([100])
      }
    })
})

describe('a pause and a pending copy that fills at the same moment', () => {
  test("the pause's cancel loses to the fill: the position stays, counted once; the resume adds none", async () => {
    const p = await pair({ reward_type: 2, per_lot: 10 })
    await buyLimit(p.masterLogin, p.token, 100, 1.095)
    await w.t.settle()
    expect((await list(p.follower)).orders).toHaveLength(1)
    const port = w.t.ports.get(TradingPort)
    const cancel = port.cancel
    port.cancel = async (r) => {
      // the tick that fills the copy (and the master) comes between the pause and its cancel
      if (r.actor.startsWith('copy:')) await reach(1.095)
      return cancel(r)
    }
    try {
      expect((await action(p.sub, 'pause')).status).toBe(200)
      await w.t.settle()
    } finally {
      port.cancel = cancel
    }
    expect((await list(p.follower)).positions.map((x) => x.volume)).toEqual([100])
    expect((await action(p.sub, 'resume')).status).toBe(200)
    await w.t.settle()
    await w.t.runJob('copytrade.settle')
    expect((await list(p.follower)).positions.map((x) => x.volume)).toEqual([100])
    // the rebate of its one lot, once
    expect((await w.rewardsOf(p.sub)).map((r) => r.amount)).toEqual([10])
    const copies = (await w.request('GET', `/copytrade/subscription/${p.sub}/copies`)).json.rows as {
      action: string
      reason: string
    }[]
    expect(copies.filter((r) => r.action === 'fill')).toHaveLength(1)
    expect(copies.filter((r) => r.reason === 'FILLED')).toHaveLength(1)
  })

  /** Pauses while a tick fills the follower's pending copy before the pause's cancel runs; `meanwhile` too. */
  async function pauseMeetsFill(p: Awaited<ReturnType<typeof pair>>, meanwhile: () => Promise<unknown>) {
    const port = w.t.ports.get(TradingPort)
    const cancel = port.cancel
    let once = true
    port.cancel = async (r) => {
      if (once && r.actor.startsWith('copy:')) {
        once = false
        await reach(1.095)
        await meanwhile()
        await w.t.settle()
      }
      return cancel(r)
    }
    try {
      expect((await action(p.sub, 'pause')).status).toBe(200)
      await w.t.settle()
    } finally {
      port.cancel = cancel
    }
    await w.t.settle()
    await w.t.runJob('copytrade.settle')
  }

  test('the subscription ends before the cancel runs: the filled copy is closed, its fill counted once', async () => {
    const p = await pair({ reward_type: 2, per_lot: 10 })
    await buyLimit(p.masterLogin, p.token, 100, 1.095)
    await w.t.settle()
    await pauseMeetsFill(p, async () => expect((await action(p.sub, 'disable')).status).toBe(200))
    expect((await list(p.follower)).positions).toHaveLength(0)
    expect((await w.rewardsOf(p.sub)).map((r) => r.amount)).toEqual([10])
  })

  test('the filled copy is closed by its owner before the cancel runs: its fill still counts, once', async () => {
    const p = await pair({ reward_type: 2, per_lot: 10 })
    await buyLimit(p.masterLogin, p.token, 100, 1.095)
    await w.t.settle()
    await pauseMeetsFill(p, async () => {
      const [held] = (await list(p.follower)).positions
      const closed = await w.t.request('DELETE', '/trade/close', {
        token: await w.tradeToken(p.follower),
        body: { order: held!.order },
      })
      expect(closed.status).toBe(200)
    })
    expect((await w.rewardsOf(p.sub)).map((r) => r.amount)).toEqual([10])
    const copies = (await w.request('GET', `/copytrade/subscription/${p.sub}/copies`)).json.rows as {
      action: string
    }[]
    expect(copies.filter((r) => r.action === 'fill')).toHaveLength(1)
  })

  test("a pause between the pending copy's commit and its record cancels it", async () => {
    const p = await pair({ reward_type: 3, percent: 10 })
    const port = w.t.ports.get(TradingPort)
    const open = port.open
    port.open = async (r) => {
      const res = await open(r)
      // committed as ACTIVE; the pause commits (on another instance) before the copier records the copy
      if (r.login === p.follower && res.ok) expect((await action(p.sub, 'pause')).status).toBe(200)
      return res
    }
    try {
      await buyLimit(p.masterLogin, p.token, 100, 1.095)
      await w.t.settle()
    } finally {
      port.open = open
    }
    expect((await list(p.follower)).orders).toHaveLength(0)
    await reach(1.095)
    await w.t.settle()
    expect((await list(p.follower)).positions).toHaveLength(0)
    // resumed, the master's position is copied at the current price
    expect((await action(p.sub, 'resume')).status).toBe(200)
    await w.t.settle()
    expect((await list(p.follower)).positions.map((x) => x.volume)).toEqual([100])
  })
})
