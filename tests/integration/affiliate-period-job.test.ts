// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// The job affiliate.period-close (issue 44): each brand with open rows of the last month has it closed
// once the grace days have passed; a second run, like another instance's, closes nothing.
import { expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { commissionPeriods } from '../../src/modules/affiliate/schema'
import { closeDuePeriods } from '../../src/modules/affiliate/service/periods'
import { makeTestApp } from '../support/app'

test('the last month closes after the grace days, once per brand with rows; a second run closes nothing', async () => {
  // the demo's history lies 10 to 35 days back: rows of October for both demo brands
  const clock = new ManualClock(Date.UTC(2026, 10, 3))
  const t = await makeTestApp({ clock })
  try {
    expect(await closeDuePeriods(t.ctx as never, 5)).toBe(0)
    clock.set(Date.UTC(2026, 10, 6, 1))
    expect(await closeDuePeriods(t.ctx as never, 5)).toBe(2)
    expect(await closeDuePeriods(t.ctx as never, 5)).toBe(0)
    const closed = await t.ctx.db.select().from(commissionPeriods)
    expect(closed.map((r) => r.period)).toEqual(['2026-10', '2026-10'])
  } finally {
    t.close()
  }
})
