// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { AccountsPort } from '../../src/modules/accounts'
import { fundsOf, holdingsOf } from '../../src/modules/trading/book/holdings-table'
import { makeTestApp, type TestApp } from '../support/app'

let t: TestApp
beforeAll(async () => {
  t = await makeTestApp()
})
afterAll(() => t.close())

test('the margin check read (rows as one JSON text) keeps every bit of a REAL and the integers', async () => {
  // 0.1 + 0.2 needs 17 significant digits; SQLite writes JSON numbers with 15
  const awkward = 0.1 + 0.2
  await t.ctx.db.run(sql`
    insert into holdings (login, symbol, cmd, volume, volume_price, commission, storage)
    values (100001, 'EURUSD', 0, 3, ${awkward}, -150, 25), (100001, 'XAUUSD', 1, 7, ${1e300 / 3}, 0, 0)`)
  const funds = (await fundsOf(t.ports.get(AccountsPort), t.ctx.db, [100001, 999_999_999])).get(100001)
  expect(funds?.holdings.find((h) => h.symbol === 'EURUSD')).toEqual({
    symbol: 'EURUSD',
    cmd: 0,
    volume: 3,
    volumePrice: awkward,
    commission: -150,
    storage: 25,
  })
  expect(funds?.holdings.find((h) => h.symbol === 'XAUUSD')?.volumePrice).toBe(1e300 / 3)
  expect(funds?.holdings).toEqual((await holdingsOf(t.ctx.db, [100001])).get(100001))
  const [a] = await t.ctx.db.all<{ balance: number; credit: number; leverage: number }>(
    sql`select balance, credit, leverage from accounts where login = 100001`,
  )
  expect(funds).toMatchObject(a)
  // an unknown login is absent, not an empty account
  expect((await fundsOf(t.ports.get(AccountsPort), t.ctx.db, [999_999_999])).size).toBe(0)
})
