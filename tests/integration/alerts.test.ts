// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { accounts, groups } from '../../src/modules/accounts/schema'
import { REPEAT_REST_S } from '../../src/modules/alerts/domain/conditions'
import { priceAlerts } from '../../src/modules/alerts/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'

const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0))
let t: TestApp
let user: string
let dealer: string
const ingest = quoteIngest(
  () => t,
  clock,
  () => dealer,
)
/** Sets EURUSD's bid (the ask 1 pip above) with one tick per price. */
const bids = async (...prices: number[]) => {
  for (const p of prices)
    await ingest([{ symbol: 'EURUSD', bid: p, ask: Math.round((p + 0.0001) * 1e5) / 1e5 }])
}

beforeAll(async () => {
  t = await makeTestApp({ clock })
  user = await t.userToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  await bids(1.1)
})
afterAll(() => t.close())

const create = (body: Record<string, unknown>, token = user) =>
  t.request('POST', '/price_alert', {
    token,
    body: { login: 100001, symbol: 'EURUSD', side: 0, ...body },
  })
/** The alert.fired notifications of one alert id. */
async function firings(id: number) {
  await t.settle()
  const r = await t.request('GET', '/notify/list?limit=500&offset=0&filter=', { token: user })
  return (r.json.rows as any[][]).filter((row) => row[1] === 'alert.fired' && row[9].alert_id === id)
}
async function alert(id: number) {
  const r = await t.request('GET', '/price_alerts?login=100001', { token: user })
  return (r.json.rows as { id: number; active: number; fired_count: number }[]).find((a) => a.id === id)!
}

/** Runs `meanwhile` between the engine's decision to fire an alert and the firing's write, during `ticks`. */
async function beforeFiringWrite(meanwhile: () => Promise<void>, ticks: () => Promise<void>) {
  const uow = t.ctx.uow
  const run = uow.run
  uow.run = (async (...args: Parameters<typeof run>) => {
    uow.run = run
    await meanwhile()
    return run.apply(uow, args)
  }) as typeof uow.run
  try {
    await ticks()
  } finally {
    uow.run = run
  }
}

/**
 * The demo account's other REAL USD group with a 2,000-point EURUSD spread (its bid about 0.01 below the
 * feed's, its ask about 0.01 above), and staff moves of the account between groups; `undo` restores both.
 */
async function wideGroup() {
  const admin = await t.staffToken(2, 'admin-pass-1')
  const manager = await t.staffToken(1, 'manager-pass-1')
  const [{ id }] = await t.ctx.db.select().from(groups).where(eq(groups.name, 'prop\\funded\\USD'))
  const put = await t.request('PUT', `/manager/groups/${id}/symbols/EURUSD`, {
    token: admin,
    body: { spread: 2000 },
  })
  expect(put.status).toBe(200)
  const move = (group: string) =>
    t.request('PATCH', '/manager/accounts/100001', { token: manager, body: { group } })
  return {
    name: 'prop\\funded\\USD',
    move,
    async undo() {
      expect((await move('real\\USD')).status).toBe(200)
      await t.request('DELETE', `/manager/groups/${id}/symbols/EURUSD`, { token: admin })
    },
  }
}

