import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { databaseBefore } from '../support/database'

/** Migration 0038: a prop phase's account made before it takes its phase's max_positions; others none. */
const dir = mkdtempSync(join(tmpdir(), 'max-positions-migration-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test("0038 gives each phase account its phase's max_positions and every other account no limit", async () => {
  const { client, upgrade } = await databaseBefore(dir, '0038')
  for (const login of [1, 2, 3])
    await client.execute({
      sql: `insert into accounts (login, brand_id, group_id, password_hash, leverage, regdate, update_time)
        values (?, 1, 1, 'x', 100, 0, 0)`,
      args: [login],
    })
  const phase = (login: number, rules: Record<string, unknown>) =>
    client.execute({
      sql: `insert into prop_phases (brand_id, challenge_id, program_id, phase_index, phase_type, account_login,
          account_group, currency, rules, time_zone, status, initial_balance, initial_equity, highest_eod_balance,
          start_day, start_time, created_at, updated_at)
        values (1, ?, 1, 1, 0, ?, 'g', 'USD', ?, 'UTC', 0, 100, 100, 100, '2026-11-01', 0, 0, 0)`,
      args: [login, login, JSON.stringify(rules)],
    })
  await phase(1, { daily_loss_pct: 5, max_positions: 3 })
  await phase(2, { daily_loss_pct: 5, max_positions: 0 })
  await upgrade()
  const rows = (await client.execute('select login, max_positions from accounts order by login')).rows.map(
    (r) => [Number(r.login), Number(r.max_positions)],
  )
  expect(rows).toEqual([
    [1, 3],
    [2, 0],
    [3, 0],
  ])
  client.close()
})
