// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// A consumer with only an after-step (no handle, no delivery row): its failure is the event's, tried
// again and parked past the relay's attempts, as a handler's. Copy trading's SL/TP copy is one: a master's
// new stop lost to a read that failed was never copied to its followers.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { z } from 'zod'
import { ManualClock } from '../../src/kernel/clock'
import { defineTopic } from '../../src/kernel/events/topic'
import { defineModule } from '../../src/kernel/module'
import { makeTestApp, type TestApp } from '../support/app'

const Tick = defineTopic('after-probe.tick', z.object({ n: z.number().int() }))
const calls = new Map<number, number>()
const handled = new Map<number, number>()
/** the after-step throws for these payloads while they are here */
const refusing = new Set<number>()
const probeModule = defineModule({
  name: 'after-probe',
  tables: {},
  setup: () => ({
    consumers: [
      {
        name: 'after-probe.only-after',
        topic: Tick,
        async after(e) {
          calls.set(e.payload.n, (calls.get(e.payload.n) ?? 0) + 1)
          if (refusing.has(e.payload.n)) throw new Error(`after-step refuses ${e.payload.n}`)
        },
      },
      {
        name: 'after-probe.handler',
        topic: Tick,
        async handle(e) {
          handled.set(e.payload.n, (handled.get(e.payload.n) ?? 0) + 1)
        },
      },
    ],
  }),
})

const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0))
let t: TestApp
const emit = (n: number) => t.ctx.uow.run(async (_tx, work) => work.emit(Tick, 1, { n }))
const lastEventId = async () =>
  Number((await t.ctx.db.execute('select max(id) as id from outbox')).rows[0].id)
const outboxRow = async (id: number) =>
  (await t.ctx.db.execute({ sql: 'select * from outbox where id = ?', args: [id] })).rows[0] as unknown as {
    attempts: number
    dispatched_at: number | null
  }

beforeAll(async () => {
  t = await makeTestApp({ clock, modules: [probeModule] })
})
afterAll(() => t.close())

test('a failed after-step alone is tried again until it runs; the handler beside it runs once', async () => {
  refusing.add(1)
  await emit(1)
  const id = await lastEventId()
  await t.settle()
  expect(calls.get(1)).toBe(1)
  expect(await outboxRow(id)).toMatchObject({ attempts: 1, dispatched_at: null })
  refusing.delete(1)
  clock.advance(60_000)
  await t.settle()
  expect(calls.get(1)).toBe(2)
  expect((await outboxRow(id)).dispatched_at).not.toBeNull()
  expect(handled.get(1)).toBe(1)
})

test('an after-step that keeps failing is parked for its consumer after the relay attempts', async () => {
  refusing.add(2)
  await emit(2)
  const id = await lastEventId()
  for (let i = 0; i < 10; i++) {
    clock.advance(300_000)
    await t.settle()
  }
  expect((await outboxRow(id)).dispatched_at).not.toBeNull()
  const parked = (
    await t.ctx.db.execute({
      sql: 'select consumer, attempts from dead_letters where event_id = ?',
      args: [id],
    })
  ).rows.map((r) => ({ consumer: r.consumer, attempts: Number(r.attempts) }))
  expect(parked).toEqual([{ consumer: 'after-probe.only-after', attempts: 8 }])
  expect(calls.get(2)).toBe(8)
  expect(handled.get(2)).toBe(1)
})