describe('POST /price_alert validation (4.5)', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['level without target_price', { condition: 0 }, 'target_price'],
    [
      'target_price on a channel condition',
      { condition: 5, channel_low: 1, channel_high: 2, target_price: 1 },
      'target_price',
    ],
    [
      'channel_low not below channel_high',
      { condition: 5, channel_low: 1.2, channel_high: 1.1 },
      'channel_low',
    ],
    ['channel without bounds', { condition: 6 }, 'channel_low'],
    ['moving without threshold', { condition: 7 }, 'move_threshold'],
    ['moving with threshold 0', { condition: 9, move_threshold: 0 }, 'move_threshold'],
    ['unknown condition', { condition: 11, target_price: 1 }, 'condition'],
    ['side 2', { condition: 0, target_price: 1, side: 2 }, 'side'],
    ['expired already', { condition: 0, target_price: 1, expires_at: 1 }, 'expires_at'],
    ['unknown symbol', { condition: 0, target_price: 1, symbol: 'NOPE' }, 'symbol'],
    // a fall below 0 never happens: the alert would only hold one of the 200 active places
    [
      'a fall by an amount to below 0',
      { condition: 10, move_threshold: 2, reference_price: 1.5 },
      'move_threshold',
    ],
  ]
  for (const [name, body, field] of cases)
    test(`400 INVALID_DATA: ${name}`, async () => {
      const r = await create(body)
      expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
      expect(r.json.message).toContain(field)
    })

  test('a reference is kept for moving conditions only (a client may send back the 0 a level alert shows)', async () => {
    const r = await create({ condition: 0, target_price: 2, reference_price: 99, reference_time: 5 })
    expect(r.status).toBe(200)
    expect(r.json.alert).toMatchObject({ reference_price: 0, reference_time: 0 })
    await t.request('DELETE', `/price_alert/${r.json.id}`, { token: user })
  })

  test('the login must be the session’s; the answer carries the stored alert', async () => {
    const other = await create({ login: 100002, condition: 0, target_price: 2 })
    // spec 4.5 lists 400, 401, 403 and 500: 403 USER_NOT_FOUND, as trading answers
    expect([other.status, other.json.error]).toEqual([403, 'USER_NOT_FOUND'])
    const ok = await create({ condition: 0, target_price: 2, message: 'hello', indicator_name: 'manual' })
    expect(ok.status).toBe(200)
    expect(ok.json.alert).toMatchObject({
      id: ok.json.id,
      condition: 0,
      target_price: 2,
      active: 1,
      fired_count: 0,
    })
    expect((await t.request('DELETE', `/price_alert/${ok.json.id}`, { token: user })).json).toEqual({
      data: 'OK',
    })
    const gone = await t.request('DELETE', `/price_alert/${ok.json.id}`, { token: user })
    expect([gone.status, gone.json.error]).toEqual([404, 'ALERT_NOT_FOUND'])
  })
})

describe('PUT /price_alert/{id}', () => {
  test('replaces the definition, disables with active 0, keeps the login; foreign ids answer 404', async () => {
    await bids(1.1)
    const id = (await create({ condition: 0, target_price: 1.2 })).json.id
    const put = (body: Record<string, unknown>, token = user) =>
      t.request('PUT', `/price_alert/${id}`, {
        token,
        body: { login: 100001, symbol: 'EURUSD', side: 0, ...body },
      })
    const moved = await put({ condition: 1, target_price: 1.099, message: 'dip' })
    expect(moved.status).toBe(200)
    expect(moved.json.alert).toMatchObject({
      id,
      condition: 1,
      target_price: 1.099,
      message: 'dip',
      active: 1,
    })
    await bids(1.0985)
    expect(await firings(id)).toHaveLength(1)
    const again = await put({ condition: 0, target_price: 1.1, repeat_mode: 1, active: 0 })
    expect(again.json.alert.active).toBe(0)
    await bids(1.101)
    expect(await firings(id)).toHaveLength(1) // disabled: no new firing
    const bad = await put({ condition: 5, channel_low: 1.2, channel_high: 1.1 })
    expect([bad.status, bad.json.error]).toEqual([400, 'INVALID_DATA'])
    const otherLogin = await put({ login: 100002, condition: 0, target_price: 1.3 })
    expect(otherLogin.status).toBe(400)
    const foreign = await t.request('PUT', `/price_alert/${id}`, {
      token: await t.userToken(100002),
      body: { login: 100002, symbol: 'EURUSD', side: 0, condition: 0, target_price: 1.3 },
    })
    expect([foreign.status, foreign.json.error]).toEqual([404, 'ALERT_NOT_FOUND'])
    await t.request('DELETE', `/price_alert/${id}`, { token: user })
  })
})

