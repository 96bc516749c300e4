import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { databaseBefore } from '../support/database'

/**
 * Migration 0030 on subscriptions made before it: the ACTIVE ones of a master disabled then stop their fee
 * clock from the migration on; a paused one keeps the time it stopped, others are left as they are.
 */
const dir = mkdtempSync(join(tmpdir(), 'copy-fee-clock-migration-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('0030 stops the fee clock of the ACTIVE subscriptions of a disabled master', async () => {
  const { client, upgrade } = await databaseBefore(dir, '0030')
  const master = (id: number, enabled: number) =>
    client.execute({
      sql: `insert into copy_masters (id, brand_id, customer_id, login, name, allowed_follower_modes,
          show_trade_history, show_followers, manual_trading_mode, reward_type, reward_params, payout_login,
          enabled, public, currency, created_at, updated_at)
          values (?, 1, 1, ?, 'm', 2, 0, 0, 2, 0, '{}', ?, ?, 1, 'USD', 0, 0)`,
      args: [id, 1000 + id, 1000 + id, enabled],
    })
  const sub = (id: number, masterId: number, status: number, pausedAt: number | null) =>
    client.execute({
      sql: `insert into copy_subscriptions (id, brand_id, customer_id, follower_login, master_id, master_login,
          status, settings, start_balance_minor, paused_at, created_at, updated_at)
          values (?, 1, 1, ?, ?, ?, ?, '{}', 100, ?, 0, 0)`,
      args: [id, 2000 + id, masterId, 1000 + masterId, status, pausedAt],
    })
  await master(1, 1)
  await master(2, 0)
  await sub(1, 1, 0, null)
  await sub(2, 2, 0, null)
  await sub(3, 2, 1, 5_000)
  await sub(4, 2, 2, null)

  const before = Date.now()
  await upgrade()
  const rows = (await client.execute('select id, paused_at from copy_subscriptions order by id')).rows.map(
    (r) => [Number(r.id), r.paused_at === null ? null : Number(r.paused_at)] as const,
  )
  expect(rows.map(([id, at]) => [id, at === null ? null : at >= before - 1_000 ? 'now' : at])).toEqual([
    [1, null],
    [2, 'now'],
    [3, 5_000],
    [4, null],
  ])
  client.close()
})
