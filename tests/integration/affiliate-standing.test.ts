// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// What an affiliate earns follows its standing over time (a hostile probe: a suspended affiliate, and one
// whose access to the brand was revoked, kept earning RevShare and CPAs on its customers), and a closed
// period's correction keeps each currency apart (the probe: a CPA whose first deposit turned out to be a
// EUR one was corrected by a EUR row of the EUR amount less the USD amount paid).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { customers } from '../../src/modules/accounts/schema'
import { commissions, standingChanges } from '../../src/modules/affiliate/schema'
import { reconcileCommissions } from '../../src/modules/affiliate/service/commission-ledger'
import { CashierCredited, CashierReversed, WithdrawalPaid } from '../../src/modules/cashier'
import { KycApproved } from '../../src/modules/kyc'
import { affiliateEvents } from '../support/affiliate-facts'
import { makeTestApp, type TestApp } from '../support/app'

const DAY = 86_400_000
const T0 = Date.UTC(2026, 9, 5, 9) // 2026-10-05
const clock = new ManualClock(T0)
let t: TestApp
let n = 0

const asStaff = async (method: string, path: string, body?: unknown) =>
  t.request(method, path, { token: await t.staffToken(), ...(body === undefined ? {} : { body }) })

/** A partner `<name>@example.com` (code `<NAME>1`) with the link `<name>-link`, on a plan of its own. */
async function partner(name: string, terms: Record<string, unknown>) {
  clock.set(T0)
  const p = await asStaff('POST', '/manager/affiliates', {
    email: `${name}@example.com`,
    code: `${name.toUpperCase()}1`,
    password: `${name}-pass-1`,
  })
  expect(p.status).toBe(200)
  expect(
    (await asStaff('POST', '/manager/affiliate-links', { affiliate_id: p.json.id, code: `${name}-link` }))
      .status,
  ).toBe(200)
  const plan = await asStaff('POST', '/manager/affiliate-plans', { name, terms })
  expect(plan.status).toBe(200)
  await asStaff('PUT', `/manager/affiliates/${p.json.id}/plan`, { plan_id: plan.json.id })
  return { id: p.json.id as number, code: `${name.toUpperCase()}1` }
}

/** A customer referred by `<name>-link`, registered at T0, with a real USD account. */
async function referred(name: string) {
  clock.set(T0)
  const email = `standing-${++n}@example.com`
  const r = await t.request('POST', '/customer/register', {
    body: { email, password: 'standing-pass-1', name: 'S', attribution: { link: `${name}-link` } },
  })
  expect(r.status).toBe(200)
  const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
  const a = await asStaff('POST', '/manager/accounts', {
    group: 'real\\USD',
    password: 'standing-pass-1',
    customer_id: c.id,
  })
  expect(a.status).toBe(200)
  return { id: c.id, login: a.json.login as number }
}

const { emitAt, money, trade, bonus } = affiliateEvents(() => t, clock)
const rowsOf = async (customerId: number) =>
  (await t.ctx.db.select().from(commissions).where(eq(commissions.customerId, customerId)))
    .map((r) => ({
      key: r.key.replace(/^c\d+:/, ''),
      amount: r.amountMinor,
      currency: r.currency,
      period: r.period,
      corrects: r.corrects,
    }))
    .sort(
      (a, b) =>
        a.key.localeCompare(b.key) ||
        a.period.localeCompare(b.period) ||
        a.currency.localeCompare(b.currency),
    )
const setStatusAt = async (at: number, id: number, status: 'active' | 'suspended') => {
  clock.set(at)
  const r = await asStaff('PATCH', `/manager/affiliates/${id}`, { status })
  expect(r.status).toBe(200)
  expect(r.json.status).toBe(status)
}
const setAccessAt = async (at: number, code: string, status: 'active' | 'revoked') => {
  clock.set(at)
  const r = await asStaff('PUT', `/manager/affiliates/access/${code}`, { status })
  expect(r.status).toBe(200)
  expect(r.json.access_status).toBe(status)
}

