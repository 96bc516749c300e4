import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { databaseBefore } from '../support/database'

/**
 * Migration 0032 on subscriptions made before it: one ended (DISABLED) while paused has its fee dates moved
 * on by the time they stood still, as an end does from 0032 on, so a new subscription to the master reads
 * how long the period it paid still runs; a paused one still live keeps its stopped clock.
 */
const dir = mkdtempSync(join(tmpdir(), 'copy-ended-paused-migration-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('0032 moves on the fee dates of subscriptions ended while paused', async () => {
  const { client, upgrade } = await databaseBefore(dir, '0032')
  const sub = (id: number, status: number, pausedAt: number | null) =>
    client.execute({
      sql: `insert into copy_subscriptions (id, brand_id, customer_id, follower_login, master_id, master_login,
          status, settings, start_balance_minor, paused_at, next_fee_at, next_perf_at, created_at, updated_at)
          values (?, 1, 1, ?, 1, 1001, ?, '{}', 100, ?, 10000, null, 0, 5000)`,
      args: [id, 2000 + id, status, pausedAt],
    })
  await sub(1, 2, 1000)
  await sub(2, 1, 1000)
  await sub(3, 2, null)
  await upgrade()
  const rows = (
    await client.execute(
      'select id, paused_at, next_fee_at, next_perf_at from copy_subscriptions order by id',
    )
  ).rows.map((r) =>
    [r.id, r.paused_at, r.next_fee_at, r.next_perf_at].map((v) => (v === null ? null : Number(v))),
  )
  expect(rows).toEqual([
    [1, null, 14000, null],
    [2, 1000, 10000, null],
    [3, null, 10000, null],
  ])
  client.close()
})
