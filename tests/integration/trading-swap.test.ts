// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// The daily swap against the closes: a close racing the rollover job, a close before the job reaches a
// position held over midnight, and a symbol's swap-free days.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, inArray, sum } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { outbox } from '../../src/kernel/events/schema'
import { accounts, balanceOperations } from '../../src/modules/accounts/schema'
import { orders } from '../../src/modules/trading/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'

const DAY = 86_400_000
// Monday 2026-01-05 12:00 UTC
const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0))
let t: TestApp
let user: string
let dealer: string
let admin: string
const ingest = quoteIngest(
  () => t,
  clock,
  () => dealer,
)
const EURUSD = { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }
// EURUSD long: -6.5 points * 0.00001 * 100,000 per lot a day = -6.50 USD; 0.10 lot: -0.65 USD
const DAY_SWAP_PER_LOT = -650

/** Signs in again (sessions outlive no test day) and ticks EURUSD at the clock's time. */
async function at(ms: number) {
  clock.set(ms)
  user = await t.userToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  admin = await t.staffToken(2, 'admin-pass-1')
  await ingest([EURUSD])
}
const nextMidnight = (plus: number) => (Math.floor(clock.now() / DAY) + 1) * DAY + plus
/** Monday 12:00 UTC, `weeks` after 2026-01-05: its next midnight charges one day (Wednesday's three). */
const monday = (weeks: number) => Date.UTC(2026, 0, 5 + 7 * weeks, 12, 0, 0)
const open = async (volume: number) => {
  const r = await t.request('POST', '/trade/open', {
    token: user,
    body: { login: 100001, cmd: 0, volume, symbol: 'EURUSD', sl: 0, tp: 0 },
  })
  expect(r.status).toBe(200)
  return r.json.order as number
}
const close = (order: number, volume?: number) =>
  t.request('DELETE', '/trade/close', { token: user, body: { order, ...(volume ? { volume } : {}) } })
const row = async (ticket: number) =>
  (await t.ctx.db.select().from(orders).where(eq(orders.ticket, ticket)))[0]!
/** What the ledger booked for a closed ticket (its OP_TRADE row). */
const booked = async (ticket: number) =>
  (await t.ctx.db.select().from(balanceOperations).where(eq(balanceOperations.ticket, ticket)))[0]?.amount
async function ledgerMatchesBalance() {
  const [r] = await t.ctx.db
    .select({ s: sum(balanceOperations.amount) })
    .from(balanceOperations)
    .where(eq(balanceOperations.login, 100001))
  const [a] = await t.ctx.db.select().from(accounts).where(eq(accounts.login, 100001))
  expect(Number(r!.s)).toBe(a!.balance)
}

beforeAll(async () => {
  t = await makeTestApp({ clock })
  await at(clock.now())
})
afterAll(() => t.close())