beforeAll(async () => {
  t = await makeTestApp({ clock })
})
afterAll(() => t.close())

describe('a suspended affiliate earns nothing new', () => {
  const REVSHARE = {
    type: 'hybrid',
    cpa: { USD: 20_000 },
    qualify: { kyc_approved: true },
    revshare_bp: 5000,
    revshare_basis: 'trading_revenue',
    hold_days: 30,
    sub_affiliate_bp: 0,
  }

  test('facts while it is suspended add nothing; what takes back still does; it earns again once active', async () => {
    const p = await partner('paused', REVSHARE)
    const c = await referred('paused')
    await emitAt(T0 + DAY, CashierCredited, money(c, 40_001, 50_000))
    await trade(c, 41_001, T0 + DAY + 1_000, -1_000)
    await t.settle()
    await setStatusAt(T0 + 2 * DAY, p.id, 'suspended')
    // while suspended: a KYC approval that would qualify the CPA, a trade, a bonus (takes back)
    await emitAt(T0 + 3 * DAY, KycApproved, { customer_id: c.id, status: 'approved', risk_level: 'low' })
    await trade(c, 41_002, T0 + 3 * DAY, -2_000)
    await bonus(c, 42_001, T0 + 3 * DAY, 600)
    // a bonus credited while it earned, taken back now: the take-back mirrors its credit
    await bonus(c, 42_002, T0 + DAY, 400)
    await bonus(c, 42_003, T0 + 3 * DAY, -400)
    await t.settle()
    // a trade of before the suspension, delivered late, still earns
    await trade(c, 41_003, T0 + 2 * DAY - 1_000, -400)
    await t.settle()
    await setStatusAt(T0 + 4 * DAY, p.id, 'active')
    await trade(c, 41_004, T0 + 5 * DAY, -800)
    await t.settle()
    const expected = [
      { key: 'rev:bonus:42001', amount: -300, currency: 'USD', period: '2026-10', corrects: '' },
      { key: 'rev:bonus:42002', amount: -200, currency: 'USD', period: '2026-10', corrects: '' },
      { key: 'rev:bonus:42003', amount: 200, currency: 'USD', period: '2026-10', corrects: '' },
      { key: 'rev:trade:41001', amount: 500, currency: 'USD', period: '2026-10', corrects: '' },
      { key: 'rev:trade:41003', amount: 200, currency: 'USD', period: '2026-10', corrects: '' },
      { key: 'rev:trade:41004', amount: 400, currency: 'USD', period: '2026-10', corrects: '' },
    ]
    expect(await rowsOf(c.id)).toEqual(expected)
    // a full re-derivation (a repair) gives the same rows: the standing is kept over time, not read as of now
    await t.ctx.db.transaction((tx) =>
      reconcileCommissions(t.ctx as never, tx, {
        brandId: 1,
        customerId: c.id,
        affiliateId: p.id,
        linkId: null,
        tracking: {},
      }),
    )
    expect(await rowsOf(c.id)).toEqual(expected)
    // the same status again, twice at once, dates no change
    clock.set(T0 + 6 * DAY)
    await Promise.all(
      [1, 2].map(async () => asStaff('PATCH', `/manager/affiliates/${p.id}`, { status: 'active' })),
    )
    const changes = await t.ctx.db.select().from(standingChanges).where(eq(standingChanges.affiliateId, p.id))
    expect(changes.map((x) => [x.brandId, x.status, x.fromTime])).toEqual([
      [0, 'suspended', T0 + 2 * DAY],
      [0, 'active', T0 + 4 * DAY],
    ])
  })

  test('a refund of a deposit it earned on takes back while it is suspended; one it did not earn on takes nothing', async () => {
    const p = await partner('netpause', {
      type: 'revshare',
      revshare_bp: 1000,
      revshare_basis: 'net_deposits',
      hold_days: 30,
      sub_affiliate_bp: 0,
    })
    const c = await referred('netpause')
    await emitAt(T0 + DAY, CashierCredited, money(c, 43_001, 50_000))
    await t.settle()
    await setStatusAt(T0 + 2 * DAY, p.id, 'suspended')
    await emitAt(T0 + 3 * DAY, CashierCredited, money(c, 43_002, 30_000))
    await emitAt(T0 + 4 * DAY, CashierReversed, { ...money(c, 43_001, 50_000), status: 'refund' })
    await emitAt(T0 + 4 * DAY, CashierReversed, { ...money(c, 43_002, 30_000), status: 'refund' })
    await emitAt(T0 + 4 * DAY, WithdrawalPaid, money(c, 43_003, 5_000))
    await t.settle()
    expect((await rowsOf(c.id)).map((r) => [r.key, r.amount])).toEqual([
      ['rev:deposit:43001', 5_000],
      ['rev:reversal:43001', -5_000],
      ['rev:withdrawal:43003', -500],
    ])
  })

  test('a first deposit while it is suspended pays no CPA, even qualified once it is active again', async () => {
    const p = await partner('cpapause', { ...REVSHARE, revshare_bp: 0 })
    const c = await referred('cpapause')
    await setStatusAt(T0 + DAY, p.id, 'suspended')
    await emitAt(T0 + 2 * DAY, CashierCredited, money(c, 44_001, 50_000))
    await t.settle()
    await setStatusAt(T0 + 3 * DAY, p.id, 'active')
    await emitAt(T0 + 4 * DAY, KycApproved, { customer_id: c.id, status: 'approved', risk_level: 'low' })
    await t.settle()
    expect(await rowsOf(c.id)).toEqual([])
  })

  test('an access revoked on the brand earns nothing there until it is granted again', async () => {
    const p = await partner('revoked', REVSHARE)
    const c = await referred('revoked')
    await trade(c, 45_001, T0 + DAY, -1_000)
    await t.settle()
    await setAccessAt(T0 + 2 * DAY, p.code, 'revoked')
    await trade(c, 45_002, T0 + 3 * DAY, -1_000)
    await t.settle()
    await setAccessAt(T0 + 4 * DAY, p.code, 'active')
    await trade(c, 45_003, T0 + 5 * DAY, -1_000)
    await t.settle()
    expect((await rowsOf(c.id)).map((r) => [r.key, r.amount])).toEqual([
      ['rev:trade:45001', 500],
      ['rev:trade:45003', 500],
    ])
  })

  test('a recruiter suspended at the end of a month gets no override of it; its recruit keeps its own', async () => {
    const boss = await partner('boss', { ...REVSHARE, sub_affiliate_bp: 2000 })
    const recruit = await partner('recruit', REVSHARE)
    expect(
      (await asStaff('PUT', `/manager/affiliates/${recruit.id}/recruiter`, { recruiter_id: boss.id })).status,
    ).toBe(200)
    const c = await referred('recruit')
    await trade(c, 46_001, Date.UTC(2026, 10, 3), -1_000)
    await t.settle()
    await setStatusAt(Date.UTC(2026, 10, 20), boss.id, 'suspended')
    clock.set(Date.UTC(2026, 11, 2))
    expect((await asStaff('POST', '/manager/affiliate-periods/2026-11/close')).status).toBe(200)
    const rows = await t.ctx.db.select().from(commissions).where(eq(commissions.period, '2026-11'))
    expect(rows.filter((r) => r.affiliateId === recruit.id).map((r) => r.amountMinor)).toEqual([500])
    expect(rows.filter((r) => r.affiliateId === boss.id)).toEqual([])
  })
})

