// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, spyOn, test } from 'bun:test'
import * as busIds from '../../src/kernel/bus/bus'
import { compareIds, type MessageBus } from '../../src/kernel/bus/bus'
import { MemoryStore } from '../../src/kernel/cache/memory'
import { systemClock } from '../../src/kernel/clock'
import { AccountsPort } from '../../src/modules/accounts'
import { MarketPort } from '../../src/modules/market'
import type { MarketCtx } from '../../src/modules/market/context'
import { QuoteHub } from '../../src/modules/market/quotes'
import { quoteStream } from '../../src/modules/market/stream'
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

/** The market module's context with another QuoteHub (an edge isolate's, a restarted instance's). */
function ctxWith(t: TestApp, quotes: QuoteHub, edge: boolean) {
  const market = t.ports.get(MarketPort)
  return {
    ...t.ctx,
    edge,
    accounts: t.ports.get(AccountsPort),
    refdata: market.refdata,
    quotes,
  } as unknown as MarketCtx
}

async function staffStream(t: TestApp, ctx: MarketCtx) {
  const staff = await t.staffToken()
  const session = (await t.ctx.tokens.verify(staff))!
  const brand = (await t.ctx.brands.byHost('localhost'))!
  return quoteStream(
    ctx,
    brand,
    session,
    'EURUSD',
    new Request('http://localhost/market/stream?symbols=EURUSD', { headers: { authorization: staff } }),
  )
}

// review of the fixes above (a second hostile read)
describe('where a new stream starts', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp()
  })
  afterAll(() => t.close())

  // at the edge the stream started from the shared quotes (written by the engine after its own bus read)
  // labelled with the bus's newest id, then followed the bus from that id: a tick on the bus whose shared
  // quote the engine had not written yet was in neither, and an older price went out under its id
  test('edge stream: a tick on the bus the engine has not written to the shared quotes yet is sent', async () => {
    const market = t.ports.get(MarketPort)
    const k = t.ctx
    const edgeHub = new QuoteHub(
      k.db,
      k.store,
      k.bus,
      market.refdata,
      {} as never,
      k.clock,
      k.logger,
      undefined,
      true,
    )
    const quotes = market.quotes
    const [a] = await quotes.apply([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001, time: Date.now() }])
    // the engine is busy with B's listeners (triggers, stop-outs), B written: C is on the bus but not yet
    // in the shared quotes
    let open!: () => void
    const gate = new Promise<void>((r) => {
      open = r
    })
    const stop = quotes.onEngineTicks(async (ticks) => {
      if (ticks.some((x) => x.bid === 1.1002)) await gate
    })
    try {
      const pB = quotes.apply([{ symbol: 'EURUSD', bid: 1.1002, ask: 1.1003, time: Date.now() + 1 }])
      await Bun.sleep(20)
      const pC = quotes.apply([{ symbol: 'EURUSD', bid: 1.1004, ask: 1.1005, time: Date.now() + 2 }])
      await Bun.sleep(20)
      const res = await staffStream(t, ctxWith(t, edgeHub, true))
      const reading = readSse(res.body!, 800)
      await Bun.sleep(100)
      open()
      await pB
      const [c] = await pC
      const { events } = await reading
      expect(a).toBeDefined()
      // the client ends on C's price, never shown an older price under C's (or a later) id
      const last = events.at(-1)!
      expect(last.bid).toBe(c!.bid)
      for (const e of events) if (e.id === c!.id) expect(e.bid).toBe(c!.bid)
    } finally {
      open()
      stop()
    }
  })

  // a restarted instance's quotes before its reader applied a tick were labelled with the bus's newest id:
  // the ticks its reader had not handed over yet (between where it started and that id) were dropped as
  // "at or below what the stream started with", and the client never had them
  test('a restarted instance whose reader has not handed over a tick yet sends it', async () => {
    const market = t.ports.get(MarketPort)
    const k = t.ctx
    const real = k.bus
    let deliver!: () => Promise<void>
    // as the Redis reader reads: '$' resolved to the bus's newest, then a blocking read hands over what
    // came after it, later
    const lagging: MessageBus = {
      kind: 'local',
      publish: (type, data, weight) => real.publish(type, data, weight),
      range: (after, limit) => real.range(after, limit),
      newest: () => real.newest(),
      close: async () => {},
      subscribe(from, handler) {
        const sub = { position: from, lastReadAt: Date.now(), close: async () => {} }
        void real.newest().then((id) => {
          if (sub.position === '$') sub.position = id
        })
        deliver = async () => {
          const entries = (await real.range(sub.position, 1000)) ?? []
          if (!entries.length) return
          sub.position = entries.at(-1)!.id
          await handler(entries)
        }
        return sub
      },
    }
    await market.quotes.apply([{ symbol: 'EURUSD', bid: 1.1006, ask: 1.1007, time: Date.now() }])
    // its own cache: the shared quotes of an engine behind the bus do not have the tick either
    const hub = new QuoteHub(
      k.db,
      new MemoryStore(systemClock),
      lagging,
      market.refdata,
      {} as never,
      k.clock,
      k.logger,
    )
    hub.start()
    try {
      await Bun.sleep(20)
      const [b] = await market.quotes.apply([
        { symbol: 'EURUSD', bid: 1.1008, ask: 1.1009, time: Date.now() + 1 },
      ])
      const res = await staffStream(t, ctxWith(t, hub, false))
      expect(res.status).toBe(200)
      const reading = readSse(res.body!, 600)
      await Bun.sleep(100)
      await deliver()
      const { events } = await reading
      expect(events.map((e) => [e.id, e.bid])).toContainEqual([b!.id, b!.bid])
    } finally {
      await hub.stop()
    }
  })
})

