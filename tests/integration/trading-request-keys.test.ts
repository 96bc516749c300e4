// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// An Idempotency-Key answers its repeats for 7 days; trading.requests-expire forgets it after.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'

// Monday 2026-01-05 15:00 UTC: forex trades
const clock = new ManualClock(Date.UTC(2026, 0, 5, 15, 0, 0))
let t: TestApp
let user: string
let dealer: string
const ingest = quoteIngest(
  () => t,
  clock,
  () => dealer,
)
const EURUSD = [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }]
/** Days later: sessions of then have expired; fresh ones, and a fresh price. */
async function later(ms: number) {
  clock.advance(ms)
  user = await t.userToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  await ingest(EURUSD)
}
const open = () =>
  t.request('POST', '/trade/open', {
    token: user,
    headers: { 'idempotency-key': 'week-old-key-1' },
    body: { login: 100001, cmd: 0, volume: 10, symbol: 'EURUSD', sl: 0, tp: 0 },
  })

beforeAll(async () => {
  t = await makeTestApp({ clock })
  await later(0)
})
afterAll(() => t?.close())

test('a key repeats its order for 7 days, then trading.requests-expire forgets it', async () => {
  const first = await open()
  expect(first.status).toBe(200)
  await later(7 * 86_400_000 - 60_000)
  await t.runJob('trading.requests-expire')
  const repeat = await open()
  expect([repeat.status, repeat.json.order]).toEqual([200, first.json.order])
  await later(120_000)
  await t.runJob('trading.requests-expire')
  const after = await open()
  expect(after.status).toBe(200)
  expect(after.json.order).not.toBe(first.json.order)
})
