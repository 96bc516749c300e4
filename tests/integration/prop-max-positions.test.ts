// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { buyChallenge, propTestApp } from '../support/prop'

/**
 * A prop phase's `max_positions`: its account holds no more open positions and pending orders together,
 * however many orders arrive at once, and the next phase's account takes that phase's own limit.
 */

// Monday 10:00 Prague
const app = propTestApp(new ManualClock(Date.UTC(2026, 10, 23, 9, 0, 0)))
const PASSWORD = 'phase-pass-1'

/** An evaluation step limited to `evaluation` orders (target 1%, no trading days), then a funded one. */
const program = async (evaluation: number, funded: number) => {
  const rules = { profit_target_pct: 1, daily_loss_pct: 5, total_loss_pct: 10, min_trading_days: 0 }
  const created = await app.t.request('POST', '/manager/prop/programs', {
    token: app.manager,
    body: {
      name: `Limits ${Math.random()}`,
      price: 10,
      currency: 'USD',
      active: true,
      time_zone: 'Europe/Prague',
      steps: [
        { account_group: 'prop\\eval\\USD', phase_type: 0, rules: { ...rules, max_positions: evaluation } },
        {
          account_group: 'prop\\funded\\USD',
          phase_type: 1,
          profit_split: 0.8,
          rules: { ...rules, profit_target_pct: 0, max_positions: funded },
        },
      ],
    },
  })
  expect(created.status).toBe(200)
  return created.json.id as number
}

const buy = (login: number, token: string, volume = 10) =>
  app.t.request('POST', '/trade/open', {
    token,
    body: { login, cmd: 0, volume, symbol: 'EURUSD', sl: 0, tp: 0 },
  })
const buyLimit = (login: number, token: string) =>
  app.t.request('POST', '/trade/open', {
    token,
    body: { login, cmd: 2, volume: 10, symbol: 'EURUSD', sl: 0, tp: 0, open_price: 1.05 },
  })
const held = async (login: number) =>
  Number(
    (
      await app.t.ctx.db.execute({
        sql: "select count(*) as n from orders where login = ? and state in ('open', 'pending')",
        args: [login],
      })
    ).rows[0]!.n,
  )

describe('a phase account holds at most max_positions orders', () => {
  test('a pending order takes a place; the order beyond the limit is refused and names it', async () => {
    const c = await buyChallenge(app.t, app.customer, await program(2, 0))
    expect((await buy(c.login, c.token)).status).toBe(200)
    const pending = await buyLimit(c.login, c.token)
    expect(pending.status).toBe(200)
    const refused = await buy(c.login, c.token)
    expect(refused.status).toBe(500)
    expect(refused.json.error).toBe('OPEN_ORDER_ERROR')
    expect(refused.json.message).toContain('may hold 2 positions and pending orders together; it holds 2')
    expect((await buyLimit(c.login, c.token)).status).toBe(500)
    expect(await held(c.login)).toBe(2)
    // a cancelled pending order gives its place back
    const cancelled = await app.t.request('DELETE', '/trade/cancel', {
      token: c.token,
      body: { order: pending.json.order },
    })
    expect(cancelled.status).toBe(200)
    expect((await buy(c.login, c.token)).status).toBe(200)
    expect(await held(c.login)).toBe(2)
  })

  test('twenty opens at once take exactly the places left', async () => {
    const c = await buyChallenge(app.t, app.customer, await program(3, 0))
    expect((await buy(c.login, c.token)).status).toBe(200)
    const all = await Promise.all(Array.from({ length: 20 }, () => buy(c.login, c.token)))
    expect(all.filter((r) => r.status === 200)).toHaveLength(2)
    expect(all.filter((r) => r.status === 500 && r.json.error === 'OPEN_ORDER_ERROR')).toHaveLength(18)
    expect(await held(c.login)).toBe(3)
  })

  test("the funded account takes the funded phase's limit", async () => {
    const c = await buyChallenge(app.t, app.customer, await program(1, 4))
    await app.t.runJob('prop.evaluate')
    const o = await buy(c.login, c.token, 100)
    expect(o.status).toBe(200)
    const ask = o.json.trade.open_price as number
    await app.ingest([{ symbol: 'EURUSD', bid: ask + 0.003, ask: ask + 0.0032 }])
    expect(
      (await app.t.request('DELETE', '/trade/close', { token: c.token, body: { order: o.json.order } }))
        .status,
    ).toBe(200)
    await app.t.runJob('prop.evaluate')
    const d = (await app.t.request('GET', `/prop/challenges/${c.challenge}`, { token: app.customer })).json
    expect(d.current_phase.phase_type).toBe(1)
    expect(d.current_phase.progress.max_positions).toBe(4)
    const login = d.current_phase.account_login as number
    expect(
      (await app.t.request('PUT', '/password', { token: app.manager, body: { login, password: PASSWORD } }))
        .status,
    ).toBe(200)
    const token = (await app.t.request('POST', '/sign/in', { body: { login, password: PASSWORD } })).json
      .__token
    const opens = []
    for (let i = 0; i < 5; i++) opens.push((await buy(login, token)).status)
    expect(opens).toEqual([200, 200, 200, 200, 500])
  })

  test('an account without a limit is not limited', async () => {
    const c = await buyChallenge(app.t, app.customer, await program(0, 0))
    const all = await Promise.all(Array.from({ length: 12 }, () => buy(c.login, c.token)))
    expect(all.every((r) => r.status === 200)).toBe(true)
  })
})
