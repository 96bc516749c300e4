// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { makeTestApp, type TestApp } from '../support/app'

/**
 * The evaluator's calendar (spec 4.13): a phase's time limit counts the local days from the one it
 * started on, both counted, and fails the phase on the first day past it, not before.
 */

const DAY = 86_400_000
// Monday 10:00 in Prague
const clock = new ManualClock(Date.UTC(2026, 10, 23, 9, 0, 0))
let t: TestApp
let customer: string

beforeAll(async () => {
  t = await makeTestApp({ clock })
  customer = await t.customerToken()
})
afterAll(() => t.close())

test('max_trading_days 2: running on the start day and the next, failed on the third', async () => {
  const manager = await t.staffToken()
  const created = await t.request('POST', '/manager/prop/programs', {
    token: manager,
    body: {
      name: 'Two days',
      price: 10,
      currency: 'USD',
      active: true,
      time_zone: 'Europe/Prague',
      steps: [
        {
          account_group: 'prop\\eval\\USD',
          phase_type: 0,
          // a target nothing here reaches, and no position: only the time limit can end the phase
          rules: { profit_target_pct: 50, daily_loss_pct: 5, total_loss_pct: 10, max_trading_days: 2 },
        },
      ],
    },
  })
  expect(created.status).toBe(200)
  const bought = await t.request('POST', '/prop/challenge/buy', {
    token: customer,
    body: { program_id: created.json.id, payer_login: 100001 },
  })
  expect(bought.status).toBe(200)
  const id = bought.json.challenge.id as number
  // a day later the session has expired: a new sign-in each time
  const status = async () => {
    await t.runJob('prop.evaluate')
    return (await t.request('GET', `/prop/challenges/${id}`, { token: await t.customerToken() })).json
  }
  expect((await status()).challenge.status_name).toBe('active')
  clock.advance(DAY)
  expect((await status()).challenge.status_name).toBe('active')
  clock.advance(DAY)
  const d = await status()
  expect(d.challenge.status_name).toBe('failed')
  expect(d.latest_breach).toMatchObject({ rule: 'max_trading_days', limit: 2 })
})
