import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { databaseBefore } from '../support/database'

/** Migration 0027 on purchases made before it: each keeps the steps its program has now. */
const dir = mkdtempSync(join(tmpdir(), 'prop-steps-migration-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test("0027 gives each purchase its program's steps", async () => {
  const { client, upgrade } = await databaseBefore(dir, '0027')
  await client.execute(`insert into prop_programs (id, brand_id, name, price_minor, currency, active, time_zone, steps,
      version, created_at, updated_at) values (7, 1, 'p', 100, 'USD', 1, 'UTC', '[{"phase_type":1}]', 3, 0, 0)`)
  for (const [id, program] of [
    [1, 7],
    [2, 99],
  ])
    await client.execute({
      sql: `insert into prop_purchases (id, brand_id, program_id, program_version, customer_id, payer_login,
          status, payment_status, activation_status, currency, amount_minor, created_at, updated_at)
          values (?, 1, ?, 3, 1, 100001, 0, 'paid', 'active', 'USD', 100, 0, 0)`,
      args: [id, program],
    })
  await upgrade()
  const rows = (await client.execute('select id, steps from prop_purchases order by id')).rows
  expect(rows.map((r) => [Number(r.id), String(r.steps)])).toEqual([
    [1, '[{"phase_type":1}]'],
    // a program gone: no steps known
    [2, '[]'],
  ])
  client.close()
})
