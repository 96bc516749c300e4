// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Affiliate findings of the fourth hostile probe (attr4):
// 1. a close that took in an earlier month nobody closed priced that month's tiered rows on the closing
//    month's lots only (Sept past its tier paid at base because October had 0.01 lot);
// 2. a postback refused by a setting (no signing key yet, host not on the allowlist) spent an attempt and
//    died after 10, though a setting never disables the endpoint;
// 3. a 400 of the integration API's query schema (page_size too large) carried no X-RateLimit-* headers.
// Its review (review-aff4):
// 4. a month closed by the release before, which took in a month nobody closed (one tier:<period> row),
//    was split by event month when priced again: an unrelated refund moved money between paid months;
// 5. a postback refused by a setting was claimed every hour for ever (no postback_url included) and went to
//    a URL set months later; the rounding rows of a joined month were dated in the closing month.
// Its review (review-aff5):
// 6. a fix saved while the sender was refusing (a key created) was parked over for 30 days;
// 7. the 30 days counted from when the postback was made: held while the affiliate was suspended, they
//    died at the first refusal; 8. a postback_url cleared by mistake killed the pending postbacks for good.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq, sql } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { customers } from '../../src/modules/accounts/schema'
import { PRICING_BY_DEPOSIT_MONTH, periodEnd } from '../../src/modules/affiliate/domain/periods'
import { commissions, postbacks } from '../../src/modules/affiliate/schema'
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

