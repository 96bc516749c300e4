// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Affiliate findings of a hostile probe: a tiered plan's `customers` counted first
// deposits charged back within the hold; RevShare rounded each row, so many small rows paid nothing; the
// 1.25.244 repair's postback had no tracking values; postback URLs reached any port of an allowed host.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq, sql } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { customers } from '../../src/modules/accounts/schema'
import { expandPostbackUrl } from '../../src/modules/affiliate/domain/postback'
import { commissions, conversions, postbacks, referredCustomers } from '../../src/modules/affiliate/schema'
import { reconcileCommissions } from '../../src/modules/affiliate/service/commission-ledger'
import { CashierCredited, CashierReversed } from '../../src/modules/cashier'
import { affiliateEvents } from '../support/affiliate-facts'
import { makeTestApp, type TestApp } from '../support/app'

const DAY = 86_400_000
const T0 = Date.UTC(2026, 8, 2, 9) // 2026-09-02: customers register, their facts come in September and October
const OCT = Date.UTC(2026, 9, 5, 9)
const clock = new ManualClock(T0)
let t: TestApp
let n = 0
const { emitAt, money, trade } = affiliateEvents(() => t, clock)

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
  expect(
    (
      await asStaff('POST', '/manager/affiliate-links', {
        affiliate_id: partner.json.id,
        code: `${name}-link`,
      })
    ).status,
  ).toBe(200)
  const plan = await asStaff('POST', '/manager/affiliate-plans', { name, terms })
  expect(plan.status).toBe(200)
  await asStaff('PUT', `/manager/affiliates/${partner.json.id}/plan`, { plan_id: plan.json.id })
  return partner.json.id as number
}

async function referred(link: string, extra: Record<string, string> = {}) {
  clock.set(T0)
  const email = `money-find-${++n}@example.com`
  const r = await t.request('POST', '/customer/register', {
    body: { email, password: 'money-pass-1', name: 'M', attribution: { link, ...extra } },
  })
  expect(r.status).toBe(200)
  const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
  const acc = await asStaff('POST', '/manager/accounts', {
    group: 'real\\USD',
    password: 'money-pass-1',
    customer_id: c!.id,
  })
  expect(acc.status).toBe(200)
  return { id: c!.id, login: acc.json.login as number }
}

const rowsOfAffiliate = (affiliateId: number) =>
  t.ctx.db.select().from(commissions).where(eq(commissions.affiliateId, affiliateId))
const sum = (rows: { amountMinor: number }[]) => rows.reduce((s, r) => s + r.amountMinor, 0)

beforeAll(async () => {
  t = await makeTestApp({ clock })
})
afterAll(() => t.close())

let rounder = 0
let merger = 0
let tiers = 0

