// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// RevShare rounded once per period at a constant cost per delivery (ADR 0024, amendment on rounding): each
// group's running totals (`affiliate_revshare_totals`) move by what a delivery changed. After deliveries in
// a shuffled order, some repeated, some of them moving a row to another time or month, the totals equal a
// fresh aggregate of the rows, and the rounding rows are what the aggregate gave (share(Σ basis) − Σ paid,
// the rows' rate, their latest time). A full re-derivation changes nothing and mends totals that drifted; a
// close rounds exactly and drops the totals of what it closed.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { customers } from '../../src/modules/accounts/schema'
import { share } from '../../src/modules/affiliate/domain/plans'
import { commissions, referredCustomers } from '../../src/modules/affiliate/schema'
import { reconcileCommissions } from '../../src/modules/affiliate/service/commission-ledger'
import { CashierCredited, CashierReversed, WithdrawalPaid } from '../../src/modules/cashier'
import { KycApproved } from '../../src/modules/kyc'
import { affiliateEvents } from '../support/affiliate-facts'
import { makeTestApp, type TestApp } from '../support/app'

const DAY = 86_400_000
const T0 = Date.UTC(2026, 7, 1, 9) // 2026-08-01: plans assigned, customers registered
const AUG = Date.UTC(2026, 7, 20, 9)
const clock = new ManualClock(T0)
let t: TestApp
let n = 0
const { emitAt, money, trade, bonus } = affiliateEvents(() => t, clock)
type Customer = { id: number; login: number }

const asStaff = async (method: string, path: string, body?: unknown) =>
  t.request(method, path, { token: await t.staffToken(), ...(body === undefined ? {} : { body }) })

async function partnerOnPlan(name: string, terms: Record<string, unknown>) {
  clock.set(T0)
  const partner = await asStaff('POST', '/manager/affiliates', {
    email: `${name}@example.com`,
    code: `${name.toUpperCase()}1`,
    password: `${name}-pass-1`,
  })
  expect(partner.status).toBe(200)
  const link = await asStaff('POST', '/manager/affiliate-links', {
    affiliate_id: partner.json.id,
    code: `${name}-link`,
  })
  expect(link.status).toBe(200)
  const plan = await asStaff('POST', '/manager/affiliate-plans', { name, terms })
  expect(plan.status).toBe(200)
  expect(
    (await asStaff('PUT', `/manager/affiliates/${partner.json.id}/plan`, { plan_id: plan.json.id })).status,
  ).toBe(200)
  return { id: partner.json.id as number, plan: plan.json.id as number }
}

async function referred(link: string): Promise<Customer> {
  clock.set(T0)
  const email = `totals-${++n}@example.com`
  const r = await t.request('POST', '/customer/register', {
    body: { email, password: 'totals-pass-1', name: 'T', attribution: { link } },
  })
  expect(r.status).toBe(200)
  const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
  const acc = await asStaff('POST', '/manager/accounts', {
    group: 'real\\USD',
    password: 'totals-pass-1',
    customer_id: c!.id,
  })
  expect(acc.status).toBe(200)
  return { id: c!.id, login: acc.json.login as number }
}