describe('alert semantics driven by ingested quotes', () => {
  test('once: PRICE_ABOVE fires exactly once and is disabled; the notification reads well', async () => {
    const a = (await create({ condition: 0, target_price: 1.102, message: 'take profit zone' })).json.id
    await bids(1.101, 1.1025, 1.103, 1.101, 1.104)
    const f = await firings(a)
    expect(f).toHaveLength(1)
    expect(f[0][2].title).toBe('EURUSD bid is at or above 1.102')
    expect(f[0][2].body).toBe('EURUSD bid is 1.1025: it is at or above 1.102. take profit zone')
    expect(f[0][9]).toEqual({
      alert_id: a,
      symbol: 'EURUSD',
      side: 0,
      condition: 0,
      condition_name: 'PRICE_ABOVE',
      price: 1.1025,
    })
    expect(await alert(a)).toMatchObject({ active: 0, fired_count: 1 })
  })

  test('a firing whose write fails is retried on the next tick, not lost until the engine reloads', async () => {
    // a hostile client's probe: with the database away a moment, the woken alerts left the book for good
    await bids(1.1)
    const below = (await create({ condition: 1, target_price: 1.099 })).json.id
    const cross = (await create({ condition: 3, target_price: 1.0995 })).json.id
    const uow = t.ctx.uow
    const run = uow.run
    let refused = 0
    uow.run = (async () => {
      refused++
      throw new Error('the database is away')
    }) as typeof uow.run
    try {
      await bids(1.0985)
    } finally {
      uow.run = run
    }
    expect(refused).toBe(1)
    expect(await firings(below)).toHaveLength(0)
    expect(await alert(below)).toMatchObject({ active: 1, fired_count: 0 })
    // the next tick, still past both levels: each fires once (the crossing is the one missed)
    await bids(1.0984, 1.0983)
    expect(await firings(below)).toHaveLength(1)
    expect(await firings(cross)).toHaveLength(1)
    expect(await alert(below)).toMatchObject({ active: 0, fired_count: 1 })
  })

  test('repeat: fires again only after the price went back below the level', async () => {
    await bids(1.1)
    const a = (await create({ condition: 0, target_price: 1.102, repeat_mode: 1 })).json.id
    await bids(1.1021, 1.1022, 1.103) // stays above: one firing
    expect(await firings(a)).toHaveLength(1)
    // past the rest of a repeat alert (at most one firing a minute)
    clock.advance(REPEAT_REST_S * 1000)
    await bids(1.1019, 1.1023) // reset, then above again
    expect(await firings(a)).toHaveLength(2)
    expect(await alert(a)).toMatchObject({ active: 1, fired_count: 2 })
    await t.request('DELETE', `/price_alert/${a}`, { token: user })
  })

  test('repeat: a restart inside the region it fired for does not fire again; the next episode does', async () => {
    await bids(1.1)
    const a = (await create({ condition: 0, target_price: 1.102, repeat_mode: 1 })).json.id
    await bids(1.1025)
    expect(await firings(a)).toHaveLength(1)
    // the engine starts again (a restart, a takeover) with the price still above the level
    await t.app.lifecycle.stop()
    await t.app.lifecycle.start()
    await bids(1.1026, 1.1027)
    expect(await firings(a)).toHaveLength(1)
    clock.advance(REPEAT_REST_S * 1000)
    await bids(1.1019, 1.1023)
    expect(await firings(a)).toHaveLength(2)
    await t.request('DELETE', `/price_alert/${a}`, { token: user })
  })

  test('an edit committed while a firing is written wins: the old rule does not fire the new alert', async () => {
    await bids(1.1)
    const a = (await create({ condition: 0, target_price: 1.102 })).json.id
    let edit: Awaited<ReturnType<typeof t.request>> | undefined
    // the client's PUT commits between the engine's decision and its write
    await beforeFiringWrite(
      async () => {
        edit = await t.request('PUT', `/price_alert/${a}`, {
          token: user,
          body: { login: 100001, symbol: 'EURUSD', side: 0, condition: 0, target_price: 5 },
        })
      },
      () => bids(1.1025),
    )
    expect(edit?.status).toBe(200)
    expect(await firings(a)).toHaveLength(0)
    expect(await alert(a)).toMatchObject({ active: 1, fired_count: 0 })
    await t.request('DELETE', `/price_alert/${a}`, { token: user })
  })

  test('an edit racing a delete answers 404, never a 500', async () => {
    const a = (await create({ condition: 0, target_price: 1.2 })).json.id
    const put = () =>
      t.request('PUT', `/price_alert/${a}`, {
        token: user,
        body: { login: 100001, symbol: 'EURUSD', side: 0, condition: 0, target_price: 1.3 },
      })
    const answers = await Promise.all([
      put(),
      t.request('DELETE', `/price_alert/${a}`, { token: user }),
      put(),
      put(),
      put(),
    ])
    expect(answers.map((r) => r.status).filter((s) => s !== 200 && s !== 404)).toEqual([])
  })

  test("alerts watch the account group's price (its spread), not the feed's", async () => {
    const admin = await t.staffToken(2, 'admin-pass-1')
    const [{ groupId }] = await t.ctx.db.select().from(accounts).where(eq(accounts.login, 100001))
    await bids(1.2)
    // a 2,000-point spread for the group: its bid is 1.19005 and its ask 1.21005 on a feed of 1.2 / 1.2001
    const put = await t.request('PUT', `/manager/groups/${groupId}/symbols/EURUSD`, {
      token: admin,
      body: { spread: 2000 },
    })
    expect(put.status).toBe(200)
    try {
      const askAbove = (await create({ side: 1, condition: 0, target_price: 1.205 })).json.id
      const bidAbove = (await create({ side: 0, condition: 0, target_price: 1.1995 })).json.id
      await bids(1.2)
      expect(await firings(askAbove)).toHaveLength(1)
      expect(await firings(bidAbove)).toHaveLength(0)
      await t.request('DELETE', `/price_alert/${bidAbove}`, { token: user })
    } finally {
      await t.request('DELETE', `/manager/groups/${groupId}/symbols/EURUSD`, { token: admin })
    }
    await bids(1.1)
  })

  test("an account moved to another group: its alerts watch the new group's price", async () => {
    await bids(1.2)
    // the other group's ask is 1.21005 on a feed of 1.2 / 1.2001; the demo group's is the feed's
    const wide = await wideGroup()
    const askAbove = (await create({ side: 1, condition: 0, target_price: 1.205 })).json.id
    try {
      await bids(1.2)
      expect(await firings(askAbove)).toHaveLength(0)
      expect((await wide.move(wide.name)).status).toBe(200)
      await t.settle()
      await bids(1.2)
      expect(await firings(askAbove)).toHaveLength(1)
    } finally {
      await t.request('DELETE', `/price_alert/${askAbove}`, { token: user })
      await wide.undo()
    }
    await bids(1.1)
  })

  test("an account moved while its alert fires: the alert is left on the new group's book only", async () => {
    await bids(1.1)
    // the other group's bid is about 0.01 below the feed's
    const wide = await wideGroup()
    const a = (await create({ side: 0, condition: 0, target_price: 1.1015, repeat_mode: 1 })).json.id
    // staff move the account between the engine's decision and its write, and the alerts consumer of the
    // move runs (the relay would deliver it once the tick is processed: the engine is busy here)
    await beforeFiringWrite(
      async () => {
        expect((await wide.move(wide.name)).status).toBe(200)
        const moved = t.ctx.events
          .consumersOf('account.updated')
          .find((c) => c.name === 'alerts.account-moved')!
        await moved.after!({ payload: { login: 100001, changes: { group: wide.name } } } as never)
      },
      () => bids(1.102),
    )
    try {
      expect(await firings(a)).toHaveLength(1)
      // back below and up again (past the rest): above the level at the old group's price, below it at
      // the new one's
      clock.advance(REPEAT_REST_S * 1000)
      await bids(1.1, 1.102)
      expect(await firings(a)).toHaveLength(1)
    } finally {
      await t.request('DELETE', `/price_alert/${a}`, { token: user })
      await wide.undo()
    }
    await bids(1.1)
  })

  test('crossing needs the previous price on the other side; CROSS_ANY fires both ways', async () => {
    await bids(1.105)
    // already above 1.104 when created: a cross up needs a price below first
    const up = (await create({ condition: 2, target_price: 1.104 })).json.id
    const any = (await create({ condition: 4, target_price: 1.104, repeat_mode: 1 })).json.id
    const down = (await create({ condition: 3, target_price: 1.104 })).json.id
    await bids(1.106)
    expect(await firings(up)).toHaveLength(0)
    await bids(1.103) // cross down: down and any fire
    expect(await firings(down)).toHaveLength(1)
    expect(await firings(any)).toHaveLength(1)
    expect(await firings(up)).toHaveLength(0)
    clock.advance(REPEAT_REST_S * 1000) // the repeat alert rests a minute after a firing
    await bids(1.1045) // cross up
    expect(await firings(up)).toHaveLength(1)
    expect(await firings(any)).toHaveLength(2)
    await t.request('DELETE', `/price_alert/${any}`, { token: user })
  })

  test('channel enter and exit', async () => {
    await bids(1.1)
    const enter = (await create({ condition: 5, channel_low: 1.101, channel_high: 1.103 })).json.id
    const exit = (await create({ condition: 6, channel_low: 1.095, channel_high: 1.105 })).json.id
    await bids(1.1005)
    expect(await firings(enter)).toHaveLength(0)
    await bids(1.102) // entered
    expect(await firings(enter)).toHaveLength(1)
    expect(await firings(exit)).toHaveLength(0)
    await bids(1.1051) // left the wide channel above
    expect(await firings(exit)).toHaveLength(1)
  })

  test('moving by a percentage and by an amount from the reference price', async () => {
    await bids(1.1)
    const pct = (await create({ condition: 7, move_threshold: 1, reference_price: 1.1 })).json.id // >= 1.111
    const amt = (await create({ condition: 10, move_threshold: 0.005 })).json.id // reference = current 1.1: <= 1.095
    expect((await alert(amt)) as unknown as { reference_price: number }).toMatchObject({
      reference_price: 1.1,
    })
    await bids(1.11, 1.0951)
    expect(await firings(pct)).toHaveLength(0)
    expect(await firings(amt)).toHaveLength(0)
    await bids(1.095)
    expect(await firings(amt)).toHaveLength(1)
    await bids(1.111)
    expect(await firings(pct)).toHaveLength(1)
  })

  test('expires_at disables the alert without firing', async () => {
    await bids(1.1)
    const a = (
      await create({ condition: 0, target_price: 1.2, expires_at: Math.floor(clock.now() / 1000) + 10 })
    ).json.id
    clock.advance(20_000)
    await t.runJob('alerts.expire')
    await bids(1.21)
    expect(await firings(a)).toHaveLength(0)
    expect(await alert(a)).toMatchObject({ active: 0, fired_count: 0 })
  })

  test('an expiry whose write fails stays on the book: the next run of the job writes it', async () => {
    await bids(1.1)
    const a = (
      await create({ condition: 0, target_price: 1.2, expires_at: Math.floor(clock.now() / 1000) + 10 })
    ).json.id
    clock.advance(20_000)
    const db = t.ctx.db
    const transaction = db.transaction
    let refused = 0
    db.transaction = (async () => {
      refused++
      throw new Error('the database is away')
    }) as unknown as typeof db.transaction
    try {
      await t.runJob('alerts.expire').catch(() => {})
    } finally {
      db.transaction = transaction
    }
    expect(refused).toBeGreaterThan(0)
    expect(await alert(a)).toMatchObject({ active: 1 })
    await t.runJob('alerts.expire')
    expect(await alert(a)).toMatchObject({ active: 0, fired_count: 0 })
  })

  test('an alert written through another instance is picked up by the resync and fires here', async () => {
    await bids(1.1)
    await t.runJob('alerts.sync')
    const now = clock.now()
    // as another instance would write it: straight into the shared database
    const [row] = await t.ctx.db
      .insert(priceAlerts)
      .values({
        brandId: 1,
        login: 100001,
        symbol: 'EURUSD',
        side: 0,
        condition: 1,
        targetPrice: 1.09,
        createdAt: now,
        updatedAt: now,
      })
      .returning()
    await bids(1.0899)
    expect(await firings(row.id)).toHaveLength(0)
    await t.runJob('alerts.sync')
    await bids(1.0898)
    expect(await firings(row.id)).toHaveLength(1)
  })

  test('a login keeps at most 200 active alerts', async () => {
    const active = (await t.request('GET', '/price_alerts?login=100001', { token: user })).json.rows.filter(
      (a: { active: number }) => a.active === 1,
    ).length
    for (let i = active; i < 200; i++)
      expect((await create({ condition: 0, target_price: 5 + i })).status).toBe(200)
    const over = await create({ condition: 0, target_price: 9 })
    expect([over.status, over.json.error]).toEqual([400, 'ALERT_LIMIT_REACHED'])
  })

  test('and at most 1,000 in all, fired and disabled ones included (GET /price_alerts answers them all)', async () => {
    const mine = async () => (await t.request('GET', '/price_alerts?login=100001', { token: user })).json.rows
    const now = clock.now()
    const stored = (await mine()).length
    // fired once-alerts, as the engine leaves them
    await t.ctx.db.insert(priceAlerts).values(
      Array.from({ length: 1000 - stored }, (_, i) => ({
        brandId: 1,
        login: 100001,
        symbol: 'EURUSD',
        side: 0,
        condition: 0,
        targetPrice: 2 + i / 1000,
        active: 0,
        firedCount: 1,
        createdAt: now,
        updatedAt: now,
      })),
    )
    const rows = await mine()
    expect(rows).toHaveLength(1000)
    // room under the active limit, none under the stored one
    const anActive = rows.find((a: { active: number }) => a.active === 1)
    const off = await t.request('PUT', `/price_alert/${anActive.id}`, {
      token: user,
      body: { login: 100001, symbol: 'EURUSD', side: 0, condition: 0, target_price: 9, active: 0 },
    })
    expect(off.status).toBe(200)
    const over = await create({ condition: 0, target_price: 9 })
    expect([over.status, over.json.error]).toEqual([400, 'ALERT_LIMIT_REACHED'])
    expect(over.json.message).toContain('1000 alerts')
    const aFired = rows.find((a: { active: number }) => a.active === 0)
    expect((await t.request('DELETE', `/price_alert/${aFired.id}`, { token: user })).status).toBe(200)
    expect((await create({ condition: 0, target_price: 9 })).status).toBe(200)
  })
})