describe('RevShare pays its rate of the period basis, rounded once', () => {
  test('ten trades of 3 cents of revenue and two customers of one trade each at 25 %: 36 cents of basis pay 9, not 0', async () => {
    rounder = await partnerOnPlan('rounder', {
      type: 'revshare',
      revshare_bp: 2500,
      revshare_basis: 'trading_revenue',
      hold_days: 0,
      sub_affiliate_bp: 0,
    })
    const a = await referred('rounder-link')
    const b = await referred('rounder-link')
    const c = await referred('rounder-link')
    for (let i = 0; i < 10; i++) await trade(a, 610_000 + i, OCT + i * 1000, -3, 0, 1)
    await trade(b, 610_100, OCT + DAY, -3, 0, 1)
    await trade(c, 610_200, OCT + 2 * DAY, -3, 0, 1)
    clock.set(OCT + 3 * DAY)
    await t.settle()
    const rows = await rowsOfAffiliate(rounder)
    const basis = rows.reduce((s, r) => s + r.basisMinor, 0)
    expect(basis).toBe(36)
    expect(sum(rows)).toBe(9)
    // each customer's row its own share (nothing), and one row of the period, no customer, no basis
    const period = rows.filter((r) => r.customerId === 0)
    expect(period.map((r) => [r.kind, r.period, r.amountMinor, r.basisMinor, r.rateBp])).toEqual([
      ['revshare', '2026-10', 9, 0, 2500],
    ])
    // a full re-derivation of every customer, in any order and twice, changes nothing
    const snapshot = async () =>
      (await rowsOfAffiliate(rounder)).map((r) => [r.id, r.key, r.amountMinor, r.basisMinor, r.updatedAt])
    const before = await snapshot()
    for (const who of [c, a, b, a]) {
      const [rc] = await t.ctx.db
        .select()
        .from(referredCustomers)
        .where(eq(referredCustomers.customerId, who.id))
      await t.ctx.db.transaction((tx) =>
        reconcileCommissions(t.ctx as never, tx, {
          brandId: rc!.brandId,
          customerId: who.id,
          affiliateId: rounder,
          linkId: rc!.linkId,
          tracking: {},
        }),
      )
    }
    expect(await snapshot()).toEqual(before)
  })

  test('the rounding follows its rows: a trade whose swap the broker paid takes its share back, to the cent', async () => {
    const d = await referred('rounder-link')
    // -2 cents of revenue (the broker paid swap): 34 cents of basis pay 8
    await trade(d, 610_300, OCT + 2 * DAY + 5000, 0, 2, 1)
    clock.set(OCT + 3 * DAY)
    await t.settle()
    const rows = await rowsOfAffiliate(rounder)
    expect(rows.reduce((s, r) => s + r.basisMinor, 0)).toBe(34)
    expect(sum(rows)).toBe(8)
    expect(rows.filter((r) => r.customerId === 0)).toHaveLength(1)
  })

  test('rows of a month nobody closed join the closing month, and the close rounds their sum once', async () => {
    merger = await partnerOnPlan('merger', {
      type: 'revshare',
      revshare_bp: 2500,
      revshare_basis: 'trading_revenue',
      hold_days: 0,
      sub_affiliate_bp: 0,
    })
    const a = await referred('merger-link')
    // 6 cents in September (pays 1) and 6 in October (pays 1): the two months closed as one pay 3
    await trade(a, 620_000, T0 + DAY, -3, 0, 1)
    await trade(a, 620_001, T0 + DAY + 1000, -3, 0, 1)
    await trade(a, 620_002, OCT, -3, 0, 1)
    await trade(a, 620_003, OCT + 1000, -3, 0, 1)
    clock.set(OCT + 3 * DAY)
    await t.settle()
    const rows = await rowsOfAffiliate(merger)
    expect(rows.filter((r) => r.customerId === 0).map((r) => [r.period, r.amountMinor])).toEqual([
      ['2026-09', 1],
      ['2026-10', 1],
    ])
  })
})