describe('a correction of a closed period', () => {
  test('a CPA whose currency changed is taken back in the old currency and paid in the new one', async () => {
    await partner('fx', {
      type: 'cpa',
      cpa: { USD: 20_000, EUR: 18_000 },
      hold_days: 30,
      sub_affiliate_bp: 0,
    })
    const c = await referred('fx')
    await emitAt(Date.UTC(2026, 11, 3), CashierCredited, money(c, 47_001, 50_000))
    await t.settle()
    clock.set(Date.UTC(2027, 0, 2))
    expect((await asStaff('POST', '/manager/affiliate-periods/2026-12/close')).status).toBe(200)
    // a EUR deposit credited before it, reported late: the first deposit is now the EUR one
    await emitAt(Date.UTC(2026, 11, 2), CashierCredited, money(c, 47_002, 40_000, 'EUR'))
    clock.set(Date.UTC(2027, 0, 3))
    await t.settle()
    expect(await rowsOf(c.id)).toEqual([
      { key: 'cpa', amount: 20_000, currency: 'USD', period: '2026-12', corrects: '' },
      { key: 'cpa', amount: 18_000, currency: 'EUR', period: '2027-01', corrects: '' },
      { key: 'cpa', amount: -20_000, currency: 'USD', period: '2027-01', corrects: '2026-12' },
    ])
    const totals = new Map<string, number>()
    for (const r of await rowsOf(c.id)) totals.set(r.currency, (totals.get(r.currency) ?? 0) + r.amount)
    expect(Object.fromEntries(totals)).toEqual({ USD: 0, EUR: 18_000 })
    // what the ledger wrote before it kept currencies apart (one EUR row of 18,000 - 20,000) is repaired
    const right = await rowsOf(c.id)
    await t.ctx.db.run(
      sql`delete from affiliate_commissions where customer_id = ${c.id} and period = '2027-01' and currency = 'USD'`,
    )
    await t.ctx.db.run(
      sql`update affiliate_commissions set amount_minor = -2000, basis_minor = -2000, corrects = '2026-12'
          where customer_id = ${c.id} and period = '2027-01' and currency = 'EUR'`,
    )
    await t.runJob('affiliate.correction-repair')
    expect(await rowsOf(c.id)).toEqual(right)
    await t.runJob('affiliate.correction-repair')
    expect(await rowsOf(c.id)).toEqual(right)
  })
})

