import { afterAll, beforeAll, expect, test } from 'bun:test'
import { and, eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { customers } from '../../src/modules/accounts/schema'
import { commissions, conversionFacts } from '../../src/modules/affiliate/schema'
import { affiliateEvents } from '../support/affiliate-facts'
import { makeTestApp, type TestApp } from '../support/app'

/**
 * A referred customer's trades on a prop challenge's funded account spend the firm's capital: their
 * commission and swap are no revenue of the customer's, and earn the affiliate no RevShare (nor lots), as
 * a demo account's trades earn none. The customer's own REAL account still does.
 */
const T0 = Date.UTC(2026, 9, 5, 9)
const clock = new ManualClock(T0)
let t: TestApp
const { trade } = affiliateEvents(() => t, clock)

beforeAll(async () => {
  t = await makeTestApp({ clock })
})
afterAll(() => t.close())

test("a funded prop account's trades bring the affiliate nothing; the customer's own account's do", async () => {
  const staff = await t.staffToken()
  const asStaff = (method: string, path: string, body: unknown) =>
    t.request(method, path, { token: staff, body })
  const partner = await asStaff('POST', '/manager/affiliates', {
    email: 'capital@example.com',
    code: 'CAPITAL1',
    password: 'capital-pass-1',
  })
  expect(partner.status).toBe(200)
  expect(
    (
      await asStaff('POST', '/manager/affiliate-links', {
        affiliate_id: partner.json.id,
        code: 'capital-link',
      })
    ).status,
  ).toBe(200)
  const plan = await asStaff('POST', '/manager/affiliate-plans', {
    name: 'capital',
    terms: {
      type: 'revshare',
      revshare_bp: 2500,
      revshare_basis: 'trading_revenue',
      hold_days: 0,
      sub_affiliate_bp: 0,
    },
  })
  expect(plan.status).toBe(200)
  await asStaff('PUT', `/manager/affiliates/${partner.json.id}/plan`, { plan_id: plan.json.id })
  const email = 'capital-customer@example.com'
  const reg = await t.request('POST', '/customer/register', {
    body: { email, password: 'capital-pass-1', name: 'C', attribution: { link: 'capital-link' } },
  })
  expect(reg.status).toBe(200)
  const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
  const open = async (group: string) => {
    const a = await asStaff('POST', '/manager/accounts', {
      group,
      password: 'capital-pass-1',
      customer_id: c!.id,
    })
    expect(a.status).toBe(200)
    return { id: c!.id, login: a.json.login as number }
  }
  // a funded account of a prop program's group (the firm's capital), and the customer's own
  const funded = await open('prop\\funded\\USD')
  const own = await open('real\\USD')
  await trade(funded, 710_001, T0 + 1000, -700, -50)
  await trade(own, 710_002, T0 + 2000, -400, 0)
  await t.settle()
  const facts = await t.ctx.db
    .select()
    .from(conversionFacts)
    .where(and(eq(conversionFacts.customerId, c!.id), eq(conversionFacts.kind, 'trade')))
  expect(facts.map((f) => [f.reference, f.valueMinor, f.currency]).sort()).toEqual([
    ['710001', null, ''],
    ['710002', 400, 'USD'],
  ])
  const rows = await t.ctx.db.select().from(commissions).where(eq(commissions.affiliateId, partner.json.id))
  // 25 % of the 4 USD the customer paid on its own account; nothing of the funded account's 7.50
  expect(rows.reduce((s, r) => s + r.amountMinor, 0)).toBe(100)
  expect(rows.reduce((s, r) => s + r.basisMinor, 0)).toBe(400)
})
