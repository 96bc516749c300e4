import { expect, test } from 'bun:test'
import { idTime } from '../../src/kernel/bus/bus'
import {
  Appender,
  BOUND_MARGIN_MS,
  BUS_STREAM,
  DEADLINE_TYPES,
  LatePublish,
  landedLate,
  lateAfter,
  onTime,
  publishLate,
  type Raw,
  rangeOf,
  type Send,
  StreamClock,
  xaddArgs,
} from '../../src/kernel/bus/stream'
import { silentLogger } from '../../src/kernel/logger'
import { DependencyDown } from '../../src/kernel/resilience'
// the price channel, as the market module declares it (its entries carry a deadline)
import '../../src/modules/market/quotes'

/** A stored row as XADD writes it (xaddArgs after the stream and the `*`), under the id `id`. */
const row = (id: string, n: number, deadline?: number, type = 'market.ticks'): Raw => [
  id,
  xaddArgs(type, { n }, 0, 0, deadline).slice(2) as string[],
]

// the probe's finding (scaleout, Redis paused): an XADD that timed out (the ingest answered 503) was run by
// Redis when it resumed, seconds later, and every instance applied the stale tick (an SL fired at it)
test('an entry whose id (the stream clock at append) is past the deadline its publisher wrote is late; without one, on time', () => {
  const args = xaddArgs('market.ticks', { ticks: [] }, 0, 0, 1_000_750)
  expect(args.slice(-2)).toEqual(['l', '1000750'])
  expect(args[0]).toBe(BUS_STREAM)
  // appended at the deadline: on time; a millisecond past it: late
  expect(landedLate(row('1000750-0', 1, 1_000_750))).toBe(false)
  expect(landedLate(row('1000751-0', 1, 1_000_750))).toBe(true)
  // the stall of the finding: 8 s later
  expect(landedLate(row('1008700-3', 1, 1_000_750))).toBe(true)
  // an older release's entry carries none: on time as before
  expect(xaddArgs('t', 1)).not.toContain('l')
  expect(landedLate(row('9999999-0', 1))).toBe(false)
  // only prices are bounded: a change notice (an older release wrote a deadline in it) is on time however late
  expect(DEADLINE_TYPES.has('market.ticks')).toBe(true)
  expect(landedLate(row('1008700-3', 1, 1_000_750, 'trading.accounts-changed'))).toBe(false)
})

test('the bound an append may land within (in the stream’s clock) is its publisher’s timeout less a rounding margin', () => {
  expect(lateAfter(1000)).toBe(1000 - BOUND_MARGIN_MS)
  expect(lateAfter(2000)).toBe(2000 - BOUND_MARGIN_MS)
  // a short timeout keeps half of itself
  expect(lateAfter(60)).toBe(30)
  // a late answer is a failure of the bus (the ingest's 503), saying how far past it landed
  const e = publishLate('1002000-0', 1_000_750, 1500, 750, silentLogger)
  expect(e).toBeInstanceOf(DependencyDown)
  expect(e.message).toContain('1250 ms past')
})

test('the stream clock: the largest lower bound measured; a bound an answer contradicts is dropped', () => {
  const c = new StreamClock()
  expect(c.offset).toBeNull()
  // the stream's clock is 800 ms ahead; appends answered in 1 to 40 ms
  c.sample(10_800 + 0, 10_000, 10_001)
  expect(c.offset).toBe(799)
  // an answer held up by this host (a GC pause of 2 s) lowers only its own bound
  c.sample(11_800, 11_000, 13_000)
  expect(c.offset).toBe(799)
  c.sample(14_800, 14_000, 14_000)
  expect(c.offset).toBe(800)
  // this host's clock steps forward 5 s (the stream's now 4,200 ms behind): the next answer contradicts
  // the estimate (above its upper bound), which is dropped at once: never later than the truth
  c.sample(15_800, 20_000, 20_001)
  expect(c.offset).toBe(-4_201)
  // a window later the old measurements go: an estimate follows a clock that drifts down
  c.sample(15_900 + 40_000, 20_100 + 40_000, 20_110 + 40_000)
  c.sample(15_900 + 80_000, 20_100 + 80_000 + 5, 20_110 + 80_000)
  expect(c.offset).toBe(-4_210)
})

/**
 * A fake Redis stream at `skew` ms from this host's clock (Date.now), answering XADD after `delay` ms of
 * its clock (the append lands at the end of it) and TIME at once. Returns the stored rows.
 */