function rng(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

const num = (v: unknown) => Number(v)

/** The open periods' RevShare customer rows summed per group, as the aggregate of 3fa44e4 read them. */
async function aggregate() {
  const rows = (await t.ctx.db.all(sql`
    SELECT c.brand_id AS brand, c.affiliate_id AS affiliate, c.period, c.plan_id AS plan,
      c.plan_version AS version, c.currency, sum(c.basis_minor) AS basis, sum(c.amount_minor) AS paid,
      max(c.rate_bp) AS bp, count(*) AS n, max(c.event_time) AS at
    FROM affiliate_commissions c
    WHERE c.kind IN ('revshare', 'revshare_reversal') AND c.customer_id <> 0
      AND c.period > coalesce((SELECT max(p.period) FROM affiliate_periods p WHERE p.brand_id = c.brand_id), '')
    GROUP BY c.brand_id, c.affiliate_id, c.period, c.plan_id, c.plan_version, c.currency`)) as Record<
    string,
    unknown
  >[]
  return rows.map((r) => ({
    group: `${num(r.brand)}/${num(r.affiliate)}/${r.period}/${num(r.plan)}.${num(r.version)}/${r.currency}`,
    key: `round:${r.period}:${num(r.plan)}.${num(r.version)}:${r.currency}`,
    brand: num(r.brand),
    affiliate: num(r.affiliate),
    period: String(r.period),
    currency: String(r.currency),
    basis: num(r.basis),
    paid: num(r.paid),
    bp: num(r.bp),
    n: num(r.n),
    at: num(r.at),
  }))
}

/** The stored running totals, in the aggregate's shape. */
async function storedTotals() {
  const rows = (await t.ctx.db.all(sql`
    SELECT brand_id AS brand, affiliate_id AS affiliate, period, plan_id AS plan, plan_version AS version,
      currency, basis_minor AS basis, paid_minor AS paid, rate_bp AS bp, "rows" AS n, event_time AS at
    FROM affiliate_revshare_totals`)) as Record<string, unknown>[]
  return rows
    .map((r) => ({
      group: `${num(r.brand)}/${num(r.affiliate)}/${r.period}/${num(r.plan)}.${num(r.version)}/${r.currency}`,
      basis: num(r.basis),
      paid: num(r.paid),
      bp: num(r.bp),
      n: num(r.n),
      at: num(r.at),
    }))
    .sort((a, b) => a.group.localeCompare(b.group))
}

/** The totals and rounding rows the aggregate approach would give, and what is stored. */
async function compare() {
  const agg = await aggregate()
  const expectedTotals = agg
    .map(({ group, basis, paid, bp, n, at }) => ({ group, basis, paid, bp, n, at }))
    .sort((a, b) => a.group.localeCompare(b.group))
  const expectedRounding = agg
    .map((g) => ({
      at: `${g.brand}/${g.affiliate}/${g.period}/${g.key}/${g.currency}`,
      amount: share(g.basis, g.bp) - g.paid,
      bp: g.bp,
      time: g.at,
    }))
    .filter((r) => r.amount !== 0)
    .sort((a, b) => a.at.localeCompare(b.at))
  const rounding = (
    (await t.ctx.db.all(sql`
      SELECT c.brand_id AS brand, c.affiliate_id AS affiliate, c.period, c.key, c.currency, c.amount_minor AS amount,
        c.rate_bp AS bp, c.event_time AS time, c.basis_minor AS basis, c.kind
      FROM affiliate_commissions c
      WHERE c.customer_id = 0 AND c.key LIKE 'round:%'
        AND c.period > coalesce((SELECT max(p.period) FROM affiliate_periods p WHERE p.brand_id = c.brand_id), '')`)) as Record<
      string,
      unknown
    >[]
  )
    .map((r) => {
      expect([r.kind, num(r.basis)]).toEqual(['revshare', 0])
      return {
        at: `${num(r.brand)}/${num(r.affiliate)}/${r.period}/${r.key}/${r.currency}`,
        amount: num(r.amount),
        bp: num(r.bp),
        time: num(r.time),
      }
    })
    .sort((a, b) => a.at.localeCompare(b.at))
  return { totals: await storedTotals(), expectedTotals, rounding, expectedRounding }
}

async function expectTotalsOfRows() {
  const c = await compare()
  expect(c.totals).toEqual(c.expectedTotals)
  expect(c.rounding).toEqual(c.expectedRounding)
  return c
}

const partners: { id: number; plan: number; customers: Customer[] }[] = []

async function rederive(p: { id: number }, c: Customer) {
  const [rc] = await t.ctx.db.select().from(referredCustomers).where(eq(referredCustomers.customerId, c.id))
  await t.ctx.db.transaction((tx) =>
    reconcileCommissions(t.ctx as never, tx, {
      brandId: rc!.brandId,
      customerId: c.id,
      affiliateId: p.id,
      linkId: rc!.linkId,
      tracking: {},
    }),
  )
}

beforeAll(async () => {
  t = await makeTestApp({ clock })
})
afterAll(() => t.close())

describe('running totals per group', () => {
  test('deliveries shuffled, repeated and moved in time leave the totals of the rows and the rounding of the aggregate', async () => {
    const trading = await partnerOnPlan('tot-trading', {
      type: 'revshare',
      revshare_bp: 3333,
      revshare_basis: 'trading_revenue',
      markup_per_lot: { USD: 7 },
      hold_days: 0,
      sub_affiliate_bp: 0,
    })
    const deposits = await partnerOnPlan('tot-deposits', {
      type: 'hybrid',
      cpa: { USD: 1_000, EUR: 900 },
      qualify: { min_first_deposit: { USD: 500, EUR: 500 }, kyc_approved: true },
      revshare_bp: 1_250,
      revshare_basis: 'net_deposits',
      hold_days: 7,
      sub_affiliate_bp: 0,
    })
    // a second version from mid-September: its rows are a group of their own
    clock.set(Date.UTC(2026, 8, 15))
    const revised = await asStaff('PUT', `/manager/affiliate-plans/${trading.plan}`, {
      terms: {
        type: 'revshare',
        revshare_bp: 2_717,
        revshare_basis: 'trading_revenue',
        markup_per_lot: { USD: 7 },
        hold_days: 0,
        sub_affiliate_bp: 0,
      },
    })
    expect(revised.status).toBe(200)
    partners.push({ ...trading, customers: [] }, { ...deposits, customers: [] })

    for (const [p, seed] of [
      [partners[0]!, 7],
      [partners[1]!, 11],
    ] as const) {
      const r = rng(seed)
      const steps: (() => Promise<void>)[] = []
      // August 20 to October 20: three months open, two plan versions
      const when = () => AUG + Math.floor(r() * 61 * DAY) + Math.floor(r() * 1_000) * 1_000
      for (let k = 0; k < 6; k++) {
        const c = await referred(p.id === trading.id ? 'tot-trading-link' : 'tot-deposits-link')
        p.customers.push(c)
        const base = 10_000_000 + c.id * 100
        if (p.id === trading.id) {
          for (let i = 0; i < 5 + Math.floor(r() * 5); i++) {
            const at = when()
            const ticket = base + i
            const commission = -1 - Math.floor(r() * 13)
            const swap = r() < 0.3 ? Math.floor(r() * 9) : 0
            const volume = 1 + Math.floor(r() * 3)
            steps.push(() => trade(c, ticket, at, commission, swap, volume))
            // the same close again: once more as it was, or later, or earlier (its row moves)
            if (r() < 0.35) {
              const again = r() < 0.3 ? at : at + Math.floor((r() - 0.5) * 40 * DAY)
              steps.push(() => trade(c, ticket, again, commission, swap, volume))
            }
          }
          // a close at the end of the window reported again weeks earlier: when it was the group's latest,
          // the latest left is found again
          const last = Date.UTC(2026, 9, 20) + Math.floor(r() * 4 * DAY)
          const early = last - DAY * (1 + Math.floor(r() * 40))
          steps.push(() => trade(c, base + 40, last, -5, 0, 1))
          steps.push(() => trade(c, base + 40, early, -5, 0, 1))
          if (r() < 0.6) {
            const at = when()
            const amount = 1 + Math.floor(r() * 40)
            steps.push(() => bonus(c, base + 50, at, amount))
          }
        } else {
          for (let i = 0; i < 2 + Math.floor(r() * 3); i++) {
            const at = when()
            const tx = base + i
            const currency = r() < 0.3 ? 'EUR' : 'USD'
            const amount = 1 + Math.floor(r() * 999)
            steps.push(() => emitAt(at, CashierCredited, money(c, tx, amount, currency)))
            if (r() < 0.35) {
              const again = at + Math.floor((r() - 0.5) * 30 * DAY)
              steps.push(() => emitAt(again, CashierCredited, money(c, tx, amount, currency)))
            }
            if (r() < 0.4) {
              const back = at + Math.floor(r() * 10 * DAY)
              const part = r() < 0.5 ? amount : 1 + Math.floor(r() * amount)
              steps.push(() =>
                emitAt(back, CashierReversed, { ...money(c, tx, part, currency), status: 'chargeback' }),
              )
            }
          }
          if (r() < 0.5) {
            const at = when()
            const amount = 1 + Math.floor(r() * 300)
            steps.push(() => emitAt(at, WithdrawalPaid, { ...money(c, base + 60, amount), hold: null }))
          }
          if (r() < 0.8) {
            const at = when()
            steps.push(() =>
              emitAt(at, KycApproved, { customer_id: c.id, status: 'approved', risk_level: 'low' }),
            )
          }
        }
      }
      // shuffle; some deliveries twice (a relay retry: the same event)
      for (let i = steps.length - 1; i > 0; i--) {
        const j = Math.floor(r() * (i + 1))
        ;[steps[i], steps[j]] = [steps[j]!, steps[i]!]
      }
      for (const [i, s] of steps.entries()) {
        await s()
        if (r() < 0.2) await s()
        if (i % 3 === 2) {
          clock.set(Date.UTC(2026, 9, 25))
          await t.settle()
        }
      }
      clock.set(Date.UTC(2026, 9, 25))
      await t.settle()
    }
    const c = await expectTotalsOfRows()
    // what the run covers: both partners, three months, two versions, two currencies, rounding rows
    const mine = c.totals.filter((g) => partners.some((p) => g.group.split('/')[1] === String(p.id)))
    expect(new Set(mine.map((g) => g.group.split('/')[2]))).toEqual(
      new Set(['2026-08', '2026-09', '2026-10']),
    )
    expect(new Set(mine.map((g) => g.group.split('/')[4]))).toEqual(new Set(['EUR', 'USD']))
    expect(new Set(mine.map((g) => g.group.split('/')[3]!.split('.')[1]))).toEqual(new Set(['1', '2']))
    expect(c.rounding.length).toBeGreaterThan(3)
  }, 120_000)

  test("a row taken from the group's latest time leaves the rounding row at the latest one left", async () => {
    const p = await partnerOnPlan('tot-latest', {
      type: 'revshare',
      revshare_bp: 2_500,
      revshare_basis: 'trading_revenue',
      hold_days: 0,
      sub_affiliate_bp: 0,
    })
    const c = await referred('tot-latest-link')
    const at10 = Date.UTC(2026, 9, 10, 12)
    const at20 = Date.UTC(2026, 9, 20, 12)
    // 3 + 3 cents at 25 %: each row pays 0, the period 1
    await trade(c, 20_000_001, at10, -3, 0, 1)
    await trade(c, 20_000_002, at20, -3, 0, 1)
    clock.set(Date.UTC(2026, 9, 25))
    await t.settle()
    const roundingRow = async () =>
      (await t.ctx.db.select().from(commissions).where(eq(commissions.affiliateId, p.id))).filter(
        (r) => r.customerId === 0,
      )
    expect((await roundingRow()).map((r) => [r.period, r.amountMinor, r.eventTime])).toEqual([
      ['2026-10', 1, at20],
    ])
    // the latest close reported again, earlier: its row moves to October 5, the latest left is October 10
    await trade(c, 20_000_002, Date.UTC(2026, 9, 5, 12), -3, 0, 1)
    clock.set(Date.UTC(2026, 9, 25))
    await t.settle()
    expect((await roundingRow()).map((r) => [r.period, r.amountMinor, r.eventTime])).toEqual([
      ['2026-10', 1, at10],
    ])
    // and again in September: October keeps one row of 3 cents (nothing to round), September one
    await trade(c, 20_000_001, Date.UTC(2026, 8, 28, 12), -3, 0, 1)
    await trade(c, 20_000_002, Date.UTC(2026, 8, 29, 12), -3, 0, 1)
    clock.set(Date.UTC(2026, 9, 25))
    await t.settle()
    expect((await roundingRow()).map((r) => [r.period, r.amountMinor, r.eventTime])).toEqual([
      ['2026-09', 1, Date.UTC(2026, 8, 29, 12)],
    ])
    partners.push({ ...p, customers: [c] })
    await expectTotalsOfRows()
  })

  test('a full re-derivation of every customer changes nothing, and mends totals that drifted', async () => {
    const snapshot = async () => ({
      rows: (await t.ctx.db.select().from(commissions))
        .map(
          (r) =>
            `${r.id}|${r.key}|${r.period}|${r.amountMinor}|${r.basisMinor}|${r.eventTime}|${r.updatedAt}`,
        )
        .sort(),
      totals: await storedTotals(),
    })
    const before = await snapshot()
    for (const p of partners) for (const c of [...p.customers].reverse()) await rederive(p, c)
    expect(await snapshot()).toEqual(before)

    // totals that drifted (a bug, a hand edit): the customer's re-derivation sums its groups again
    const p = partners[0]!
    const c = p.customers[0]!
    const [row] = await t.ctx.db
      .select()
      .from(commissions)
      .where(sql`${commissions.customerId} = ${c.id} and ${commissions.kind} = 'revshare'`)
    await t.ctx.db.run(sql`update affiliate_revshare_totals set basis_minor = basis_minor + 1001,
      paid_minor = paid_minor - 7, "rows" = "rows" + 3, event_time = 1
      where affiliate_id = ${p.id} and period = ${row!.period} and plan_id = ${row!.planId}
        and plan_version = ${row!.planVersion} and currency = ${row!.currency}`)
    expect((await compare()).totals).not.toEqual((await compare()).expectedTotals)
    await rederive(p, c)
    await expectTotalsOfRows()
  })
})

describe('the close', () => {
  /** Per open group of a closed period: its RevShare rows pay the rate of their whole basis, rounded once. */
  async function expectExact(period: string) {
    const groups = (await t.ctx.db.all(sql`
      SELECT affiliate_id AS affiliate, plan_id AS plan, plan_version AS version, currency,
        sum(basis_minor) AS basis, sum(amount_minor) AS paid, max(rate_bp) AS bp
      FROM affiliate_commissions
      WHERE period = ${period} AND kind IN ('revshare', 'revshare_reversal')
      GROUP BY affiliate_id, plan_id, plan_version, currency`)) as Record<string, unknown>[]
    const mine = groups.filter((g) => partners.some((p) => p.id === num(g.affiliate)))
    expect(mine.length).toBeGreaterThan(2)
    for (const g of mine) expect([g, num(g.paid)]).toEqual([g, share(num(g.basis), num(g.bp))])
  }

  test('closing September takes August with it, rounds both once and drops their totals; October keeps its own', async () => {
    clock.set(Date.UTC(2026, 9, 26))
    const close = await asStaff('POST', '/manager/affiliate-periods/2026-09/close')
    expect(close.status).toBe(200)
    await expectExact('2026-09')
    const periods = (await storedTotals())
      .filter((g) => partners.some((p) => g.group.split('/')[1] === String(p.id)))
      .map((g) => g.group.split('/')[2])
    expect(periods.filter((x) => x! <= '2026-09')).toEqual([])
    expect(periods).toContain('2026-10')
    await expectTotalsOfRows()
  })

  test('late facts of closed months correct in October: its totals follow; closing October rounds it exactly', async () => {
    const [trading, deposits] = partners
    const a = trading!.customers[0]!
    const b = deposits!.customers[0]!
    // a close of August reported late, another of September reported again later, a September deposit
    // charged back in part within the hold in October
    await trade(a, 30_000_001, Date.UTC(2026, 7, 25, 12), -7, 0, 1)
    await trade(a, 30_000_002, Date.UTC(2026, 8, 25, 12), -11, 0, 2)
    await trade(a, 30_000_002, Date.UTC(2026, 9, 2, 12), -11, 0, 2)
    await emitAt(Date.UTC(2026, 8, 26, 12), CashierCredited, money(b, 30_000_003, 333))
    await emitAt(Date.UTC(2026, 9, 2, 12), CashierReversed, {
      ...money(b, 30_000_003, 107),
      status: 'refunded',
    })
    clock.set(Date.UTC(2026, 9, 27))
    await t.settle()
    const late = await t.ctx.db
      .select()
      .from(commissions)
      .where(sql`${commissions.customerId} in (${a.id}, ${b.id}) and ${commissions.key} like '%:300000%'`)
    expect(late.map((r) => r.period)).toEqual(['2026-10', '2026-10', '2026-10', '2026-10'])
    await expectTotalsOfRows()

    clock.set(Date.UTC(2026, 10, 2))
    const close = await asStaff('POST', '/manager/affiliate-periods/2026-10/close')
    expect(close.status).toBe(200)
    await expectExact('2026-10')
    const left = (await storedTotals()).filter(
      (g) =>
        partners.some((p) => g.group.split('/')[1] === String(p.id)) && g.group.split('/')[2]! <= '2026-10',
    )
    expect(left).toEqual([])
  })
})