describe('a postback refused by a setting waits for it (parked, woken when it is fixed)', () => {
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
    // no attempt spent, still pending, the refusal said, parked (not claimed each hour) until the key comes
    expect(waiting.length).toBeGreaterThan(0)
    for (const p of waiting) {
      expect([p.status, p.attempts]).toEqual(['pending', 0])
      expect(p.lastError).toContain('no signing key')
      expect(p.nextAt).toBe(p.createdAt + 30 * 86_400_000)
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

describe('review: a joined month closed by the release before the split', () => {
  const T0 = Date.UTC(2026, 8, 2, 9)
  const clock = new ManualClock(T0)
  let t: TestApp
  const { trade, emitAt, money } = affiliateEvents(() => t, clock)
  const { partner, referred, rowsOf, sum, close } = affiliatePartners(() => t, clock, 'upg', T0)
  beforeAll(async () => {
    t = await makeTestApp({ clock })
  })
  afterAll(() => t.close())

  test('an unrelated refund does not re-price a closed month under the new split', async () => {
    const p = await partner('upg', {
      type: 'tiered_revshare',
      revshare_bp: 1000,
      tiers: [{ from: 50, bp: 5000 }],
      tier_metric: 'volume_lots',
      revshare_basis: 'trading_revenue',
      hold_days: 30,
      sub_affiliate_bp: 0,
    })
    const c = await referred('upg')
    // September: 100.00 of revenue on 0.01 lot; October: 1.00 on 100 lots
    await trade(c, 840_001, Date.UTC(2026, 8, 10), -10_000, 0, 1)
    await trade(c, 840_002, Date.UTC(2026, 9, 10), -100, 0, 10_000)
    await close('2026-10', Date.UTC(2026, 10, 2))
    // what the release before this commit wrote: both months at October's tier (50 %) under tier:2026-10,
    // and its period marked as priced by deposit month (1), not split
    const tierOct = `tier:2026-10:${p.planId}.1:USD`
    await t.ctx.db
      .update(commissions)
      .set({ amountMinor: 4_040, basisMinor: 10_100 })
      .where(and(eq(commissions.affiliateId, p.id), eq(commissions.key, tierOct)))
    await t.ctx.db.run(
      sql`update affiliate_periods set pricing = ${PRICING_BY_DEPOSIT_MONTH} where period = '2026-10'`,
    )
    const paid = sum(await rowsOf(p.id))
    expect(paid).toBe(5_050)
    // November: a deposit refunded (no RevShare row on trading revenue; only a reversal fact)
    await emitAt(Date.UTC(2026, 10, 5), CashierCredited, money(c, 840_100, 10_000))
    await emitAt(Date.UTC(2026, 10, 6), CashierReversed, { ...money(c, 840_100, 10_000), status: 'refunded' })
    await close('2026-11', Date.UTC(2026, 11, 2))
    const rows = await rowsOf(p.id)
    const nov = rows.filter((r) => r.period === '2026-11').map((r) => [r.kind, r.key, r.amountMinor])
    // nothing about October moved: no tier correction written
    expect(nov).toEqual([])
    expect(sum(rows)).toBe(paid)
  })

  test('a close of this release marks its period as split by month (pricing 2)', async () => {
    const [row] = (await t.ctx.db.all(
      sql`select pricing from affiliate_periods where period = '2026-11'`,
    )) as { pricing: number }[]
    expect(Number(row!.pricing)).toBe(2)
  })
})

describe('review: the rows a close writes for a joined month are dated in that month', () => {
  const T0 = Date.UTC(2027, 2, 2, 9)
  const clock = new ManualClock(T0)
  let t: TestApp
  const { trade } = affiliateEvents(() => t, clock)
  const { partner, referred, rowsOf, close } = affiliatePartners(() => t, clock, 'rnd', T0)
  beforeAll(async () => {
    t = await makeTestApp({ clock })
  })
  afterAll(() => t.close())

  test("a joined month's tier and rounding rows carry eventTime periodEnd(month) - 1", async () => {
    const p = await partner('rnd', {
      type: 'tiered_revshare',
      revshare_bp: 1500,
      tiers: [{ from: 50, bp: 3333 }],
      tier_metric: 'volume_lots',
      revshare_basis: 'trading_revenue',
      hold_days: 30,
      sub_affiliate_bp: 0,
    })
    const c = await referred('rnd')
    // March, never closed: three trades whose shares each round (15 % of 0.07), past the tier; April: one
    for (const [i, day] of [3, 4, 5].entries())
      await trade(c, 850_001 + i, Date.UTC(2027, 2, day), -7, 0, 2_000)
    await trade(c, 850_010, Date.UTC(2027, 3, 3), -7, 0, 1)
    await close('2027-04', Date.UTC(2027, 4, 2))
    const written = (await rowsOf(p.id)).filter(
      (r) => r.key.startsWith('tier:2027-03') || r.key.startsWith('round:2027-03'),
    )
    expect(written.length).toBeGreaterThan(0)
    for (const r of written) expect([r.key, r.eventTime]).toEqual([r.key, periodEnd('2027-03') - 1])
  })
})

describe('review: a postback refused by a setting is not claimed each hour for ever', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 24, 9, 0, 0))
  let t: TestApp
  let receiver: ReturnType<typeof Bun.serve>
  const got: string[] = []
  let affiliateId: number
  let healthy: number
  let keyless: number
  const staffReq = async (method: string, path: string, body?: unknown) =>
    t.request(method, path, { token: await t.staffToken(), ...(body === undefined ? {} : { body }) })
  const makeAffiliate = async (code: string, path: string, key: boolean) => {
    const a = await staffReq('POST', '/manager/affiliates', {
      email: `${code.toLowerCase()}@example.com`,
      code,
      password: 'pbg-pass-1',
      postback_url: `http://127.0.0.1:${receiver.port}/${path}`,
    })
    expect(a.status).toBe(200)
    if (key)
      expect((await staffReq('POST', `/manager/affiliates/${a.json.id}/postback-keys`)).status).toBe(200)
    return a.json.id as number
  }
  const queue = (affiliate: number, n: number) =>
    t.ctx.db.insert(postbacks).values(
      Array.from({ length: n }, (_, i) => ({
        brandId: 1,
        affiliateId: affiliate,
        conversionId: 900_000 + affiliate * 1_000 + i,
        body: JSON.stringify({ type: 'conversion', conversion: { id: i } }),
        nextAt: clock.now(),
        createdAt: clock.now(),
      })),
    )
  const rowsOf = (affiliate: number) =>
    t.ctx.db.select().from(postbacks).where(eq(postbacks.affiliateId, affiliate))
  beforeAll(async () => {
    receiver = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req) {
        got.push(`${new URL(req.url).pathname} ${await req.text()}`)
        return new Response('ok')
      },
    })
    t = await makeTestApp({ clock, env: { AFFILIATE_POSTBACK_PRIVATE: 'true' } })
    expect(
      (
        await staffReq('PUT', '/manager/affiliate-settings', {
          postback_hosts: [`127.0.0.1:${receiver.port}`],
        })
      ).status,
    ).toBe(200)
    affiliateId = await makeAffiliate('PBG', 'old', true)
    await staffReq('POST', '/manager/affiliate-links', { affiliate_id: affiliateId, code: 'pbg-link' })
    healthy = await makeAffiliate('PBH', 'healthy', true)
    keyless = await makeAffiliate('PBN', 'keyless', false)
  })
  afterAll(async () => {
    await t.close()
    receiver.stop(true)
  })

  test('a postback of an affiliate that cleared its postback_url is not retried for ever nor sent months later', async () => {
    await t.request('POST', '/customer/register', {
      body: {
        email: 'pbg-1@example.com',
        password: 'pbg-pass-1',
        name: 'P',
        attribution: { link: 'pbg-link' },
      },
    })
    const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, 'pbg-1@example.com'))
    await t.ctx.uow.run(async (_tx, w) =>
      w.emit(CashierCredited, 1, {
        transaction_id: 7101,
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
    // the affiliate turns postbacks off before the sender ran
    expect((await staffReq('PATCH', `/manager/affiliates/${affiliateId}`, { postback_url: '' })).status).toBe(
      200,
    )
    // 60 days, the sender every hour
    for (let i = 0; i < 24 * 60; i++) {
      await t.runJob('affiliate.postbacks')
      clock.advance(3_600_000)
    }
    expect((await rowsOf(affiliateId)).length).toBeGreaterThan(0)
    // a new tracker set two months later does not receive the conversions of the registration made back
    // then: parked at the first pass (a cleared URL is a setting), dead when no URL came within 30 days
    const set = await staffReq('PATCH', `/manager/affiliates/${affiliateId}`, {
      postback_url: `http://127.0.0.1:${receiver.port}/new`,
    })
    expect(set.status).toBe(200)
    await t.runJob('affiliate.postbacks')
    // read after the final pass
    const rows = await rowsOf(affiliateId)
    expect(rows.map((r) => [r.status, r.attempts, r.lastError])).toEqual(
      rows.map(() => [
        'dead',
        0,
        'no postback_url: the affiliate receives no postbacks (not fixed within 30 days)',
      ]),
    )
    expect(got).toEqual([])
  })

  test("a postback refused for want of a key is parked, out of the sender's batch, until the key comes", async () => {
    // 60 of an affiliate without a key (older: first in the sender's batch of 50), then a healthy one's
    await queue(keyless, 60)
    await queue(healthy, 1)
    await t.runJob('affiliate.postbacks')
    await t.runJob('affiliate.postbacks')
    expect(got.filter((g) => g.startsWith('/healthy'))).toHaveLength(1)
    const parked = await rowsOf(keyless)
    expect(parked).toHaveLength(60)
    for (const p of parked) {
      expect([p.status, p.attempts]).toEqual(['pending', 0])
      expect(p.lastError).toContain('no signing key')
      expect(p.nextAt).toBe(p.createdAt + 30 * 86_400_000)
    }
    // three days of hourly passes: not one of them claimed again; a new one of the healthy goes out at once
    for (let i = 0; i < 72; i++) {
      await t.runJob('affiliate.postbacks')
      clock.advance(3_600_000)
    }
    await queue(healthy, 1)
    await t.runJob('affiliate.postbacks')
    expect(got.filter((g) => g.startsWith('/healthy'))).toHaveLength(2)
    expect(await rowsOf(keyless)).toEqual(parked)
    // the key comes: they go out at the next pass
    expect((await staffReq('POST', `/manager/affiliates/${keyless}/postback-keys`)).status).toBe(200)
    await t.runJob('affiliate.postbacks')
    await t.runJob('affiliate.postbacks')
    expect((await rowsOf(keyless)).map((r) => r.status)).toEqual(parked.map(() => 'sent'))
    expect(got.filter((g) => g.startsWith('/keyless'))).toHaveLength(60)
  })

  test('a host taken off the allowlist parks them; put back, they go out', async () => {
    expect(
      (await staffReq('PUT', '/manager/affiliate-settings', { postback_hosts: ['example.com'] })).status,
    ).toBe(200)
    await queue(healthy, 2)
    await t.runJob('affiliate.postbacks')
    const parked = (await rowsOf(healthy)).filter((r) => r.status === 'pending')
    expect(parked).toHaveLength(2)
    for (const p of parked) {
      expect(p.lastError).toContain('allowlist')
      expect(p.nextAt).toBe(p.createdAt + 30 * 86_400_000)
    }
    expect(
      (
        await staffReq('PUT', '/manager/affiliate-settings', {
          postback_hosts: [`127.0.0.1:${receiver.port}`],
        })
      ).status,
    ).toBe(200)
    await t.runJob('affiliate.postbacks')
    expect((await rowsOf(healthy)).filter((r) => r.status !== 'sent')).toEqual([])
  })

  test('a parked postback is dead once its setting was not fixed within 30 days', async () => {
    const late = await makeAffiliate('PBL', 'late', false)
    await queue(late, 3)
    await t.runJob('affiliate.postbacks')
    clock.advance(30 * 86_400_000)
    await t.runJob('affiliate.postbacks')
    const rows = await rowsOf(late)
    expect(rows.map((r) => [r.status, r.attempts])).toEqual(rows.map(() => ['dead', 0]))
    for (const r of rows) expect(r.lastError).toContain('not fixed within 30 days')
    // a key created after that sends none of them
    expect((await staffReq('POST', `/manager/affiliates/${late}/postback-keys`)).status).toBe(200)
    await t.runJob('affiliate.postbacks')
    expect(got.filter((g) => g.startsWith('/late'))).toEqual([])
  })
})

