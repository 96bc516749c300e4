import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { databaseBefore } from '../support/database'

/**
 * Migration 0039 on a ledger written before it: each open period's RevShare customer rows are summed per
 * (brand, affiliate, period, plan version, currency) into `affiliate_revshare_totals`, the totals the
 * deliveries keep from then on. Closed periods, other kinds and the period-level rows (no customer) are
 * left out.
 */
const dir = mkdtempSync(join(tmpdir(), 'affiliate-revshare-totals-migration-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('0039 sums the RevShare rows of every open period into its group totals', async () => {
  // the migrations up to 0038, as a database made before this one had them
  const { client, upgrade } = await databaseBefore(dir, '0039')
  let key = 0
  const row = (
    brand: number,
    affiliate: number,
    customer: number,
    kind: string,
    period: string,
    amount: number,
    basis: number,
    plan: number,
    version: number,
    currency: string,
    at: number,
    bp = 2500,
  ) =>
    client.execute({
      sql: `insert into affiliate_commissions (brand_id, affiliate_id, customer_id, kind, key, period, amount_minor,
          currency, basis_minor, rate_bp, plan_id, plan_version, event_time, created_at, updated_at)
        values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0)`,
      args: [
        brand,
        affiliate,
        customer,
        kind,
        `k${++key}`,
        period,
        amount,
        currency,
        basis,
        bp,
        plan,
        version,
        at,
      ],
    })
  // brand 1 closed September: its September rows are done
  await client.execute(
    "insert into affiliate_periods (brand_id, period, closed_at, closed_by) values (1, '2026-08', 0, 0), (1, '2026-09', 0, 0)",
  )
  await row(1, 10, 100, 'revshare', '2026-09', 25, 100, 1, 1, 'USD', 1_000)
  // October: plan 1 version 1 in USD (three rows, one a reversal), in EUR, and version 2
  await row(1, 10, 100, 'revshare', '2026-10', 0, 3, 1, 1, 'USD', 2_000)
  await row(1, 10, 101, 'revshare', '2026-10', 2, 9, 1, 1, 'USD', 5_000)
  await row(1, 10, 102, 'revshare_reversal', '2026-10', -1, -5, 1, 1, 'USD', 4_000)
  await row(1, 10, 100, 'revshare', '2026-10', 3, 13, 1, 1, 'EUR', 3_000)
  await row(1, 10, 101, 'revshare', '2026-10', 7, 21, 1, 2, 'USD', 6_000, 3333)
  // not summed: a CPA, a rounding row (no customer), a tier adjustment
  await row(1, 10, 100, 'cpa', '2026-10', 10_000, 10_000, 1, 1, 'USD', 7_000, 0)
  await row(1, 10, 0, 'revshare', '2026-10', 1, 0, 1, 1, 'USD', 5_000)
  await row(1, 10, 0, 'tier_adjustment', '2026-10', 50, 100, 1, 1, 'USD', 8_000)
  // November, and another affiliate
  await row(1, 10, 100, 'revshare', '2026-11', 1, 7, 1, 2, 'USD', 9_000, 3333)
  await row(1, 11, 103, 'revshare', '2026-10', 4, 17, 2, 1, 'USD', 3_500)
  // brand 2 closed nothing: its August rows are open
  await row(2, 20, 200, 'revshare', '2026-08', 2, 11, 3, 1, 'USD', 500)
  await row(2, 20, 201, 'revshare', '2026-08', 1, 5, 3, 1, 'USD', 700)

  await upgrade()
  const rows = (
    await client.execute(
      `select brand_id, affiliate_id, period, plan_id, plan_version, currency, basis_minor, paid_minor, rate_bp,
         "rows", event_time from affiliate_revshare_totals
       order by brand_id, affiliate_id, period, plan_id, plan_version, currency`,
    )
  ).rows.map((r) => [
    Number(r.brand_id),
    Number(r.affiliate_id),
    String(r.period),
    `${Number(r.plan_id)}.${Number(r.plan_version)}`,
    String(r.currency),
    Number(r.basis_minor),
    Number(r.paid_minor),
    Number(r.rate_bp),
    Number(r.rows),
    Number(r.event_time),
  ])
  expect(rows).toEqual([
    [1, 10, '2026-10', '1.1', 'EUR', 13, 3, 2500, 1, 3_000],
    [1, 10, '2026-10', '1.1', 'USD', 7, 1, 2500, 3, 5_000],
    [1, 10, '2026-10', '1.2', 'USD', 21, 7, 3333, 1, 6_000],
    [1, 10, '2026-11', '1.2', 'USD', 7, 1, 3333, 1, 9_000],
    [1, 11, '2026-10', '2.1', 'USD', 17, 4, 2500, 1, 3_500],
    [2, 20, '2026-08', '3.1', 'USD', 16, 3, 2500, 2, 700],
  ])
  client.close()
})
