import { expect, test } from 'bun:test'
import {
  BUS_STREAM,
  landedLate,
  lateAfter,
  onTime,
  publishLate,
  type Raw,
  rangeOf,
  type Send,
  SKEW_MARGIN_MS,
  xaddArgs,
} from '../../src/kernel/bus/stream'
import { silentLogger } from '../../src/kernel/logger'
import { DependencyDown } from '../../src/kernel/resilience'

/** A stored row as XADD writes it (xaddArgs after the stream and the `*`), under the id `id`. */
const row = (id: string, n: number, deadline?: number): Raw => [
  id,
  xaddArgs('test.t', { n }, 0, 0, deadline).slice(2) as string[],
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
})

test('the bound an append may land within is its publisher’s timeout less the clock-skew margin', () => {
  expect(lateAfter(1000)).toBe(1000 - SKEW_MARGIN_MS)
  expect(lateAfter(2000)).toBe(2000 - SKEW_MARGIN_MS)
  // a short timeout keeps half of itself
  expect(lateAfter(300)).toBe(150)
  // a late answer is a failure of the bus (the ingest's 503), saying how far past it landed
  const e = publishLate('1002000-0', 1_000_750, 1500, 750, silentLogger)
  expect(e).toBeInstanceOf(DependencyDown)
  expect(e.message).toContain('1250 ms past')
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
