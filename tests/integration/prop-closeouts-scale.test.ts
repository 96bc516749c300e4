// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { CLOSE_OUT_WINDOW_MS } from '../../src/modules/prop/live'
import { TradingPort } from '../../src/modules/trading'
import { makeTestApp, type TestApp } from '../support/app'

/**
 * The engine's job `prop.closeouts` runs every minute: it reads the phases failed within its window by an
 * index (not every failed phase ever, most challenges fail), and asks trading only about the accounts of
 * those it has not yet found without positions (a failed phase's account is read-only: no position
 * appears on it later). Timings are printed, not asserted (two shared cores).
 */

const DAY = 86_400_000
const clock = new ManualClock(Date.UTC(2026, 10, 23, 9, 0, 0))
let t: TestApp
/** The logins trading was asked about, per call of its positions read. */
let asked: number[][] = []

beforeAll(async () => {
  t = await makeTestApp({ clock })
  const trading = t.ports.get(TradingPort)
  const read = trading.recentPositionsOf
  trading.recentPositionsOf = (logins, since) => {
    asked.push(logins)
    return read(logins, since)
  }
})
afterAll(() => t.close())

/** `n` failed phases (logins from `firstLogin`), the i-th failed `endOf(i)`; no account, no position. */
async function failedPhases(n: number, firstLogin: number, endOf: (i: number) => number) {
  const now = clock.now()
  const rows = Array.from({ length: n }, (_, i) => [firstLogin + i, endOf(i)])
  await t.ctx.db.execute({
    sql: `insert into prop_phases (brand_id, challenge_id, program_id, phase_index, phase_type, account_login,
            account_group, currency, rules, time_zone, status, initial_balance, initial_equity,
            highest_eod_balance, start_day, start_time, end_time, created_at, updated_at)
          select 1, 900000000 + j.value ->> 0, 1, 0, 0, j.value ->> 0, 'prop\\eval\\USD', 'USD', '{}', 'UTC', 3,
            1000000, 1000000, 1000000, '2026-11-01', ?1, j.value ->> 1, ?1, ?1
          from json_each(?2) j`,
    args: [now - 30 * DAY, JSON.stringify(rows)],
  })
}

const timed = async (label: string) => {
  asked = []
  const at = performance.now()
  await t.runJob('prop.closeouts')
  const ms = performance.now() - at
  const logins = asked.reduce((n, a) => n + a.length, 0)
  console.log(`prop.closeouts ${label}: ${ms.toFixed(1)} ms, ${logins} logins asked`)
  return logins
}

test('the periodic pass skips phases failed before its window, and asks again only about phases it has not found without positions', async () => {
  // 10,000 phases failed long ago: out of the window, not read
  await failedPhases(10_000, 50_000_000, (i) => clock.now() - CLOSE_OUT_WINDOW_MS - DAY - i * 60_000)
  expect(await timed('10,000 failed before the window')).toBe(0)
  // 10,000 failed within the window, none holding positions: asked about once
  await failedPhases(10_000, 60_000_000, (i) => clock.now() - 1000 - i * 50_000)
  expect(await timed('+10,000 failed within the window, first pass')).toBe(10_000)
  clock.advance(60_000)
  expect(await timed('second pass')).toBe(0)
  clock.advance(60_000)
  expect(await timed('third pass')).toBe(0)
  // one failed since: the only one asked about
  await failedPhases(1, 70_000_000, () => clock.now())
  clock.advance(60_000)
  asked = []
  await t.runJob('prop.closeouts')
  expect(asked.flat()).toEqual([70_000_000])
}, 120_000)