describe('a tiered plan counts the first deposits that stand', () => {
  test('first deposits charged back within the hold raise no tier; one refunded after the hold, or only in part, still counts', async () => {
    tiers = await partnerOnPlan('tiers', {
      type: 'tiered_revshare',
      revshare_bp: 1000,
      tiers: [
        { from: 3, bp: 3000 },
        { from: 4, bp: 5000 },
      ],
      tier_metric: 'customers',
      revshare_basis: 'trading_revenue',
      hold_days: 1,
      sub_affiliate_bp: 0,
    })
    const real = await referred('tiers-link')
    await emitAt(OCT + DAY, CashierCredited, money(real, 630_000, 100_000))
    await trade(real, 630_500, OCT + 2 * DAY, -10_000, 0, 100)
    // two 1-cent first deposits charged back within the hold: they never stood
    for (let i = 0; i < 2; i++) {
      const fake = await referred('tiers-link')
      await emitAt(OCT + DAY, CashierCredited, money(fake, 630_001 + i, 1))
      await emitAt(OCT + DAY + 3_600_000, CashierReversed, {
        ...money(fake, 630_001 + i, 1),
        status: 'chargeback',
      })
    }
    // refunded in part within the hold: what is left stands (as the CPA's rule)
    const partial = await referred('tiers-link')
    await emitAt(OCT + DAY, CashierCredited, money(partial, 630_010, 5_000))
    await emitAt(OCT + DAY + 3_600_000, CashierReversed, {
      ...money(partial, 630_010, 1_000),
      status: 'refunded',
    })
    // refunded in full after the hold: it stood
    const late = await referred('tiers-link')
    await emitAt(OCT + DAY, CashierCredited, money(late, 630_020, 2_000))
    await emitAt(OCT + 4 * DAY, CashierReversed, { ...money(late, 630_020, 2_000), status: 'refunded' })
    clock.set(OCT + 5 * DAY)
    await t.settle()
    // the preview counts as the close will
    const preview = await asStaff('POST', '/manager/affiliate-plans/preview', {
      affiliate_id: tiers,
      terms: {
        type: 'tiered_revshare',
        revshare_bp: 1000,
        tiers: [
          { from: 3, bp: 3000 },
          { from: 4, bp: 5000 },
        ],
        tier_metric: 'customers',
        revshare_basis: 'trading_revenue',
        hold_days: 1,
        sub_affiliate_bp: 0,
      },
      from: '2026-10-01',
      to: '2026-10-31',
    })
    expect(preview.status).toBe(200)
    // three stood (real, partial, late): the first tier, 30 % of 100.00 less the 10.00 paid
    expect(preview.json.lines).toContainEqual({
      currency: 'USD',
      kind: 'tier_adjustment',
      amount_minor: 2_000,
      rows: 1,
    })
  })
})

describe('the close', () => {
  test('closes October: the tier of the deposits that stood, each rounding row in the statement that totals it', async () => {
    clock.set(Date.UTC(2026, 10, 2))
    await t.settle()
    const close = await asStaff('POST', '/manager/affiliate-periods/2026-10/close')
    expect(close.status).toBe(200)

    const tier = (await rowsOfAffiliate(tiers)).filter((r) => r.kind === 'tier_adjustment')
    expect(tier.map((r) => [r.rateBp, r.basisMinor, r.amountMinor])).toEqual([[3000, 10_000, 2_000]])

    // September's rows joined October: 12 cents at 25 % pay 3 in all
    const merged = await rowsOfAffiliate(merger)
    expect(merged.every((r) => r.period === '2026-10')).toBe(true)
    expect(merged.reduce((s, r) => s + r.basisMinor, 0)).toBe(12)
    expect(sum(merged)).toBe(3)

    for (const affiliateId of [rounder, merger, tiers]) {
      const list = await asStaff(
        'GET',
        `/manager/affiliate-statements?affiliate_id=${affiliateId}&period=2026-10`,
      )
      const [statement] = list.json.rows
      const rows = (await rowsOfAffiliate(affiliateId)).filter((r) => r.period === '2026-10')
      expect(statement).toMatchObject({ rows: rows.length })
      expect(statement.totals).toEqual([
        { currency: 'USD', amount: sum(rows) / 100, amount_minor: sum(rows), rows: rows.length },
      ])
      const detail = await asStaff('GET', `/manager/affiliate-statements/${statement.id}`)
      expect(detail.json.rows).toHaveLength(rows.length)
      expect(detail.json.rows.reduce((s: number, r: { amount_minor: number }) => s + r.amount_minor, 0)).toBe(
        sum(rows),
      )
    }
    expect(sum(await rowsOfAffiliate(rounder))).toBe(8)
  })
})

