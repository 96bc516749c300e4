import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { databaseBefore } from '../support/database'

/**
 * Migration 0026 on subscriptions made before it: each keeps the manual_trading_mode its master has now,
 * the mode it has been held to, so the migration itself frees or binds no follower.
 */
const dir = mkdtempSync(join(tmpdir(), 'copy-manual-migration-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('0026 gives each subscription the manual_trading_mode of its master', async () => {
  const { client, upgrade } = await databaseBefore(dir, '0026')
  const master = (id: number, mode: number) =>
    client.execute({
      sql: `insert into copy_masters (id, brand_id, customer_id, login, name, allowed_follower_modes,
          show_trade_history, show_followers, manual_trading_mode, reward_type, reward_params, payout_login,
          enabled, public, currency, created_at, updated_at)
          values (?, 1, 1, ?, 'm', 2, 0, 0, ?, 2, '{}', ?, 1, 1, 'USD', 0, 0)`,
      args: [id, 1000 + id, mode, 1000 + id],
    })
  const sub = (id: number, masterId: number, status: number) =>
    client.execute({
      sql: `insert into copy_subscriptions (id, brand_id, customer_id, follower_login, master_id, master_login,
          status, settings, start_balance_minor, created_at, updated_at)
          values (?, 1, 1, ?, ?, ?, ?, '{}', 100, 0, 0)`,
      args: [id, 2000 + id, masterId, 1000 + masterId, status],
    })
  await master(1, 0)
  await master(2, 1)
  await master(3, 2)
  await sub(1, 1, 0)
  await sub(2, 2, 1)
  await sub(3, 3, 0)
  await sub(4, 1, 2)

  await upgrade()
  const rows = (
    await client.execute('select id, manual_trading_mode from copy_subscriptions order by id')
  ).rows.map((r) => [Number(r.id), Number(r.manual_trading_mode)])
  expect(rows).toEqual([
    [1, 0],
    [2, 1],
    [3, 2],
    [4, 0],
  ])
  client.close()
})
