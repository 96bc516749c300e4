import { afterAll, beforeAll, expect, test } from 'bun:test'
import { MemoryStore } from '../../src/kernel/cache/memory'
import { DependencyDown } from '../../src/kernel/resilience'
import { MarketPort } from '../../src/modules/market'
import { makeTestApp, type TestApp } from '../support/app'

/** A shared cache whose reads take a while: a stream's start is still awaiting them when it is cancelled. */
class SlowStore extends MemoryStore {
  slow = false
  override async get(key: string) {
    if (this.slow) await Bun.sleep(150)
    return super.get(key)
  }
}

let t: TestApp
const store = new SlowStore()
beforeAll(async () => {
  t = await makeTestApp({ store })
})
afterAll(() => t.close())

// a reviewer's finding: a stream cancelled before its start had subscribed (a client gone at once, a HEAD
// at the edge) subscribed afterwards and stayed subscribed: at the edge, a poll of the bus twice a second
test('a quote stream cancelled while it starts never subscribes', async () => {
  const quotes = t.ports.get(MarketPort).quotes
  const listening = () => (quotes as unknown as { listeners: unknown[] }).listeners.length
  const before = listening()
  const token = await t.userToken()
  store.slow = true
  const res = await t.app.handle(
    new Request('http://localhost/market/stream?symbols=EURUSD,GBPUSD', {
      headers: { authorization: token, host: 'localhost' },
    }),
  )
  expect(res.status).toBe(200)
  await res.body!.cancel()
  // past the start's reads of the shared cache
  await Bun.sleep(600)
  expect(listening()).toBe(before)
})

// a hostile probe at the edge: with the bus away, the stream's start failed after its 200 had gone out
// (a plain-text 500 from the runtime, logged as 200)
test('a quote stream whose start cannot read the bus answers 503 in the error shape', async () => {
  const quotes = t.ports.get(MarketPort).quotes as unknown as { newestId: () => Promise<string> }
  const newestId = quotes.newestId
  quotes.newestId = async () => {
    throw new DependencyDown('bus', 'circuit open')
  }
  try {
    const token = await t.userToken()
    const res = await t.app.handle(
      new Request('http://localhost/market/stream?symbols=EURUSD', {
        headers: { authorization: token, host: 'localhost' },
      }),
    )
    expect(res.status).toBe(503)
    expect(res.headers.get('content-type')).toStartWith('application/json')
    expect(((await res.json()) as { error: string }).error).toBe('SERVICE_UNAVAILABLE')
  } finally {
    quotes.newestId = newestId
  }
})
