import { expect, test } from 'bun:test'
import { ChangeBacklog, EDGE_FLUSH_MAX } from '../../src/kernel/bus/backlog'
import type { MessageBus } from '../../src/kernel/bus/bus'
import { defineChannel, publishChange } from '../../src/kernel/bus/channel'
import type { Logger } from '../../src/kernel/logger'

const A = defineChannel<{ n: number }>('test.backlog-a')
const B = defineChannel<{ n: number }>('test.backlog-b')

/** A logger that keeps its lines. */
function keeping() {
  const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = []
  const logger: Logger = {
    log: (level: string, msg: string, fields?: Record<string, unknown>) =>
      void lines.push({ level, msg, fields }),
  } as Logger
  return { logger, lines }
}

/** A bus that appends what it takes while `up`, and refuses while not. */
function flakyBus() {
  const got: { type: string; n: number }[] = []
  const state = { up: true, calls: 0 }
  const bus = {
    kind: 'redis',
    async publish(type: string, data: unknown) {
      state.calls++
      if (!state.up) throw new Error('bus unavailable: circuit open')
      got.push({ type, n: (data as { n: number }).n })
      return `${got.length}-0`
    },
    subscribe: () => {
      throw new Error('not used')
    },
    range: async () => [],
    newest: async () => '0-0',
    close: async () => {},
  } as unknown as MessageBus
  return { bus, got, state }
}

const until = async (cond: () => boolean, ms = 5000) => {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await Bun.sleep(10)
  }
}

test('a change the bus refused is sent again once it answers, and later changes of its channel wait behind it, in order', async () => {
  const { bus, got, state } = flakyBus()
  const { logger, lines } = keeping()
  await publishChange(bus, logger, A, { n: 1 })
  state.up = false
  // never throws into the committed write that published it
  await publishChange(bus, logger, A, { n: 2 })
  state.up = true
  // the bus is back, but channel A has a change waiting: this one queues behind it, not sent ahead of it
  const callsBefore = state.calls
  await publishChange(bus, logger, A, { n: 3 })
  expect(state.calls).toBe(callsBefore)
  // another channel has nothing waiting: sent at once
  await publishChange(bus, logger, B, { n: 100 })
  await until(() => got.filter((g) => g.type === A.name).length === 3)
  expect(got.filter((g) => g.type === A.name).map((g) => g.n)).toEqual([1, 2, 3])
  expect(got.find((g) => g.type === B.name)?.n).toBe(100)
  expect(lines.some((l) => l.level === 'warn' && /sent again once the bus answers/.test(l.msg))).toBe(true)
  expect(lines.some((l) => l.level === 'info' && l.msg === 'bus backlog sent')).toBe(true)
  // with nothing waiting, the next change goes straight to the bus again
  const c = state.calls
  await publishChange(bus, logger, A, { n: 4 })
  expect(state.calls).toBe(c + 1)
  expect(got.at(-1)).toEqual({ type: A.name, n: 4 })
})

test('while the bus stays away the backlog keeps trying (with backoff), keeping the order across channels', async () => {
  const sent: string[] = []
  let up = false
  const { logger } = keeping()
  const b = new ChangeBacklog(async (type, data) => {
    if (!up) throw new Error('down')
    sent.push(`${type}:${(data as { n: number }).n}`)
  }, logger)
  b.add('a', { n: 1 }, new Error('down'))
  b.add('b', { n: 1 }, new Error('down'))
  b.add('a', { n: 2 })
  expect(b.holds('a')).toBe(true)
  expect(b.holds('c')).toBe(false)
  await Bun.sleep(600)
  expect(sent).toEqual([])
  expect(b.size).toBe(3)
  up = true
  await until(() => b.size === 0, 5000)
  expect(sent).toEqual(['a:1', 'b:1', 'a:2'])
  expect(b.holds('a')).toBe(false)
})

test('bounded by count: past it the oldest changes are dropped, with an error naming the safety net', async () => {
  const { logger, lines } = keeping()
  const sent: number[] = []
  let refuse = true
  const b = new ChangeBacklog(
    async (_t, d) => {
      if (refuse) throw new Error('down')
      sent.push((d as { n: number }).n)
    },
    logger,
    { max: 3 },
  )
  for (let n = 1; n <= 5; n++) b.add('a', { n }, new Error('down'))
  expect(b.size).toBe(3)
  const err = lines.filter((l) => l.level === 'error')
  expect(err.length).toBe(2)
  expect(err[0]!.msg).toContain('resync or next takeover')
  // the newest are kept, still in order
  refuse = false
  await b.flush()
  expect(sent).toEqual([3, 4, 5])
})

