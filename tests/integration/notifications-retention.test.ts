// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Notifications are kept NOTIFICATIONS_RETENTION_DAYS (here 2) and removed after by `notifications.prune`.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { pruneNotifications } from '../../src/modules/notifications/prune'
import { makeTestApp, type TestApp } from '../support/app'

const DAY = 86_400_000
const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0))
let t: TestApp

const send = async (title: string) =>
  t.request('POST', '/manager/notify', {
    token: await t.staffToken(1, 'manager-pass-1'),
    body: { login: 100001, title, body: 'details' },
  })
const titles = async () => {
  await t.settle()
  // signed in again: the clock moves days, past a session's life
  const r = await t.request('GET', '/notify/list?limit=500&offset=0&filter=', { token: await t.userToken() })
  expect(r.status).toBe(200)
  return (r.json.rows as [number, string, { title: string }][]).map((row) => row[2].title).sort()
}

beforeAll(async () => {
  t = await makeTestApp({ clock, env: { NOTIFICATIONS_RETENTION_DAYS: '2' } })
})
afterAll(() => t.close())

test('notifications past the retention are removed by notifications.prune; younger ones stay', async () => {
  for (let i = 0; i < 3; i++) expect((await send(`old ${i}`)).status).toBe(200)
  clock.advance(DAY)
  expect((await send('a day younger')).status).toBe(200)
  clock.advance(DAY + 60_000)
  expect((await send('new')).status).toBe(200)
  await t.settle()
  await t.runJob('notifications.prune')
  // the three written two days and a minute ago are gone; the one of a day and a minute ago stays
  expect(await titles()).toEqual(['a day younger', 'new'])
  clock.advance(DAY)
  await t.runJob('notifications.prune')
  expect(await titles()).toEqual(['new'])
})

test('a notification written out of order (a later id with an older time) is removed once past the retention', async () => {
  const old = Math.floor((clock.now() - 5 * DAY) / 1000)
  await t.ctx.db.run(
    sql`insert into notifications (brand_id, user_id, token, message, create_time, type, level)
        values (1, 100001, 'staff.message', '{"title":"late","body":""}', ${old}, 'system', 'info')`,
  )
  expect(await titles()).toEqual(['late', 'new'])
  await t.runJob('notifications.prune')
  expect(await titles()).toEqual(['new'])
})

test("at the edge a run takes 10 statements: an hour's notifications of a busy brand (6,000) in one run", async () => {
  const count = async () =>
    Number((await t.ctx.db.all<{ n: number }>(sql`select count(*) as n from notifications`))[0].n)
  const old = Math.floor((clock.now() - 100 * DAY) / 1000)
  await t.ctx.db.run(sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < 6000)
    insert into notifications (brand_id, user_id, token, message, create_time, type, level)
    select 1, 100001, 'alert.fired', '{"title":"a","body":""}', ${old}, 'alert', 'info' from n`)
  const before = await count()
  const edge = await pruneNotifications({ ...t.ctx, edge: true }, clock.now(), 2 * DAY)
  expect(edge.removed).toBe(6000)
  expect(before - (await count())).toBe(6000)
  expect(await titles()).toEqual(['new'])
})