function fakeStream(skew: () => number, delay: () => number) {
  const rows: Raw[] = []
  let seq = 0
  let last = 0
  const send: Send = async (cmd, args) => {
    if (cmd === 'TIME') {
      const ms = Date.now() + skew()
      return [String(Math.floor(ms / 1000)), String((ms % 1000) * 1000)]
    }
    expect(cmd).toBe('XADD')
    const d = delay()
    if (d > 0) await Bun.sleep(d)
    const ms = Math.max(Date.now() + skew(), last)
    seq = ms === last ? seq + 1 : 0
    last = ms
    const id = `${ms}-${seq}`
    rows.push([id, args.slice(args.indexOf('*') + 1)])
    return id
  }
  return { rows, send }
}

test('skew cancels: with the stream 800 ms ahead or 5 s behind, a fast append is on time and one past the timeout is late', async () => {
  for (const skew of [800, -5_000, 0]) {
    let delay = 1
    const s = fakeStream(
      () => skew,
      () => delay,
    )
    const a = new Appender(s.send, 1000, silentLogger)
    // the first tick asks TIME once; change notices and ticks after it ask nothing more
    await a.append('market.ticks', { n: 1 })
    await a.append('trading.accounts-changed', { n: 2 })
    await a.append('market.ticks', { n: 3 })
    expect(Math.abs(a.clock.offset! - skew)).toBeLessThanOrEqual(2)
    // a stall: this tick lands 1,100 ms after it was sent, past its publisher's 1 s bound
    delay = 1100
    const late = await a.append('market.ticks', { n: 4 }).catch((e: unknown) => e)
    expect(late).toBeInstanceOf(LatePublish)
    // a change notice stalled as long is published (late, but still true)
    expect(idTime(await a.append('trading.accounts-changed', { n: 5 }))).toBeGreaterThan(0)
    delay = 1
    await a.append('market.ticks', { n: 6 })
    const { entries, late: dropped } = onTime(s.rows)
    expect(entries.map((e) => (e.data as { n: number }).n)).toEqual([1, 2, 3, 5, 6])
    expect(dropped).toBe(1)
    // only ticks carry a deadline
    expect(s.rows.filter(([, f]) => f.includes('l')).length).toBe(4)
  }
}, 20_000)

test('a failed call forgets the offset: the next tick asks TIME again (Redis may be back as another server)', async () => {
  let skew = 0
  const s = fakeStream(
    () => skew,
    () => 0,
  )
  let fail = false
  const calls: string[] = []
  const send: Send = async (cmd, args) => {
    calls.push(cmd)
    if (fail) throw new DependencyDown('bus', 'down')
    return s.send(cmd, args)
  }
  const a = new Appender(send, 1000, silentLogger)
  await a.append('market.ticks', { n: 1 })
  await a.append('market.ticks', { n: 2 })
  expect(calls).toEqual(['TIME', 'XADD', 'XADD'])
  fail = true
  await a.append('market.ticks', { n: 3 }).catch(() => {})
  expect(a.clock.offset).toBeNull()
  fail = false
  // back as a Redis whose clock is 3 s ahead: measured before the next deadline is written
  skew = 3000
  await a.append('market.ticks', { n: 4 })
  expect(calls.slice(3)).toEqual(['XADD', 'TIME', 'XADD'])
  expect(onTime(s.rows).entries.map((e) => (e.data as { n: number }).n)).toEqual([1, 2, 4])
})

test('readers drop late entries: a subscription’s batch and range (which still fills its limit past them)', async () => {
  const rows: Raw[] = [
    row('100-0', 1, 200),
    row('900-0', 2, 150), // late
    row('901-0', 3, 2000),
    row('902-0', 4, 160), // late
    row('903-0', 5),
    row('904-0', 6, 2000),
  ]
  const { entries, late } = onTime(rows)
  expect(entries.map((e) => (e.data as { n: number }).n)).toEqual([1, 3, 5, 6])
  expect(late).toBe(2)
  // a fake stream answering XRANGE <start> + COUNT <n> (start inclusive; '-' from the first)
  const send: Send = async (cmd, args) => {
    expect(cmd).toBe('XRANGE')
    const [, start, , , count] = args
    const from = start === '-' ? 0 : rows.findIndex((r) => r[0] === start)
    return rows.slice(from, from + Number(count))
  }
  const n = (es: { data: unknown }[] | null) => es?.map((e) => (e.data as { n: number }).n)
  // three on time after the first: read past the late ones, so a full answer still means "more may follow"
  expect(n(await rangeOf(send, '100-0', 3))).toEqual([3, 5, 6])
  expect(n(await rangeOf(send, '100-0', 2))).toEqual([3, 5])
  expect(n(await rangeOf(send, '0-0', 10))).toEqual([1, 3, 5, 6])
  expect(n(await rangeOf(send, '903-0', 10))).toEqual([6])
  expect(n(await rangeOf(send, '904-0', 10))).toEqual([])
})