describe('review-aff5: postback parking', () => {
  const clock = new ManualClock(Date.UTC(2026, 10, 24, 9, 0, 0))
  let t: TestApp
  let receiver: ReturnType<typeof Bun.serve>
  const got: string[] = []
  const staffReq = async (method: string, path: string, body?: unknown) =>
    t.request(method, path, { token: await t.staffToken(), ...(body === undefined ? {} : { body }) })
  const makeAffiliate = async (code: string, path: string, key: boolean) => {
    const a = await staffReq('POST', '/manager/affiliates', {
      email: `${code.toLowerCase()}@example.com`,
      code,
      password: 'pbg-pass-1',
      postback_url: `http://127.0.0.1:${receiver.port}/${path}`,
    })
    expect(a.status).toBe(200)
    if (key)
      expect((await staffReq('POST', `/manager/affiliates/${a.json.id}/postback-keys`)).status).toBe(200)
    return a.json.id as number
  }
  let seq = 0
  const queue = (affiliate: number, n: number) =>
    t.ctx.db.insert(postbacks).values(
      Array.from({ length: n }, () => ({
        brandId: 1,
        affiliateId: affiliate,
        conversionId: 990_000 + seq++,
        body: JSON.stringify({ type: 'conversion', conversion: { id: seq } }),
        nextAt: clock.now(),
        createdAt: clock.now(),
      })),
    )
  const rowsOf = (affiliate: number) =>
    t.ctx.db.select().from(postbacks).where(eq(postbacks.affiliateId, affiliate))
  /** Runs `fix` as another instance would, after the sender's send and before its settle commits. */
  const passWithFixDuringSettle = async (fix: () => Promise<void>) => {
    const uow = t.ctx.uow as { run: (...x: unknown[]) => unknown }
    const orig = uow.run
    let hooked = true
    uow.run = async function (this: unknown, ...args: unknown[]) {
      if (hooked) {
        hooked = false
        await fix()
      }
      return orig.apply(this, args)
    } as typeof orig
    try {
      await t.runJob('affiliate.postbacks')
    } finally {
      uow.run = orig
    }
  }
  beforeAll(async () => {
    receiver = Bun.serve({
      hostname: '127.0.0.1',
      port: 0,
      async fetch(req) {
        got.push(`${new URL(req.url).pathname} ${await req.text()}`)
        return new Response('ok')
      },
    })
    t = await makeTestApp({ clock, env: { AFFILIATE_POSTBACK_PRIVATE: 'true' } })
    expect(
      (
        await staffReq('PUT', '/manager/affiliate-settings', {
          postback_hosts: [`127.0.0.1:${receiver.port}`],
        })
      ).status,
    ).toBe(200)
  })
  afterAll(async () => {
    await t.close()
    receiver.stop(true)
  })

  test('a key created while the sender is refusing "no signing key" (other instance): the postbacks go out at the next pass', async () => {
    const a = await makeAffiliate('RKA', 'race', false)
    await queue(a, 1)
    // the sender read "no key"; before its settle commits, staff create the key (its wake finds nothing parked)
    await passWithFixDuringSettle(async () => {
      expect((await staffReq('POST', `/manager/affiliates/${a}/postback-keys`)).status).toBe(200)
      await queue(a, 1) // a conversion made after the key exists
    })
    clock.advance(60_000)
    await t.runJob('affiliate.postbacks')
    const rows = await rowsOf(a)
    // the key exists: both go out at the next pass, none parked until createdAt + 30 days
    expect(rows.map((r) => [r.status, r.nextAt - r.createdAt])).toEqual(
      rows.map((r) => ['sent', r.nextAt - r.createdAt]),
    )
  })

  test('a postback_url saved while the sender is refusing "no postback_url": the postbacks go out at the next pass', async () => {
    const a = await makeAffiliate('RKU', 'url-race', true)
    expect((await staffReq('PATCH', `/manager/affiliates/${a}`, { postback_url: '' })).status).toBe(200)
    await queue(a, 2)
    await passWithFixDuringSettle(async () => {
      const url = `http://127.0.0.1:${receiver.port}/url-race`
      expect((await staffReq('PATCH', `/manager/affiliates/${a}`, { postback_url: url })).status).toBe(200)
    })
    clock.advance(60_000)
    await t.runJob('affiliate.postbacks')
    const rows = await rowsOf(a)
    expect(rows.map((r) => [r.status, r.lastError])).toEqual(rows.map(() => ['sent', '']))
    expect(got.filter((g) => g.startsWith('/url-race'))).toHaveLength(2)
  })

  test('an affiliate suspended for 31 days (its postbacks "wait until it is active again"): a settings refusal parks them 30 days from then, fixed a minute later they go out', async () => {
    const a = await makeAffiliate('RKS', 'susp', true)
    expect((await staffReq('PATCH', `/manager/affiliates/${a}`, { status: 'suspended' })).status).toBe(200)
    await queue(a, 3)
    await t.runJob('affiliate.postbacks')
    expect((await rowsOf(a)).map((r) => r.status)).toEqual(['pending', 'pending', 'pending'])
    clock.advance(31 * 86_400_000)
    // meanwhile the brand's allowlist moved off the host
    expect(
      (await staffReq('PUT', '/manager/affiliate-settings', { postback_hosts: ['example.com'] })).status,
    ).toBe(200)
    expect((await staffReq('PATCH', `/manager/affiliates/${a}`, { status: 'active' })).status).toBe(200)
    await t.runJob('affiliate.postbacks')
    const parked = await rowsOf(a)
    expect(parked.map((r) => [r.status, r.attempts, r.nextAt])).toEqual(
      parked.map(() => ['pending', 0, clock.now() + 30 * 86_400_000]),
    )
    // staff notice and put the host back a minute later
    clock.advance(60_000)
    expect(
      (
        await staffReq('PUT', '/manager/affiliate-settings', {
          postback_hosts: [`127.0.0.1:${receiver.port}`],
        })
      ).status,
    ).toBe(200)
    await t.runJob('affiliate.postbacks')
    const rows = await rowsOf(a)
    expect(rows.map((r) => [r.status, r.lastError])).toEqual(rows.map(() => ['sent', '']))
  })

  test('a postback_url cleared by mistake and restored a minute later: its pending postbacks go out', async () => {
    const a = await makeAffiliate('RKC', 'clear', true)
    expect((await staffReq('PATCH', `/manager/affiliates/${a}`, { status: 'suspended' })).status).toBe(200)
    await queue(a, 2)
    expect((await staffReq('PATCH', `/manager/affiliates/${a}`, { postback_url: '' })).status).toBe(200)
    expect(
      (
        await staffReq('PATCH', `/manager/affiliates/${a}`, {
          postback_url: `http://127.0.0.1:${receiver.port}/clear`,
          status: 'active',
        })
      ).status,
    ).toBe(200)
    await t.runJob('affiliate.postbacks')
    const rows = await rowsOf(a)
    expect(rows.map((r) => r.status)).toEqual(rows.map(() => 'sent'))
  })

  test('a postback_url cleared while the sender runs: parked (not dead), woken and sent when a URL is saved again', async () => {
    const a = await makeAffiliate('RKP', 'park', true)
    expect((await staffReq('PATCH', `/manager/affiliates/${a}`, { postback_url: '' })).status).toBe(200)
    await queue(a, 2)
    await t.runJob('affiliate.postbacks')
    const parked = await rowsOf(a)
    expect(parked.map((r) => [r.status, r.attempts, r.lastError, r.nextAt])).toEqual(
      parked.map(() => [
        'pending',
        0,
        'no postback_url: the affiliate receives no postbacks',
        clock.now() + 30 * 86_400_000,
      ]),
    )
    clock.advance(5 * 86_400_000)
    const url = `http://127.0.0.1:${receiver.port}/park`
    expect((await staffReq('PATCH', `/manager/affiliates/${a}`, { postback_url: url })).status).toBe(200)
    await t.runJob('affiliate.postbacks')
    const rows = await rowsOf(a)
    expect(rows.map((r) => [r.status, r.lastError])).toEqual(rows.map(() => ['sent', '']))
  })
})