describe("a tiered plan's month", () => {
  test('counts the lots of while it earned: a suspension raises no tier; the preview pays as the plan', async () => {
    const tiered = {
      type: 'tiered_revshare',
      revshare_bp: 1000,
      tier_metric: 'volume_lots',
      tiers: [{ from: 150, bp: 5000 }],
      hold_days: 0,
      sub_affiliate_bp: 0,
    }
    const p = await partner('tiered', tiered)
    const c = await referred('tiered')
    await trade(c, 48_001, Date.UTC(2027, 1, 3), -1_000)
    await t.settle()
    await setStatusAt(Date.UTC(2027, 1, 5), p.id, 'suspended')
    await trade(c, 48_002, Date.UTC(2027, 1, 10), -1_000, 0, 20_000)
    await t.settle()
    await setStatusAt(Date.UTC(2027, 1, 20), p.id, 'active')
    clock.set(Date.UTC(2027, 2, 2))
    expect((await asStaff('POST', '/manager/affiliate-periods/2027-02/close')).status).toBe(200)
    const rows = await t.ctx.db.select().from(commissions).where(eq(commissions.affiliateId, p.id))
    expect(rows.map((r) => [r.kind, r.amountMinor])).toEqual([['revshare', 100]])
    const preview = await asStaff('POST', '/manager/affiliate-plans/preview', {
      affiliate_id: p.id,
      terms: tiered,
      from: '2027-02-01',
      to: '2027-02-28',
    })
    expect(preview.status).toBe(200)
    expect(preview.json.totals).toEqual([{ currency: 'USD', amount_minor: 100 }])
  })
})
