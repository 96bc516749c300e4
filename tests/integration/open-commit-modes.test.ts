// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'

// Trade opens through either implementation of the commit port (ADR 0001): group commit (the default)
// and one transaction per request (GROUP_COMMIT=0). A burst of concurrent opens on one account must
// accept the same orders either way: the margin check runs on the committed state inside the write.

for (const groupCommit of ['1', '0'])
  describe(`GROUP_COMMIT=${groupCommit}`, () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0))
    let t: TestApp
    let dealer: string
    beforeAll(async () => {
      t = await makeTestApp({ clock, env: { GROUP_COMMIT: groupCommit } })
      dealer = await t.staffToken(3, 'dealer-pass-1')
      await quoteIngest(
        () => t,
        clock,
        () => dealer,
      )([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1 }])
    })
    afterAll(() => t.close())

    test('a burst of opens never spends the same free margin twice; each accepted open is one event', async () => {
      const token = await t.userToken(100002)
      // 10,000 USD at 1:100: one lot of EURUSD needs 1,100 USD of margin, so nine fit and the tenth not
      const burst = await Promise.all(
        Array.from({ length: 20 }, () =>
          t.request('POST', '/trade/open', {
            token,
            body: { login: 100002, cmd: 0, volume: 100, symbol: 'EURUSD', sl: 0, tp: 0 },
          }),
        ),
      )
      const accepted = burst.filter((r) => r.status === 200)
      const refused = burst.filter((r) => r.status !== 200)
      expect(accepted).toHaveLength(9)
      for (const r of refused) {
        expect([r.status, r.json.error]).toEqual([500, 'OPEN_ORDER_ERROR'])
        expect(r.json.message).toContain('not enough money')
      }
      const me = await t.request('GET', '/account/me?login=100002', { token })
      expect(me.json.margin).toBeCloseTo(9 * 1100, 2)
      expect(me.json.margin_free).toBeGreaterThanOrEqual(0)
      const events = await t.ctx.db.execute({
        sql: `select count(*) as n from outbox where topic = 'trade.opened' and json_extract(payload, '$.login') = ?`,
        args: [100002],
      })
      expect(Number(events.rows[0].n)).toBe(9)
    })
  })
