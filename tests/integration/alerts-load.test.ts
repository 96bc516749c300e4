// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// A hostile probe of price alerts: one customer's 600 repeat alerts at the price stalled the engine's
// tick processing for everyone (one awaited transaction per firing, on every tick of a jittering price).
// The firings of a batch of ticks are written together, and a repeat alert rests REPEAT_REST_S after a
// firing.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { outbox } from '../../src/kernel/events/schema'
import { REPEAT_REST_S } from '../../src/modules/alerts/domain/conditions'
import { priceAlerts } from '../../src/modules/alerts/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'

const REST_MS = REPEAT_REST_S * 1000
const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0))
let t: TestApp
let user: string
let dealer: string
const ingest = quoteIngest(
  () => t,
  clock,
  () => dealer,
)
const bids = async (...ps: number[]) => {
  for (const p of ps) await ingest([{ symbol: 'EURUSD', bid: p, ask: Math.round((p + 0.0001) * 1e5) / 1e5 }])
}

beforeAll(async () => {
  t = await makeTestApp({ clock })
  user = await t.userToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  await bids(1.1)
})
afterAll(() => t.close())

const create = async (body: Record<string, unknown>, token = user, login = 100001) => {
  const r = await t.request('POST', '/price_alert', {
    token,
    body: { login, symbol: 'EURUSD', side: 0, repeat_mode: 1, ...body },
  })
  expect(r.status).toBe(200)
  return r.json.id as number
}
const fired = async (id: number) =>
  (await t.ctx.db.select().from(priceAlerts).where(eq(priceAlerts.id, id)))[0].firedCount

/**
 * Counts, while `during` runs, the units of work that wrote alert.fired events and the events written
 * (the notifications are written from them).
 */
async function firingWrites(during: () => Promise<void>) {
  const uow = t.ctx.uow
  const run = uow.run
  const seen = { units: 0, events: 0 }
  uow.run = ((fn, order) =>
    run.call(
      uow,
      async (tx, work) => {
        let mine = 0
        const r = await fn(tx, {
          after: work.after,
          emit: (topic, brandId, payload) => {
            if (topic.name === 'alert.fired') mine++
            work.emit(topic, brandId, payload)
          },
        })
        if (mine) {
          seen.units++
          seen.events += mine
        }
        return r
      },
      order,
    )) as typeof uow.run
  try {
    await during()
  } finally {
    uow.run = run
  }
  return seen
}

describe('a repeat alert rests after a firing', () => {
  test('a crossing within the rest comes when it ends if it still holds, and is dropped if not', async () => {
    await bids(1.1)
    const any = await create({ condition: 4, target_price: 1.1 })
    await bids(1.0995) // crossed down
    expect(await fired(any)).toBe(1)
    await bids(1.1005, 1.0995, 1.1005) // jitter within the rest: nothing
    expect(await fired(any)).toBe(1)
    clock.advance(REST_MS)
    await bids(1.1006) // still above when the rest ends: the crossing up is told now
    expect(await fired(any)).toBe(2)
    await bids(1.0995, 1.1005) // down and back up within the rest: nothing changed in the end
    clock.advance(REST_MS)
    await bids(1.1006)
    expect(await fired(any)).toBe(2)
    await bids(1.0994)
    expect(await fired(any)).toBe(3)
    await t.request('DELETE', `/price_alert/${any}`, { token: user })
  })

  test('a level alert re-armed within the rest fires once it ends, also after the engine started again', async () => {
    await bids(1.1)
    const above = await create({ condition: 0, target_price: 1.2 })
    await bids(1.21)
    expect(await fired(above)).toBe(1)
    await bids(1.19, 1.21, 1.22) // reset and back above within the rest
    expect(await fired(above)).toBe(1)
    clock.advance(REST_MS)
    await bids(1.215)
    expect(await fired(above)).toBe(2)
    // the rest is the stored last firing's: a restart does not end it
    await t.app.lifecycle.stop()
    await t.app.lifecycle.start()
    await bids(1.19, 1.21)
    expect(await fired(above)).toBe(2)
    clock.advance(REST_MS)
    await bids(1.215)
    expect(await fired(above)).toBe(3)
    await t.request('DELETE', `/price_alert/${above}`, { token: user })
    await bids(1.1)
  })
})

test('3 logins x 200 repeat CROSS_ANY alerts at the price: one write per tick batch, each alert once a minute', async () => {
  await bids(1.1)
  const cust = await t.customerToken()
  const logins = [100001, 100002, 100003]
  const ids: number[] = []
  for (const login of logins)
    for (let i = 0; i < 200; i++) ids.push(await create({ condition: 4, target_price: 1.1 }, cust, login))
  const times: number[] = []
  const jitter = (n: number) =>
    firingWrites(async () => {
      for (let i = 0; i < n; i++) {
        const started = performance.now()
        await bids(i % 2 ? 1.1001 : 1.0999)
        times.push(performance.now() - started)
      }
    })
  // the first tick crosses: all 600 fire, written together; the 19 seconds after it are the rest
  const first = await jitter(20)
  expect(first).toEqual({ units: 1, events: 600 })
  // the rest over, the price on the other side of the last firing: each fires once more, together
  clock.advance(REST_MS)
  const again = await firingWrites(async () => {
    const started = performance.now()
    await bids(1.1001)
    times.push(performance.now() - started)
  })
  expect(again).toEqual({ units: 1, events: 600 })
  console.log(
    `[alerts-load] 600 alerts: firing tick ${Math.round(times[0])} ms, resting ticks ${Math.round(
      times.slice(1, 20).reduce((a, b) => a + b, 0) / 19,
    )} ms on average, the next firing tick ${Math.round(times[20])} ms`,
  )
  const events = await t.ctx.db.select().from(outbox).where(eq(outbox.topic, 'alert.fired'))
  const mine = new Set(ids)
  const per = new Map<number, number>()
  for (const e of events) {
    const id = (JSON.parse(e.payload) as { alert_id: number }).alert_id
    if (mine.has(id)) per.set(id, (per.get(id) ?? 0) + 1)
  }
  expect(per.size).toBe(600)
  expect([...per.values()].every((n) => n === 2)).toBe(true)
}, 120_000)
