// A consumer's interest asked as the events are written (ADR 0023): once per write for all its events, in
// the writer's transaction; an event no consumer is interested in is written dispatched and never
// claimed, one it is interested in is delivered.
// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { z } from 'zod'
import { type Consumer, defineTopic } from '../../src/kernel/events/topic'
import { defineModule } from '../../src/kernel/module'
import { makeTestApp, type TestApp } from '../support/app'

const Probe = defineTopic('interest.happened', z.object({ login: z.number().int() }))
type Payload = z.infer<typeof Probe.schema>
const asked: number[][] = []
let release = () => {}
const held = new Promise<void>((r) => {
  release = r
})
const handled: number[] = []
const interested: Consumer<Payload> = {
  name: 'interest.watchers',
  topic: Probe,
  // logins 1000 and above are never of interest, whatever the table says (pure, from the payload)
  accepts: (e) => e.payload.login < 1000,
  async interested(tx, events) {
    asked.push(events.map((e) => e.payload.login))
    if (events.some((e) => e.payload.login === 666)) throw new Error('the question failed')
    const logins = JSON.stringify(events.map((e) => e.payload.login))
    const rows = await tx.execute({
      sql: 'select login from interest_watched where login in (select value from json_each(?))',
      args: [logins],
    })
    const watched = new Set(rows.rows.map((r) => Number(r.login)))
    return events.map((e) => watched.has(e.payload.login))
  },
  async handle(e) {
    // the failed question's event is held here until the test has looked at its row (the relay may run
    // at once: on sqld it did, before the look)
    if (e.payload.login === 666) await held
    handled.push(e.payload.login)
  },
}
const probeModule = defineModule({
  name: 'interest',
  tables: {},
  setup: () => ({ consumers: [interested] }),
})

let t: TestApp

const emit = (logins: number[], watchFirst?: number) =>
  t.ctx.uow.run(async (tx, work) => {
    // interest created in the same transaction as the events: the writer sees it
    if (watchFirst !== undefined)
      await tx.execute({ sql: 'insert into interest_watched (login) values (?)', args: [watchFirst] })
    for (const login of logins) work.emit(Probe, 1, { login })
  })

async function outboxOf(logins: number[]) {
  const rows = await t.ctx.db.execute({
    sql: `select json_extract(payload, '$.login') as login, dispatched_at is not null as dispatched
          from outbox where topic = ? order by id`,
    args: [Probe.name],
  })
  const byLogin = new Map(rows.rows.map((r) => [Number(r.login), Number(r.dispatched) === 1]))
  return logins.map((l) => byLogin.get(l))
}

beforeAll(async () => {
  t = await makeTestApp({ modules: [probeModule] })
  await t.ctx.db.execute('create table interest_watched (login integer primary key)')
  await t.ctx.db.execute({ sql: 'insert into interest_watched (login) values (?), (?)', args: [2, 1002] })
})
afterAll(() => t.close())

test('one question for all the events of a write; only the interesting ones await the relay', async () => {
  asked.length = 0
  await emit([1, 2, 3, 1002])
  // 1002 is not accepted: never asked; the three others in one question
  expect(asked).toEqual([[1, 2, 3]])
  expect(await outboxOf([1, 2, 3, 1002])).toEqual([true, false, true, true])
  await t.settle()
  expect(handled).toEqual([2])
})

test('interest created by the same transaction counts (the writer sees its own writes)', async () => {
  handled.length = 0
  // the relay paused while the outbox is read: once awaited it is delivered (and marked) within milliseconds,
  // on sqld sometimes before the read's round trip
  await t.app.relay.whilePaused(async () => {
    await emit([5], 5)
    expect(await outboxOf([5])).toEqual([false])
  })
  await t.settle()
  expect(handled).toEqual([5])
})

test('an interest that appears after the write does not reach back: the event stays dispatched', async () => {
  handled.length = 0
  await emit([7])
  await t.ctx.db.execute({ sql: 'insert into interest_watched (login) values (?)', args: [7] })
  await t.settle()
  expect(await outboxOf([7])).toEqual([true])
  expect(handled).toEqual([])
})

test('a question that fails does not fail the write: its events await the relay, which delivers them', async () => {
  handled.length = 0
  await emit([666])
  expect(await outboxOf([666])).toEqual([false])
  release()
  await t.settle()
  expect(handled).toEqual([666])
})