describe('the 1.25.244 repair', () => {
  test('its postback carries the tracking values every postback does', async () => {
    const c = await referred('demo-spring', { click_id: 'CLK-42', sub1: 'S1' })
    await t.settle()
    const [reg] = await t.ctx.db.select().from(conversions).where(eq(conversions.customerId, c.id))
    await t.ctx.db.run(
      sql`update affiliates set postback_url = 'https://postbacks.example.com/pb?cid={click_id}&ev={event}' where id = ${reg!.affiliateId}`,
    )
    const at = Date.UTC(2026, 10, 10)
    await emitAt(at, CashierCredited, money(c, 640_001, 5_000))
    await emitAt(at + DAY, CashierCredited, money(c, 640_002, 7_000))
    await t.settle()
    const [fd] = await t.ctx.db
      .select()
      .from(conversions)
      .where(and(eq(conversions.customerId, c.id), eq(conversions.kind, 'first_deposit')))
    const ledger = (await t.ctx.db.select().from(postbacks).where(eq(postbacks.conversionId, fd!.id))).at(-1)!
    expect(JSON.parse(ledger.body).conversion.tracking).toMatchObject({ click_id: 'CLK-42', sub1: 'S1' })
    // as older code left it: the row names the deposit written last
    await t.ctx.db.run(
      sql`update affiliate_conversions set reference_id = '640002', value_minor = 7000 where id = ${fd!.id}`,
    )
    await t.runJob('affiliate.first-deposit-repair')
    const repaired = (await t.ctx.db.select().from(postbacks).where(eq(postbacks.conversionId, fd!.id))).at(
      -1,
    )!
    expect(repaired.id).not.toBe(ledger.id)
    expect(JSON.parse(repaired.body).conversion).toMatchObject({ reference_id: '640001' })
    expect(JSON.parse(repaired.body).conversion.tracking).toEqual(JSON.parse(ledger.body).conversion.tracking)
    expect(
      expandPostbackUrl('https://postbacks.example.com/pb?cid={click_id}&ev={event}', repaired.body),
    ).toBe('https://postbacks.example.com/pb?cid=CLK-42&ev=first_deposit')
  })
})

describe('postback ports', () => {
  test('a bare allowed host takes ports 80 and 443 only; an entry naming a port allows that port', async () => {
    const patch = (postback_url: string) => asStaff('PATCH', '/manager/affiliates/1', { postback_url })
    const settings = (postback_hosts: string[]) =>
      asStaff('PUT', '/manager/affiliate-settings', { postback_hosts })
    expect((await settings(['postbacks.example.com'])).status).toBe(200)
    for (const ok of [
      'https://postbacks.example.com/pb',
      'http://postbacks.example.com:80/pb',
      'https://postbacks.example.com:443/pb',
    ])
      expect((await patch(ok)).status, ok).toBe(200)
    for (const bad of [
      'https://postbacks.example.com:8443/pb',
      'http://postbacks.example.com:6379/',
      'http://postbacks.example.com:22/',
    ])
      expect([(await patch(bad)).json.error, bad]).toEqual(['POSTBACK_HOST_NOT_ALLOWED', bad])
    const named = await settings(['postbacks.example.com', 'Hooks.Example.com:08443'])
    expect(named.status).toBe(200)
    expect(named.json.postback_hosts).toEqual(['postbacks.example.com', 'hooks.example.com:8443'])
    expect((await patch('https://hooks.example.com:8443/pb')).status).toBe(200)
    // the port named is the only one of that host
    expect((await patch('https://hooks.example.com/pb')).json.error).toBe('POSTBACK_HOST_NOT_ALLOWED')
    for (const bad of [
      'hooks.example.com:0',
      'hooks.example.com:65536',
      'hooks.example.com:',
      'https://hooks.example.com',
    ])
      expect([(await settings([bad])).json.error, bad]).toEqual(['INVALID_DATA', bad])
    // an internal host is refused with or without a port
    expect((await settings(['127.0.0.1:8080'])).json.error).toBe('POSTBACK_HOST_NOT_ALLOWED')
  })
})
