// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { compareIds } from '../../src/kernel/bus/bus'
import { MarketPort } from '../../src/modules/market'
import { makeTestApp, type TestApp } from '../support/app'

// A hostile probe's findings on GET /market/stream: a resume that lost a tick or sent one twice, a stream
// left on the old group's prices after a group move, a Last-Event-ID ahead of the bus.

/** Reads an SSE body for up to `ms`: its quote events and the raw text (`[[EOF]]` where it ended). */
async function readSse(body: ReadableStream<Uint8Array>, ms: number) {
  const reader = body.getReader()
  const dec = new TextDecoder()
  let text = ''
  const end = Date.now() + ms
  while (Date.now() < end) {
    const r = await Promise.race([
      reader.read(),
      Bun.sleep(Math.max(1, end - Date.now())).then(() => 'timeout' as const),
    ])
    if (r === 'timeout') break
    if (r.done) {
      text += '\n[[EOF]]'
      break
    }
    text += dec.decode(r.value)
  }
  try {
    await reader.cancel()
  } catch {}
  const events = text
    .split('\n\n')
    .map((b) => {
      const e: Record<string, string> = {}
      for (const line of b.split('\n')) {
        const i = line.indexOf(':')
        if (i > 0) e[line.slice(0, i)] = line.slice(i + 1).trim()
      }
      return e
    })
    .filter((e) => e.event === 'quote')
    .map((e) => ({
      id: e.id!,
      ...(JSON.parse(e.data!) as { symbol: string; bid: number; ask: number; time: number }),
    }))
  return { text, events }
}

const stream = (t: TestApp, token: string, lastEventId?: string) =>
  t.app.handle(
    new Request('http://localhost/market/stream?symbols=EURUSD', {
      headers: {
        authorization: token,
        host: 'localhost',
        ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
      },
    }),
  )

describe('resume with Last-Event-ID', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp()
  })
  afterAll(() => t.close())

  let px = 1.08
  const next = () => {
    px = Math.round((px + 0.00003) * 1e5) / 1e5
    return { symbol: 'EURUSD', bid: px, ask: Math.round((px + 0.0001) * 1e5) / 1e5, time: Date.now() }
  }
  const tick = async () => (await t.ports.get(MarketPort).quotes.apply([next()]))[0]!

  // the replay was read, then the live feed subscribed: a tick between the two was in neither
  test('a tick published between the replay read and the live subscription is sent', async () => {
    const token = await t.userToken(100001)
    const first = await tick()
    const quotes = t.ports.get(MarketPort).quotes as unknown as { since: (a: string) => Promise<unknown> }
    const orig = quotes.since.bind(quotes)
    let during: { id: string; bid: number } | undefined
    quotes.since = async (after: string) => {
      const r = await orig(after)
      // the bus read has been answered; a tick arrives before the stream has started
      during = await tick()
      return r
    }
    let res: Response
    try {
      res = await stream(t, token, first.id)
    } finally {
      quotes.since = orig
    }
    expect(res.status).toBe(200)
    const reading = readSse(res.body!, 1200)
    await Bun.sleep(200)
    const later = await tick()
    const { events } = await reading
    const bids = events.map((e) => e.bid)
    expect(bids).toContain(later.bid)
    expect(bids).toContain(during!.bid)
    expect(bids.indexOf(during!.bid)).toBeLessThan(bids.indexOf(later.bid))
  })

  // this instance's bus reader behind the bus (with Redis: the XRANGE of a resume sees entries its blocking
  // XREAD has not handed over yet; here a listener still busy with the entry before): the replay had them,
  // the live feed brought them again (the same id twice, the price stepping back)
  test('a tick in the replay that the lagging instance reader then hands over is not sent twice', async () => {
    const token = await t.userToken(100001)
    const quotes = t.ports.get(MarketPort).quotes
    const [t0] = await quotes.apply([next()])
    let open!: () => void
    const gate = new Promise<void>((r) => {
      open = r
    })
    const a = next()
    const stop = quotes.onTicks(async (ticks) => {
      if (ticks.some((x) => x.bid === a.bid)) await gate
    })
    try {
      const pA = quotes.apply([a]) // delivery held: the instance reader is busy with A
      await Bun.sleep(20)
      const b = next()
      b.time = a.time + 1
      const pB = quotes.apply([b]) // on the bus, not yet handed to this instance's listeners
      await Bun.sleep(20)
      const res = await stream(t, token, t0!.id)
      expect(res.status).toBe(200)
      const reading = readSse(res.body!, 800)
      await Bun.sleep(100)
      open()
      await Promise.all([pA, pB])
      const { events } = await reading
      const ids = events.map((e) => e.id)
      expect(ids).toEqual([...new Set(ids)])
      expect(events.map((e) => e.bid)).toEqual([a.bid, b.bid])
    } finally {
      open()
      stop()
    }
  })

  // an id the bus has not reached was answered as "nothing missed": no latest quotes, and at the edge a
  // stream following the bus from it heard nothing until the bus passed it, then sent that id back
  test('from an id ahead of the bus starts with the latest quotes, as an unknown id does', async () => {
    const token = await t.userToken(100001)
    const q = await tick()
    const future = `${Date.now() + 365 * 86400_000}-0`
    const res = await stream(t, token, future)
    expect(res.status).toBe(200)
    const { events } = await readSse(res.body!, 500)
    expect(events.map((e) => e.bid)).toContain(q.bid)
    // no id the client is left with is ahead of the bus
    const newest = await t.ports.get(MarketPort).quotes.newestId()
    for (const e of events) {
      expect(e.id <= `${Date.now()}`).toBe(true)
      expect(compareIds(e.id, newest)).toBeLessThanOrEqual(0)
    }
  })
})

