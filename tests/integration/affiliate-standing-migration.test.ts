import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { databaseBefore } from '../support/database'

/**
 * Migration 0033 on affiliates suspended and accesses revoked before it: each gets a standing change from
 * the migration on (when it changed is not known), so what they earn from then on is nothing; an active
 * affiliate and an active access get none (they stand active).
 */
const dir = mkdtempSync(join(tmpdir(), 'affiliate-standing-migration-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('0033 dates the standing of affiliates suspended and accesses revoked before it', async () => {
  const { client, upgrade } = await databaseBefore(dir, '0033')
  for (const [id, status] of [
    [1, 'active'],
    [2, 'suspended'],
  ] as const) {
    await client.execute({
      sql: `insert into affiliates (id, brand_id, email, code, status, created_at) values (?, 1, ?, ?, ?, 0)`,
      args: [id, `a${id}@example.com`, `A${id}`, status],
    })
  }
  for (const [affiliate, brand, status] of [
    [1, 1, 'active'],
    [1, 2, 'revoked'],
    [2, 1, 'active'],
  ] as const) {
    await client.execute({
      sql: `insert into affiliate_access (affiliate_id, brand_id, status, created_at) values (?, ?, ?, 0)`,
      args: [affiliate, brand, status],
    })
  }
  const before = Date.now()
  await upgrade()
  const rows = (
    await client.execute(
      'select affiliate_id, brand_id, status, from_time from affiliate_standing order by id',
    )
  ).rows.map((r) => [Number(r.affiliate_id), Number(r.brand_id), r.status, Number(r.from_time)])
  expect(rows.map((r) => r.slice(0, 3))).toEqual([
    [2, 0, 'suspended'],
    [1, 2, 'revoked'],
  ])
  for (const r of rows) {
    expect(r[3] as number).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000)
    expect(r[3] as number).toBeLessThanOrEqual(Date.now())
  }
  client.close()
})
