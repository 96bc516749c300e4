// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { MemoryStore } from '../../src/kernel/cache/memory'
import { ManualClock } from '../../src/kernel/clock'
import { MarketPort } from '../../src/modules/market'
import { makeTestApp, type TestApp } from '../support/app'

/** The shared cache of a remote deployment: every read takes a few milliseconds. */
class SlowStore extends MemoryStore {
  reads = 0
  override async get(key: string) {
    this.reads++
    await Bun.sleep(5)
    return super.get(key)
  }
}

const shared = new SlowStore()
let feed: TestApp
let other: TestApp

beforeAll(async () => {
  feed = await makeTestApp({ store: shared })
  // a frozen clock: the 250 ms freshness window of warmAll does not depend on how fast this machine is
  other = await makeTestApp({ store: shared, clock: new ManualClock(Date.now()) })
})
afterAll(async () => {
  await feed.close()
  await other.close()
})

test('an instance without local ticks: callers during a warm-up wait for the shared cache before pricing', async () => {
  // the feed instance receives the tick and writes it to the shared cache; the other instance has no
  // local quote and prices margin and cross rates from what warmAll loaded (book/exposure.ts `pricing`)
  await feed.ports
    .get(MarketPort)
    .quotes.apply([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002, time: Date.now() }])
  const first = other.ports.get(MarketPort).quotes.warmAll()
  const second = other.ports.get(MarketPort).quotes.warmAll()
  await second
  expect(other.ports.get(MarketPort).quotes.peek('EURUSD')).toMatchObject({ bid: 1.1, ask: 1.1002 })
  await first
  // within 250 ms of a finished warm-up nothing is read again
  const reads = shared.reads
  await other.ports.get(MarketPort).quotes.warmAll()
  expect(shared.reads).toBe(reads)
})