describe('what an open stream costs', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp()
  })
  afterAll(() => t.close())

  // every tick of every symbol, asked for or not, went through a regex and an id comparison on every
  // stream; only the first ticks after the start can be at or below what it started with
  test('the ticks after the first ones are not checked against what the stream started with', async () => {
    const quotes = t.ports.get(MarketPort).quotes
    let px = 1.27
    const gbp = () => {
      px = Math.round((px + 0.00001) * 1e5) / 1e5
      return { symbol: 'GBPUSD', bid: px, ask: Math.round((px + 0.0001) * 1e5) / 1e5, time: Date.now() }
    }
    await quotes.apply([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001, time: Date.now() }])
    const isBusId = spyOn(busIds, 'isBusId')
    const compare = spyOn(busIds, 'compareIds')
    try {
      // without a stream: what the bus and the rest of the instance compare
      compare.mockClear()
      for (let i = 0; i < 50; i++) await quotes.apply([gbp()])
      const without = compare.mock.calls.length
      const res = await stream(t, await t.userToken(100001))
      expect(res.status).toBe(200)
      const reading = readSse(res.body!, 1500)
      await quotes.apply([{ symbol: 'EURUSD', bid: 1.1002, ask: 1.1003, time: Date.now() }])
      await Bun.sleep(50)
      isBusId.mockClear()
      compare.mockClear()
      for (let i = 0; i < 50; i++) await quotes.apply([gbp()])
      const withStream = compare.mock.calls.length
      const checked = isBusId.mock.calls.length
      await quotes.apply([{ symbol: 'EURUSD', bid: 1.1004, ask: 1.1005, time: Date.now() }])
      const { events } = await reading
      expect(events.map((e) => e.bid)).toContain(1.1004)
      expect(checked).toBe(0)
      expect(withStream - without).toBeLessThan(10)
    } finally {
      isBusId.mockRestore()
      compare.mockRestore()
    }
  })

  // a resume waited for the bus's newest id before its replay, for the one case it matters: an empty one
  test('a resume with ticks to replay does not read the bus newest id', async () => {
    const quotes = t.ports.get(MarketPort).quotes
    const [from] = await quotes.apply([{ symbol: 'EURUSD', bid: 1.101, ask: 1.1011, time: Date.now() }])
    const [missed] = await quotes.apply([
      { symbol: 'EURUSD', bid: 1.1012, ask: 1.1013, time: Date.now() + 1 },
    ])
    const newest = spyOn(quotes, 'newestId')
    try {
      const res = await stream(t, await t.userToken(100001), from!.id)
      expect(res.status).toBe(200)
      const { events } = await readSse(res.body!, 300)
      expect(events.map((e) => [e.id, e.bid])).toContainEqual([missed!.id, missed!.bid])
      expect(newest).toHaveBeenCalledTimes(0)
    } finally {
      newest.mockRestore()
    }
  })
})

describe('a session check', () => {
  let t: TestApp
  const gets: string[] = []
  beforeAll(async () => {
    const store = new MemoryStore(systemClock)
    const orig = store.get.bind(store)
    store.get = async (key: string) => {
      gets.push(key)
      return orig(key)
    }
    t = await makeTestApp({ store })
  })
  afterAll(() => t.close())

  // the 3 s check read the account twice through the shared cache: in PrincipalsPort.current (which
  // answers with that very record) and again for its group (one more subrequest per check at the edge)
  test('a session check reads the account once', async () => {
    const token = await t.userToken(100001)
    const res = await stream(t, token)
    expect(res.status).toBe(200)
    const reader = res.body!.getReader()
    void reader.read()
    gets.length = 0
    await Bun.sleep(3300) // one session check
    const acct = gets.filter((k) => k === 'acct:v1:100001').length
    await reader.cancel()
    expect(acct).toBe(1)
  })
})