describe('an account moved to another group', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp()
  })
  afterAll(() => t.close())

  // the stream priced every tick with the group the account had when it opened, for up to 4 minutes,
  // while GET /market/symbol and every fill used the new group's
  test('its open stream ends (the reconnect is priced for the new group) or sends the new group price', async () => {
    const manager = await t.staffToken()
    const admin = await t.staffToken(2, 'admin-pass-1')
    const g = await t.request('POST', '/manager/groups', {
      token: admin,
      body: { name: 'real\\USD2', account_mode: 'REAL', currency: 'USD', leverage: 100 },
    })
    expect(g.status).toBe(200)
    const sec = await t.request('PUT', `/manager/groups/${g.json.id}/securities/Forex`, {
      token: admin,
      body: { show: 1, trade: 1, lot_min: 1, lot_max: 10000, lot_step: 1, comm_base: 0, comm_type: 0 },
    })
    expect(sec.status).toBe(200)
    const ov = await t.request('PUT', `/manager/groups/${g.json.id}/symbols/EURUSD`, {
      token: admin,
      body: { spread: 50 },
    })
    expect(ov.status).toBe(200)
    await Bun.sleep(1200)
    const token = await t.userToken(100001)
    const quotes = t.ports.get(MarketPort).quotes
    await quotes.apply([{ symbol: 'EURUSD', bid: 1.08, ask: 1.0801, time: Date.now() }])
    const res = await stream(t, token)
    expect(res.status).toBe(200)
    const reading = readSse(res.body!, 4500)
    const moved = await t.request('PATCH', '/manager/accounts/100001', {
      token: manager,
      body: { group: 'real\\USD2' },
    })
    expect(moved.status).toBe(200)
    await t.settle?.()
    await Bun.sleep(3500) // past the stream's session check
    await quotes.apply([{ symbol: 'EURUSD', bid: 1.0805, ask: 1.0806, time: Date.now() }])
    const sym = await t.request('GET', '/market/symbol?symbol=EURUSD&login=100001', { token })
    const { events, text } = await reading
    const last = events.at(-1)
    if (!text.includes('[[EOF]]')) expect([last?.bid, last?.ask]).toEqual([sym.json.bid, sym.json.ask])
    // the reconnect: the new group's price
    const again = await stream(t, token, last?.id)
    expect(again.status).toBe(200)
    await quotes.apply([{ symbol: 'EURUSD', bid: 1.0807, ask: 1.0808, time: Date.now() }])
    const sym2 = await t.request('GET', '/market/symbol?symbol=EURUSD&login=100001', { token })
    const after = (await readSse(again.body!, 500)).events.at(-1)
    expect([after?.bid, after?.ask]).toEqual([sym2.json.bid, sym2.json.ask])
  })
})
