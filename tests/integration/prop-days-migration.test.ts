import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { databaseBefore } from '../support/database'

/**
 * Migration 0025 on days written before it: a day's end becomes the next day's start, and `settled` says
 * which rows have every day before them ended. The stored end figures go; the days no pass ended yet are
 * the ones the next pass settles.
 */
const dir = mkdtempSync(join(tmpdir(), 'prop-days-migration-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('0025 settles every day whose days before it all ended, and leaves the others to the next pass', async () => {
  // the migrations up to 0024, as a database made before this one had them
  const { client, upgrade } = await databaseBefore(dir, '0025')
  const day = (phase: number, d: string, ended: boolean) =>
    client.execute({
      sql: `insert into prop_days (phase_id, day, start_balance, start_equity, end_balance, end_equity,
          min_equity, created_at) values (?, ?, 100, 100, ?, ?, 100, 0)`,
      args: [phase, d, ended ? 100 : null, ended ? 100 : null],
    })
  // phase 1: two days ended, today open (the usual shape after a day's first pass)
  await day(1, '2026-11-01', true)
  await day(1, '2026-11-02', true)
  await day(1, '2026-11-03', false)
  // phase 2: yesterday not ended yet, today's row made by the engine before the pass
  await day(2, '2026-11-01', true)
  await day(2, '2026-11-02', false)
  await day(2, '2026-11-03', false)
  // phase 3: its first day only
  await day(3, '2026-11-03', false)

  await upgrade()
  const rows = (
    await client.execute('select phase_id, day, settled from prop_days order by phase_id, day')
  ).rows.map((r) => [Number(r.phase_id), String(r.day), Number(r.settled)])
  expect(rows).toEqual([
    [1, '2026-11-01', 1],
    [1, '2026-11-02', 1],
    [1, '2026-11-03', 1],
    [2, '2026-11-01', 1],
    [2, '2026-11-02', 1],
    // yesterday (11-02) has not ended: the next pass settles today's row with it
    [2, '2026-11-03', 0],
    [3, '2026-11-03', 1],
  ])
  const columns = (await client.execute('pragma table_info(prop_days)')).rows.map((r) => String(r.name))
  expect(columns).not.toContain('end_balance')
  expect(columns).not.toContain('end_equity')
  const indexes = (await client.execute('pragma index_list(prop_days)')).rows.map((r) => String(r.name))
  expect(indexes).not.toContain('prop_days_open')
  client.close()
})
