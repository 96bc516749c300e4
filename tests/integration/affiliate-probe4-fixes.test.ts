// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Affiliate findings of the fourth hostile probe (attr4):
// 1. a close that took in an earlier month nobody closed priced that month's tiered rows on the closing
//    month's lots only (Sept past its tier paid at base because October had 0.01 lot);
// 2. a postback refused by a setting (no signing key yet, host not on the allowlist) spent an attempt and
//    died after 10, though a setting never disables the endpoint;
// 3. a 400 of the integration API's query schema (page_size too large) carried no X-RateLimit-* headers.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { customers } from '../../src/modules/accounts/schema'
import { postbacks } from '../../src/modules/affiliate/schema'
import { CashierCredited, CashierReversed } from '../../src/modules/cashier'
import { affiliateEvents, affiliatePartners } from '../support/affiliate-facts'
import { makeTestApp, type TestApp } from '../support/app'

describe('a close that takes in a month nobody closed prices that month on its own tier', () => {
  const T0 = Date.UTC(2026, 8, 2, 9) // 2026-09-02
  const clock = new ManualClock(T0)
  let t: TestApp
  const { trade, emitAt, money } = affiliateEvents(() => t, clock)
  const { asStaff, partner, referred, rowsOf, sum, close } = affiliatePartners(
    () => t,
    clock,
    'skipmonth',
    T0,
  )
  const tiered = (name: string, basis: string, hold_days: number) =>
    partner(name, {
      type: 'tiered_revshare',
      revshare_bp: 1000,
      tiers: [{ from: 50, bp: 5000 }],
      tier_metric: 'volume_lots',
      revshare_basis: basis,
      hold_days,
      sub_affiliate_bp: 0,
    })
  let skip: { id: number; planId: number }
  let both: { id: number; planId: number }
  let refunded: { id: number; planId: number }
  let bothCustomer: { id: number; login: number }

  beforeAll(async () => {
    t = await makeTestApp({ clock })
  })
  afterAll(() => t.close())

  test("a month closed together with the earlier month nobody closed pays the tier that month's lots reached", async () => {
    skip = await tiered('skipmonth', 'trading_revenue', 0)
    const c = await referred('skipmonth')
    // September: 100.00 of revenue on 100 lots (10,000 centilots), well past the 50-lot tier
    await trade(c, 830_001, Date.UTC(2026, 8, 10), -10_000, 0, 10_000)
    // October: 1.00 of revenue on 0.01 lot
    await trade(c, 830_002, Date.UTC(2026, 9, 10), -100, 0, 1)

    both = await tiered('skipboth', 'trading_revenue', 30)
    bothCustomer = await referred('skipboth')
    await emitAt(Date.UTC(2026, 8, 5), CashierCredited, money(bothCustomer, 830_100, 100_000))
    await trade(bothCustomer, 830_101, Date.UTC(2026, 8, 11), -10_000, 0, 10_000)
    await trade(bothCustomer, 830_102, Date.UTC(2026, 9, 11), -10_000, 0, 10_000)

    // net deposits: September's deposit (on 100 lots) refunded in October, within the hold
    refunded = await tiered('skiprefund', 'net_deposits', 60)
    const r = await referred('skiprefund')
    await emitAt(Date.UTC(2026, 8, 6), CashierCredited, money(r, 830_200, 100_000))
    await trade(r, 830_201, Date.UTC(2026, 8, 12), 0, 0, 10_000)
    await emitAt(Date.UTC(2026, 9, 6), CashierReversed, { ...money(r, 830_200, 100_000), status: 'refunded' })

    // September was never closed (auto close off, staff closed October first)
    await close('2026-10', Date.UTC(2026, 10, 6))
    const rows = await rowsOf(skip.id)
    // September's 100.00 at its tier (50 %) is 50.00; October's 1.00 at base 10 % is 0.10
    expect(sum(rows)).toBeGreaterThanOrEqual(5_000)
    expect(sum(rows)).toBe(5_010)
    expect(
      rows.filter((r) => r.kind === 'tier_adjustment').map((r) => [r.period, r.key, r.amountMinor]),
    ).toEqual([['2026-10', `tier:2026-09:${skip.planId}.1:USD`, 4_000]])
    // each month at 50 %: 100.00 in all, once
    expect(sum(await rowsOf(both.id))).toBe(10_000)
    // the refund counts against its deposit's month: nothing paid for a deposit refunded within the hold
    expect(sum(await rowsOf(refunded.id))).toBe(0)
  })

  test('the plan preview pays what the ledger paid for those months', async () => {
    for (const [p, basis, hold] of [
      [skip, 'trading_revenue', 0],
      [both, 'trading_revenue', 30],
      [refunded, 'net_deposits', 60],
    ] as const) {
      const preview = await asStaff('POST', '/manager/affiliate-plans/preview', {
        affiliate_id: p.id,
        terms: {
          type: 'tiered_revshare',
          revshare_bp: 1000,
          tiers: [{ from: 50, bp: 5000 }],
          tier_metric: 'volume_lots',
          revshare_basis: basis,
          hold_days: hold,
          sub_affiliate_bp: 0,
        },
        from: '2026-09-01',
        to: '2026-10-31',
      })
      expect(preview.status).toBe(200)
      const total = (preview.json.totals as { amount_minor: number }[]).reduce(
        (s, x) => s + x.amount_minor,
        0,
      )
      expect([p.id, total]).toEqual([p.id, sum(await rowsOf(p.id))])
    }
  })

  test('the next close prices the joined months again within the hold, each on its own tier: nothing paid twice', async () => {
    // a refund of September's deposit after October's close makes November's close price October again
    await emitAt(Date.UTC(2026, 10, 10), CashierReversed, {
      ...money(bothCustomer, 830_100, 100_000),
      status: 'refunded',
    })
    await close('2026-11', Date.UTC(2026, 11, 2))
    const rows = await rowsOf(both.id)
    expect(sum(rows)).toBe(10_000)
  })
})