test('bounded by age: a change older than the bound is dropped (error), the newer ones still go', async () => {
  const { logger, lines } = keeping()
  let now = 1_000_000
  let refuse = true
  const sent: number[] = []
  const b = new ChangeBacklog(
    async (_t, d) => {
      if (refuse) throw new Error('down')
      sent.push((d as { n: number }).n)
    },
    logger,
    { maxAgeMs: 60_000, now: () => now },
  )
  b.add('a', { n: 1 }, new Error('down'))
  now += 50_000
  b.add('a', { n: 2 })
  expect(b.oldestAgeMs).toBe(50_000)
  now += 20_000
  refuse = false
  await b.flush()
  expect(sent).toEqual([2])
  expect(lines.some((l) => l.level === 'error' && l.fields?.dropped === 1)).toBe(true)
})

test('closing sends what waits when the bus answers; what it cannot send is logged lost, and later changes too', async () => {
  const { logger, lines } = keeping()
  const sent: number[] = []
  let up = false
  const b = new ChangeBacklog(async (_t, d) => {
    if (!up) throw new Error('down')
    sent.push((d as { n: number }).n)
  }, logger)
  b.add('a', { n: 1 }, new Error('down'))
  up = true
  await b.close(1000)
  expect(sent).toEqual([1])
  expect(lines.some((l) => l.level === 'error')).toBe(false)

  const down = new ChangeBacklog(async () => {
    throw new Error('down')
  }, logger)
  down.add('a', { n: 1 }, new Error('down'))
  const t0 = Date.now()
  await down.close(300)
  expect(Date.now() - t0).toBeLessThan(1500)
  expect(lines.some((l) => l.level === 'error' && l.fields?.lost === 1)).toBe(true)
  down.add('a', { n: 2 }, new Error('down'))
  expect(down.size).toBe(1)
  expect(lines.some((l) => l.level === 'error' && /the bus is closed/.test(l.msg))).toBe(true)
})

test('a change that can never be written (not JSON) is dropped with an error and holds nothing up', async () => {
  const { logger, lines } = keeping()
  const b = new ChangeBacklog(async () => {}, logger)
  b.add('a', { n: 1n }, new Error('down'))
  expect(b.size).toBe(0)
  expect(b.holds('a')).toBe(false)
  expect(lines.some((l) => l.level === 'error' && /cannot be written/.test(l.msg))).toBe(true)
})

/**
 * The edge (MessageBus.requestScoped): a timer armed in a request never fires once it has answered
 * (simulated: setTimeout does nothing). One refused change must not hold its channel for the isolate's
 * life: the next change of it, the bus answering again, sends both, within its own request.
 */
test('at the edge a refused change is sent by the next request, not by a timer that never fires', async () => {
  const { bus, got, state } = flakyBus()
  const edgeBus = Object.assign(Object.create(null), bus, { requestScoped: true }) as MessageBus
  const { logger } = keeping()
  const realSetTimeout = globalThis.setTimeout
  let armed = 0
  globalThis.setTimeout = ((_fn: () => void, _ms?: number) => {
    armed++
    return { unref() {} }
  }) as never
  try {
    state.up = false
    await publishChange(edgeBus, logger, A, { n: 1 })
    state.up = true
    for (let n = 2; n <= 5; n++) await publishChange(edgeBus, logger, A, { n })
  } finally {
    globalThis.setTimeout = realSetTimeout
  }
  expect(got.map((g) => g.n)).toEqual([1, 2, 3, 4, 5])
  expect(armed).toBe(0)
})

test('a pass cut off with its request (it never settles) does not hold the backlog: the next flush starts anew', async () => {
  let now = 1_000_000
  const sent: number[] = []
  let hang = true
  const { logger } = keeping()
  const b = new ChangeBacklog(
    (_type, data) => {
      if (hang) return new Promise(() => {})
      sent.push((data as { n: number }).n)
      return Promise.resolve('1-0')
    },
    logger,
    { timers: false, now: () => now },
  )
  b.add(A.name, { n: 1 }, new Error('refused'))
  void b.flush()
  hang = false
  now += 11_000
  await b.flush()
  expect([sent, b.size]).toEqual([[1], 0])
})

test('at the edge a request sends at most EDGE_FLUSH_MAX of the backlog; the next requests the rest, in order', async () => {
  const { bus, got, state } = flakyBus()
  const edgeBus = Object.assign(Object.create(null), bus, { requestScoped: true }) as MessageBus
  const { logger } = keeping()
  state.up = false
  for (let n = 1; n <= 50; n++) await publishChange(edgeBus, logger, A, { n })
  state.up = true
  const requests: number[] = []
  for (let n = 51; got.length < 53 && n < 60; n++) {
    const before = state.calls
    await publishChange(edgeBus, logger, A, { n })
    requests.push(state.calls - before)
  }
  expect(Math.max(...requests)).toBeLessThanOrEqual(EDGE_FLUSH_MAX)
  expect(got.map((g) => g.n)).toEqual(Array.from({ length: got.length }, (_, i) => i + 1))
})