describe('a close and the daily rollover', () => {
  test('whole closes racing the rollover job book the swap their closed row holds', async () => {
    for (let round = 0; round < 4; round++) {
      await at(monday(round))
      const tickets: number[] = []
      for (let i = 0; i < 25; i++) tickets.push(await open(10))
      await at(nextMidnight(30_000))
      const closes = tickets.map((order, i) =>
        new Promise((r) => setTimeout(r, i % 5)).then(() => close(order)),
      )
      const [, ...answers] = await Promise.all([t.runJob('trading.rollover'), ...closes])
      expect(answers.map((a) => a.status)).toEqual(tickets.map(() => 200))
      for (const r of await t.ctx.db.select().from(orders).where(inArray(orders.ticket, tickets))) {
        expect(r.state).toBe('closed')
        // one day's swap, charged by the job or by the close, never both, never lost
        expect(r.storage).toBe(DAY_SWAP_PER_LOT / 10)
        expect(await booked(r.ticket)).toBe(r.profit + r.commission + r.storage)
      }
      // and told once: by the job or by the close
      const told = (await t.ctx.db.select().from(outbox).where(eq(outbox.topic, 'trade.swap_charged')))
        .map((e) => (JSON.parse(e.payload) as { ticket: number }).ticket)
        .filter((ticket) => tickets.includes(ticket))
      expect([...told].sort((a, b) => a - b)).toEqual([...tickets].sort((a, b) => a - b))
    }
    await ledgerMatchesBalance()
  })

  test('partial closes racing the rollover job keep the day charged on the part that stays open', async () => {
    for (let round = 0; round < 4; round++) {
      await at(monday(4 + round))
      const tickets: number[] = []
      for (let i = 0; i < 25; i++) tickets.push(await open(20))
      await at(nextMidnight(30_000))
      const closes = tickets.map((order, i) =>
        new Promise((r) => setTimeout(r, i % 5)).then(() => close(order, 10)),
      )
      const [, ...answers] = await Promise.all([t.runJob('trading.rollover'), ...closes])
      // a close that lost its race to the job answers "changed meanwhile; retry": the client retries
      for (const [i, a] of answers.entries())
        if (a.status !== 200) expect((await close(tickets[i]!, 10)).status).toBe(200)
      await t.runJob('trading.rollover')
      for (const ticket of tickets) {
        const rest = await row(ticket)
        const [part] = await t.ctx.db.select().from(orders).where(eq(orders.parent, ticket))
        expect([rest.volume, part!.volume]).toEqual([10, 10])
        // 0.20 lot held over one midnight: -1.30 USD, split between the two halves
        expect(rest.storage + part!.storage).toBe((2 * DAY_SWAP_PER_LOT) / 10)
        expect(await booked(part!.ticket)).toBe(part!.profit + part!.commission + part!.storage)
        expect((await close(ticket)).status).toBe(200)
      }
    }
    await ledgerMatchesBalance()
  })

  test('a position held over midnight and closed before the job reaches it pays the day, once', async () => {
    await at(monday(8))
    await at(nextMidnight(-10 * 60_000)) // Monday 23:50
    const whole = await open(500)
    const partial = await open(200)
    await at(nextMidnight(20_000)) // 00:00:20, the job has not run
    expect((await close(whole)).status).toBe(200)
    expect((await close(partial, 100)).status).toBe(200)
    const w = await row(whole)
    expect(w.storage).toBe(5 * DAY_SWAP_PER_LOT)
    expect(await booked(whole)).toBe(w.profit + w.commission + w.storage)
    // charged by the close, it is a swap charged as the job's are: one event for each position
    const charges = (await t.ctx.db.select().from(outbox).where(eq(outbox.topic, 'trade.swap_charged')))
      .map((e) => JSON.parse(e.payload) as { ticket: number; charge_minor: number })
      .filter((e) => e.ticket === whole || e.ticket === partial)
    expect(charges.map((e) => [e.ticket, e.charge_minor])).toEqual([
      [whole, 5 * DAY_SWAP_PER_LOT],
      [partial, 2 * DAY_SWAP_PER_LOT],
    ])
    const [part] = await t.ctx.db.select().from(orders).where(eq(orders.parent, partial))
    expect(part!.storage).toBe(DAY_SWAP_PER_LOT)
    expect(await booked(part!.ticket)).toBe(part!.profit + part!.commission + part!.storage)
    // the half still open carries its share of the day, and the job does not charge the day again
    await t.runJob('trading.rollover')
    const rest = await row(partial)
    expect([rest.storage, rest.rolloverDay]).toEqual([DAY_SWAP_PER_LOT, Math.floor(clock.now() / DAY)])
    expect((await close(partial)).status).toBe(200)
    await ledgerMatchesBalance()
  })

  test("a swap-free symbol's days are not charged when its swap is switched back on", async () => {
    const off = await t.request('PATCH', '/manager/symbols/EURUSD', {
      token: admin,
      body: { swap_enable: 0 },
    })
    expect(off.status).toBe(200)
    await at(monday(9))
    const ticket = await open(100)
    // Tuesday, Wednesday and Thursday 00:05: Monday, Tuesday and Wednesday (a triple) not charged
    for (let day = 1; day <= 3; day++) {
      await at(nextMidnight(5 * 60_000))
      await t.runJob('trading.rollover')
    }
    expect((await row(ticket)).storage).toBe(0)
    const on = await t.request('PATCH', '/manager/symbols/EURUSD', { token: admin, body: { swap_enable: 1 } })
    expect(on.status).toBe(200)
    await at(clock.now() + 2000)
    await t.runJob('trading.rollover')
    expect((await row(ticket)).storage).toBe(0)
    // from the next midnight on (Friday 00:05: Thursday), the swap runs again
    await at(nextMidnight(5 * 60_000))
    await t.runJob('trading.rollover')
    const r = await row(ticket)
    expect(r.storage).toBe(DAY_SWAP_PER_LOT)
    expect((await close(ticket)).status).toBe(200)
    await ledgerMatchesBalance()
  })
})