describe('a postback refused by a setting waits for it, never dead', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 24, 9, 0, 0))
  let t: TestApp
  let receiver: ReturnType<typeof Bun.serve>
  const got: string[] = []
  let affiliateId: number

  beforeAll(async () => {
    receiver = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req) {
        got.push(await req.text())
        return new Response('ok')
      },
    })
    t = await makeTestApp({ clock, env: { AFFILIATE_POSTBACK_PRIVATE: 'true' } })
    const staff = await t.staffToken()
    expect(
      (
        await t.request('PUT', '/manager/affiliate-settings', {
          token: staff,
          body: { postback_hosts: [`127.0.0.1:${receiver.port}`] },
        })
      ).status,
    ).toBe(200)
    const a = await t.request('POST', '/manager/affiliates', {
      token: staff,
      body: {
        email: 'pbk@example.com',
        code: 'PBKEY',
        password: 'pbk-pass-1',
        postback_url: `http://127.0.0.1:${receiver.port}/hook`,
      },
    })
    expect(a.status).toBe(200)
    affiliateId = a.json.id
    expect(
      (
        await t.request('POST', '/manager/affiliate-links', {
          token: staff,
          body: { affiliate_id: affiliateId, code: 'pbk-link' },
        })
      ).status,
    ).toBe(200)
  })
  afterAll(async () => {
    await t.close()
    receiver.stop(true)
  })

  test('a conversion made before the signing key exists is posted once staff create the key', async () => {
    await t.request('POST', '/customer/register', {
      body: {
        email: 'pbk-1@example.com',
        password: 'pbk-pass-1',
        name: 'P',
        attribution: { link: 'pbk-link' },
      },
    })
    const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, 'pbk-1@example.com'))
    await t.ctx.uow.run(async (_tx, w) =>
      w.emit(CashierCredited, 1, {
        transaction_id: 7001,
        customer_id: c!.id,
        login: 100001,
        method: 'card',
        provider: 'sandbox',
        amount_minor: 2500,
        fee_minor: 0,
        currency: 'USD',
      }),
    )
    await t.settle()
    // the postback sender runs every 2 s; a night passes before staff add the key
    for (let i = 0; i < 12; i++) {
      await t.runJob('affiliate.postbacks')
      clock.advance(3_600_000)
    }
    expect(got).toHaveLength(0)
    const waiting = await t.ctx.db.select().from(postbacks).where(eq(postbacks.affiliateId, affiliateId))
    // no attempt spent, still pending, the refusal said, the next try within the hour
    expect(waiting.length).toBeGreaterThan(0)
    for (const p of waiting) {
      expect([p.status, p.attempts]).toEqual(['pending', 0])
      expect(p.lastError).toContain('no signing key')
      expect(p.nextAt).toBeLessThanOrEqual(clock.now())
    }
    const staff = await t.staffToken()
    const k = await t.request('POST', `/manager/affiliates/${affiliateId}/postback-keys`, { token: staff })
    expect(k.status).toBe(200)
    await t.runJob('affiliate.postbacks')
    const rows = await t.ctx.db.select().from(postbacks).where(eq(postbacks.affiliateId, affiliateId))
    // the registration and first deposit/deposit conversions reach the tracker
    expect(rows.filter((r) => r.status === 'dead')).toEqual([])
    expect(got.length).toBe(rows.length)
  })
})

describe('the integration API counts and answers X-RateLimit-* on every answer', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 24, 9))
  const CAB = 'affiliates.localhost'
  let t: TestApp
  let token: string
  beforeAll(async () => {
    t = await makeTestApp({ clock })
    const i = await t.request('POST', '/manager/affiliates/1/tokens', {
      token: await t.staffToken(),
      body: { scopes: ['customers:read', 'transactions:read', 'commissions:read'], expires_in_days: 30 },
    })
    token = i.json.token
  })
  afterAll(() => t.close())

  test('README: every answer of the integration API carries X-RateLimit-* (a 400 for a bad parameter included)', async () => {
    const out: [string, number, string | null][] = []
    for (const q of [
      'customers?page_size=5',
      'customers?from=2026-02-30',
      'customers?cursor=zzz',
      'customers?page_size=99999',
      'customers?page_size=0',
      'customers?page_size=abc',
      'customers?page_size=5&page_size=6',
      'customers?to=2026-01-01&from=2026-02-01',
      'transactions?page_size=99999',
      'transactions?type=other',
      'commissions?period=2026-13',
    ]) {
      const r = await t.request('GET', `/api/affiliate/v1/${q}`, { host: CAB, token })
      out.push([q, r.status, r.headers.get('x-ratelimit-remaining')])
    }
    expect(out.map(([q, status]) => [q, status === 200 ? 200 : status === 400 ? 400 : status])).toEqual(
      out.map(([q]) => [q, q === 'customers?page_size=5' ? 200 : 400]),
    )
    // each counted: the remaining count falls by one per answer
    const remaining = out.map(([, , h]) => Number(h))
    expect(out.every(([, , h]) => h !== null)).toBe(true)
    expect(remaining.slice(1).map((r, i) => remaining[i]! - r)).toEqual(remaining.slice(1).map(() => 1))
  })
})
