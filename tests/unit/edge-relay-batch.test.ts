import { expect, test } from 'bun:test'
import { systemClock } from '../../src/kernel/clock'
import type { Db } from '../../src/kernel/db/client'
import { EDGE_RELAY_BATCH, eventJobs } from '../../src/kernel/events/jobs'

/** What the relay job asked of a relay that records its calls. */
async function relayRun(edge: boolean) {
  const calls: string[] = []
  const relay = {
    drain: async () => void calls.push('drain'),
    pass: async (limit?: number) => {
      calls.push(`pass ${limit}`)
      return limit ?? 0
    },
  }
  const job = eventJobs({} as Db, systemClock, relay, 60_000, edge).find((j) => j.name === 'events.relay')!
  await job.run({ now: Date.now() })
  return calls
}

test('a scheduled run at the edge relays one bounded batch (a Worker has 1,000 subrequests); a server drains', async () => {
  expect(await relayRun(true)).toEqual([`pass ${EDGE_RELAY_BATCH}`])
  expect(await relayRun(false)).toEqual(['drain'])
})
