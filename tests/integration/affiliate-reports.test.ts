// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Issue 44's reports and earnings: the cabinet's report by every dimension equal to the rows it groups
// (clicks, conversions, commission rows and the customers' dimensions), earnings equal to the commission
// rows, CSV exports, statements of the caller only, staff reports, validation; the country of a click.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { and, eq, like, sql } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { affiliates, commissions, referredCustomers, statements } from '../../src/modules/affiliate/schema'
import { AttributionPort } from '../../src/modules/attribution'
import { touches } from '../../src/modules/attribution/schema'
import { makeTestApp, type TestApp } from '../support/app'

const DAY = 86_400_000
const clock = new ManualClock(Date.now())
const CAB = 'affiliates.localhost'
let t: TestApp
let staff: string
let session: string
let me: { id: number; brand: { id: number } }
let otherStatement = 0
let ownStatement = 0
const period = (ms: number) => new Date(ms).toISOString().slice(0, 7)
const lastMonth = period(
  Date.UTC(new Date(clock.now()).getUTCFullYear(), new Date(clock.now()).getUTCMonth(), 0),
)

const cab = (path: string) => t.request('GET', path, { host: CAB, headers: { cookie: `tcs_aff=${session}` } })
async function allRows<R>(path: string): Promise<R[]> {
  const out: R[] = []
  let cursor: string | null = null
  do {
    const r = await cab(
      `${path}${path.includes('?') ? '&' : '?'}limit=200${cursor ? `&cursor=${cursor}` : ''}`,
    )
    expect(r.status).toBe(200)
    out.push(...r.json.rows)
    cursor = r.json.next_cursor
  } while (cursor)
  return out
}

type Money = { currency: string; amount: number }
const sum = (list: Money[], currency: string) =>
  Math.round(list.filter((m) => m.currency === currency).reduce((s, m) => s + m.amount, 0) * 100) / 100

beforeAll(async () => {
  t = await makeTestApp({ clock })
  staff = await t.staffToken()
  const r = await t.request('POST', '/api/affiliate/login', {
    host: CAB,
    body: { login: 'partner@example.com', password: 'partner-pass-1' },
    headers: { origin: `http://${CAB}` },
  })
  session = /tcs_aff=([^;]*)/.exec(r.headers.get('set-cookie') ?? '')?.[1] ?? ''
  me = r.json.me
  // another affiliate of the same brand, with rows and a statement of its own
  const other = await t.request('POST', '/manager/affiliates', {
    token: staff,
    body: { email: 'other-partner@example.com', code: 'OTHERPARTNER', password: 'other-pass-1' },
  })
  expect(other.status).toBe(200)
  // commission rows as the ledger writes them (its plans are tested in affiliate-commissions.test.ts):
  // for each demo customer a CPA and RevShare rows in two currencies, a reversal, a period-level row
  const db = t.ctx.db
  const customers = await db
    .select()
    .from(referredCustomers)
    .where(and(eq(referredCustomers.brandId, me.brand.id), eq(referredCustomers.affiliateId, me.id)))
  expect(customers.length).toBe(6)
  const now = clock.now()
  const row = (o: Partial<typeof commissions.$inferInsert> & { eventTime: number; amountMinor: number }) => ({
    brandId: me.brand.id,
    affiliateId: me.id,
    kind: 'cpa' as const,
    key: `k${Math.random()}`,
    period: period(o.eventTime),
    currency: 'USD',
    createdAt: now,
    updatedAt: now,
    ...o,
  })
  const rows: (typeof commissions.$inferInsert)[] = []
  customers.forEach((c, i) => {
    const at = now - (5 + i * 4) * DAY
    rows.push(
      row({
        customerId: c.customerId,
        amountMinor: 10_000 + i,
        basisMinor: 10_000,
        eventTime: at,
        planId: 1,
        planVersion: 2,
        factIds: `[${i + 1},${i + 2}]`,
      }),
    )
    rows.push(
      row({
        customerId: c.customerId,
        kind: 'revshare',
        amountMinor: 1_234 * (i + 1),
        basisMinor: 4_936 * (i + 1),
        rateBp: 2_500,
        eventTime: at + 3_600_000,
      }),
    )
    if (i % 2 === 0)
      rows.push(
        row({
          customerId: c.customerId,
          kind: 'revshare',
          currency: 'EUR',
          amountMinor: 777,
          basisMinor: 3_108,
          rateBp: 2_500,
          eventTime: at + 7_200_000,
        }),
      )
  })
  rows.push(
    row({
      customerId: customers[1].customerId,
      kind: 'cpa_reversal',
      amountMinor: -10_001,
      eventTime: now - 2 * DAY,
    }),
  )
  rows.push(row({ customerId: 0, kind: 'tier_adjustment', amountMinor: 555, eventTime: now - 3 * DAY }))
  // not the caller's: another affiliate of the brand, the same affiliate id on another brand, out of range
  rows.push(
    row({
      affiliateId: other.json.id,
      customerId: customers[0].customerId,
      amountMinor: 99_999,
      eventTime: now - DAY,
    }),
  )
  rows.push(
    row({
      brandId: me.brand.id + 1,
      customerId: customers[0].customerId,
      amountMinor: 88_888,
      eventTime: now - DAY,
    }),
  )
  rows.push(row({ customerId: customers[0].customerId, amountMinor: 77_777, eventTime: now - 400 * DAY }))
  await db.insert(commissions).values(rows)
  const totals = JSON.stringify([{ currency: 'USD', amount_minor: 12_345, rows: 3 }])
  const [own] = await db
    .insert(statements)
    .values({ brandId: me.brand.id, affiliateId: me.id, period: lastMonth, totals, rows: 3, createdAt: now })
    .returning()
  const [theirs] = await db
    .insert(statements)
    .values({
      brandId: me.brand.id,
      affiliateId: other.json.id,
      period: lastMonth,
      totals,
      rows: 3,
      createdAt: now,
    })
    .returning()
  ownStatement = own.id
  otherStatement = theirs.id
})
afterAll(() => t.close())

const DIMENSIONS = ['day', 'link', 'sub1', 'sub2', 'sub3', 'sub4', 'sub5', 'country', 'landing'] as const

describe('the report equals the rows it groups', () => {
  test('every dimension: totals equal the dashboard, the earnings and the listed rows', async () => {
    const dash = (await cab('/api/affiliate/dashboard?range=90d')).json
    const earn = (await cab('/api/affiliate/earnings?range=90d')).json
    const listed = await allRows<{ amount: number; currency: string }>('/api/affiliate/commissions?range=90d')
    for (const dimension of DIMENSIONS) {
      const r = await cab(`/api/affiliate/reports?range=90d&dimension=${dimension}`)
      expect(r.status).toBe(200)
      const { totals, rows } = r.json
      expect(totals.clicks).toBe(dash.funnel.clicks)
      expect(totals.unique_clicks).toBe(dash.funnel.unique_clicks)
      expect(totals.registrations).toBe(dash.funnel.registrations)
      expect(totals.first_deposits).toBe(dash.funnel.first_deposits)
      expect(totals.deposit_volume).toEqual(
        dash.deposit_volume.map((v: { currency: string; deposits: number }) => ({
          currency: v.currency,
          amount: v.deposits,
        })),
      )
      expect(totals.commissions).toEqual(
        earn.totals.map((x: Money) => ({ currency: x.currency, amount: x.amount })),
      )
      for (const c of ['USD', 'EUR']) {
        expect(sum(totals.commissions, c)).toBe(sum(listed, c))
        expect(
          sum(
            rows.flatMap((x: { commissions: Money[] }) => x.commissions),
            c,
          ),
        ).toBe(sum(totals.commissions, c))
      }
      expect(rows.reduce((s: number, x: { clicks: number }) => s + x.clicks, 0)).toBe(totals.clicks)
    }
    expect(dash.funnel.registrations).toBe(6)
    expect(sum(listed, 'EUR')).toBe(23.31)
  })

  test('by sub1, link, country, landing and day: each group is what its rows say', async () => {
    const customers = new Map(
      (
        await t.ctx.db
          .select()
          .from(referredCustomers)
          .where(and(eq(referredCustomers.brandId, me.brand.id), eq(referredCustomers.affiliateId, me.id)))
      ).map((c) => [c.customerId, c]),
    )
    const regs = await allRows<{ customer_id: number; event_time: number }>(
      '/api/affiliate/conversions?range=90d&kind=registration',
    )
    const comm = await allRows<{ customer_id: number; amount: number; currency: string; event_time: number }>(
      '/api/affiliate/commissions?range=90d',
    )
    const clicks = await allRows<{
      values: Record<string, string>
      country: string
      landing_path: string
      link_code: string
      time: number
    }>('/api/affiliate/clicks?range=90d')
    const day = (s: number) => new Date(s * 1000).toISOString().slice(0, 10)
    const cases: [string, (c: number) => string, (k: (typeof clicks)[number]) => string][] = [
      ['sub1', (c) => customers.get(c)?.sub1 ?? '', (k) => k.values.sub1 ?? ''],
      ['country', (c) => customers.get(c)?.country ?? '', (k) => k.country],
      ['landing', (c) => customers.get(c)?.landingPath ?? '', (k) => k.landing_path],
      ['link', (c) => (customers.get(c)?.linkId ? 'demo-spring' : ''), (k) => k.link_code],
    ]
    for (const [dimension, ofCustomer, ofClick] of cases) {
      const r = (await cab(`/api/affiliate/reports?range=90d&dimension=${dimension}`)).json
      const keys = new Set<string>(r.rows.map((x: { key: string }) => x.key))
      expect(keys.size).toBe(r.rows.length)
      for (const g of r.rows) {
        expect(g.registrations).toBe(regs.filter((x) => ofCustomer(x.customer_id) === g.key).length)
        expect(g.clicks).toBe(clicks.filter((k) => ofClick(k) === g.key).length)
        expect(sum(g.commissions, 'USD')).toBe(
          sum(
            comm.filter(
              (x) =>
                (x.customer_id !== 0 && ofCustomer(x.customer_id) === g.key) ||
                (x.customer_id === 0 && g.key === ''),
            ),
            'USD',
          ),
        )
      }
    }
    const spring = (await cab('/api/affiliate/reports?range=90d&dimension=sub1')).json.rows.find(
      (x: { key: string }) => x.key === 'spring',
    )
    expect(spring.registrations).toBe(6)
    expect(spring.clicks).toBeGreaterThan(0)
    const byDay = (await cab('/api/affiliate/reports?range=90d&dimension=day')).json
    expect(byDay.rows).toHaveLength(90)
    for (const g of byDay.rows) {
      expect(g.registrations).toBe(regs.filter((x) => day(x.event_time) === g.key).length)
      expect(g.clicks).toBe(clicks.filter((k) => day(k.time) === g.key).length)
      expect(sum(g.commissions, 'USD')).toBe(
        sum(
          comm.filter((x) => day(x.event_time) === g.key),
          'USD',
        ),
      )
    }
  })

  test('earnings: per kind, totals and the current period are the rows behind them', async () => {
    const e = (await cab('/api/affiliate/earnings?range=30d')).json
    for (const k of e.by_kind) {
      const rows = await allRows<Money>(`/api/affiliate/commissions?range=30d&kind=${k.kind}`)
      expect(rows.filter((x) => x.currency === k.currency)).toHaveLength(k.rows)
      expect(sum(rows, k.currency)).toBe(k.amount)
    }
    expect(e.by_kind.find((k: { kind: string }) => k.kind === 'cpa_reversal').amount).toBe(-100.01)
    const current = await allRows<Money & { period: string }>(
      `/api/affiliate/commissions?period=${e.current_period.period}`,
    )
    expect(e.current_period.status).toBe('open')
    for (const c of e.current_period.totals) {
      expect(current.filter((x) => x.currency === c.currency)).toHaveLength(c.rows)
      expect(sum(current, c.currency)).toBe(c.amount)
    }
    const [one] = (await cab('/api/affiliate/commissions?range=30d&kind=revshare&limit=1')).json.rows
    expect(one.rate).toBe(25)
    expect(one.amount).toBeGreaterThan(0)
    const cpa = (
      await allRows<{ facts: number[]; plan_version: number }>(
        '/api/affiliate/commissions?range=30d&kind=cpa',
      )
    )[0]
    expect(cpa.facts.length).toBe(2)
    expect(cpa.plan_version).toBe(2)
  })
})

describe('CSV', () => {
  test('a report: a header row, a column per currency, a total row; downloaded as a file over a socket', async () => {
    const server = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => t.app.handle(req) })
    try {
      const res = await fetch(
        `http://127.0.0.1:${server.port}/api/affiliate/reports?range=90d&dimension=sub1&format=csv`,
        {
          headers: { host: CAB, cookie: `tcs_aff=${session}` },
        },
      )
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toStartWith('text/csv')
      expect(res.headers.get('content-disposition')).toMatch(
        /^attachment; filename="report-sub1-\d{4}-\d{2}-\d{2}-\d{4}-\d{2}-\d{2}\.csv"$/,
      )
      const lines = (await res.text()).trimEnd().split('\r\n')
      expect(lines[0]).toBe(
        'sub1,clicks,unique_clicks,registrations,first_deposits,deposit_volume_USD,commissions_EUR,commissions_USD',
      )
      const json = (await cab('/api/affiliate/reports?range=90d&dimension=sub1')).json
      expect(lines).toHaveLength(json.rows.length + 2)
      const total = lines[lines.length - 1].split(',')
      expect(total[0]).toBe('total')
      expect(Number(total[3])).toBe(json.totals.registrations)
      expect(Number(total[7])).toBe(sum(json.totals.commissions, 'USD'))
    } finally {
      server.stop(true)
    }
  })

  test('commission rows and a statement: every row, in one file', async () => {
    const rows = await allRows<{ id: number }>('/api/affiliate/commissions?range=90d')
    const r = await cab('/api/affiliate/commissions?range=90d&format=csv')
    expect(r.headers.get('content-disposition')).toContain('attachment; filename="commissions-')
    const lines = r.text.trimEnd().split('\r\n')
    expect(lines[0]).toBe(
      'id,event_time,period,kind,customer_id,amount,currency,basis,rate_percent,volume_lots,plan_id,plan_version,corrects,facts',
    )
    expect(lines.slice(1).map((l) => Number(l.split(',')[0]))).toEqual(rows.map((x) => x.id))
    const s = await cab(`/api/affiliate/statements/${ownStatement}?format=csv`)
    expect(s.status).toBe(200)
    expect(s.headers.get('content-disposition')).toBe(`attachment; filename="statement-${lastMonth}.csv"`)
  })

  test('a sub-id a spreadsheet would run as a formula is written as text', async () => {
    const { csvText } = await import('../../src/modules/affiliate/csv')
    expect(
      csvText(
        ['a', 'b'],
        [
          ['=HYPERLINK("x")', -5],
          ['a,b', 1.5],
        ],
      ),
    ).toBe(`a,b\r\n"'=HYPERLINK(""x"")",-5\r\n"a,b",1.5\r\n`)
  })
})

describe('statements', () => {
  test('its own, newest period first, with the rows of its period; another affiliate’s is 404', async () => {
    const list = (await cab('/api/affiliate/statements')).json.rows
    expect(list.map((s: { id: number }) => s.id)).toEqual([ownStatement])
    expect(list[0].totals).toEqual([{ currency: 'USD', amount: 123.45, amount_minor: 12_345, rows: 3 }])
    const one = await cab(`/api/affiliate/statements/${ownStatement}`)
    expect(one.status).toBe(200)
    expect(one.json.statement.period).toBe(lastMonth)
    const ofPeriod = await allRows<{ id: number; period: string }>(
      `/api/affiliate/commissions?period=${lastMonth}`,
    )
    expect(one.json.rows.map((x: { id: number }) => x.id)).toEqual(ofPeriod.slice(0, 50).map((x) => x.id))
    for (const x of one.json.rows) expect(x.period).toBe(lastMonth)
    for (const id of [otherStatement, 999_999]) {
      const r = await cab(`/api/affiliate/statements/${id}`)
      expect(r.status).toBe(404)
      expect(r.json.error).toBe('STATEMENT_NOT_FOUND')
      expect((await cab(`/api/affiliate/statements/${id}?format=csv`)).status).toBe(404)
    }
  })
})

describe('staff', () => {
  test("the affiliate's report for any days equals its cabinet's; another brand's affiliate is 404", async () => {
    const dash = (await cab('/api/affiliate/reports?range=90d&dimension=sub1')).json
    const q = `affiliate_id=${me.id}&dimension=sub1&from=${dash.from}&to=${dash.to}`
    const r = await t.request('GET', `/manager/affiliate-reports?${q}`, { token: staff })
    expect(r.status).toBe(200)
    expect(r.json.rows).toEqual(dash.rows)
    expect(r.json.totals).toEqual(dash.totals)
    const csv = await t.request('GET', `/manager/affiliate-reports?${q}&format=csv`, { token: staff })
    expect(csv.headers.get('content-type')).toStartWith('text/csv')
    expect(csv.text.split('\r\n')[0]).toStartWith('sub1,clicks,')
    const [beta] = await t.ctx.db.select().from(affiliates).where(eq(affiliates.code, 'BETAPARTNER'))
    const other = await t.request(
      'GET',
      `/manager/affiliate-reports?affiliate_id=${beta.id}&dimension=day&from=${dash.from}&to=${dash.to}`,
      { token: staff },
    )
    expect(other.status).toBe(404)
    expect(other.json.error).toBe('AFFILIATE_NOT_FOUND')
    expect(
      (
        await t.request('GET', `/manager/affiliate-reports?${q}`, {
          host: CAB,
          headers: { cookie: `tcs_aff=${session}` },
        })
      ).status,
    ).not.toBe(200)
  })
})

/** The field a message names: `from: …` (a rule of the service) or `query dimension: …` (the schema's). */
const names = (message: string) => /^(?:query |params )?([a-z_0-9]+)/.exec(message)?.[1]

describe('validation: 400 INVALID_DATA naming the field', () => {
  test('cabinet and staff', async () => {
    const cases: [string, string][] = [
      ['/api/affiliate/reports?range=30d', 'dimension'],
      ['/api/affiliate/reports?range=30d&dimension=city', 'dimension'],
      ['/api/affiliate/reports?range=1y&dimension=day', 'range'],
      ['/api/affiliate/reports?range=30d&dimension=day&format=xls', 'format'],
      ['/api/affiliate/earnings?range=custom&from=2026-02-30&to=2026-03-01', 'from'],
      ['/api/affiliate/commissions?kind=bonus', 'kind'],
      ['/api/affiliate/commissions?period=2026-13', 'period'],
      ['/api/affiliate/commissions?cursor=nope', 'cursor'],
      ['/api/affiliate/commissions?limit=201', 'limit'],
      ['/api/affiliate/statements/abc', 'id'],
      ['/api/affiliate/statements/0', 'id'],
    ]
    for (const [path, field] of cases) {
      const r = await cab(path)
      expect(`${path} ${r.status}`).toBe(`${path} 400`)
      expect(r.json.error).toBe('INVALID_DATA')
      expect(`${path} ${names(r.json.message)}`).toBe(`${path} ${field}`)
    }
    for (const [q, field] of [
      ['dimension=day&from=2026-01-01&to=2026-01-31', 'affiliate_id'],
      [`affiliate_id=${me.id}&dimension=week&from=2026-01-01&to=2026-01-31`, 'dimension'],
      [`affiliate_id=${me.id}&dimension=day&from=2026-01-31&to=2026-01-01`, 'to'],
      [`affiliate_id=${me.id}&dimension=day&to=2026-01-01`, 'from'],
      [`affiliate_id=${me.id}&dimension=day&from=2025-01-01&to=2026-06-01`, 'to'],
    ]) {
      const r = await t.request('GET', `/manager/affiliate-reports?${q}`, { token: staff })
      expect(`${q} ${r.status}`).toBe(`${q} 400`)
      expect(`${q} ${names(r.json.message)}`).toBe(`${q} ${field}`)
    }
  })
})

describe('the country of a click', () => {
  const clicks = async (app: TestApp, countries: string[]) => {
    for (const [i, country] of countries.entries())
      await app.request('GET', '/go/demo-home', {
        headers: {
          'cf-ipcountry': country,
          'user-agent': `Mozilla/5.0 test-${i}`,
          'x-forwarded-for': `10.1.0.${i}`,
        },
      })
    await app.ports.get(AttributionPort).flushTouches()
  }
  const count = (r: { rows: { key: string; clicks: number }[] }, k: string) =>
    r.rows.find((x) => x.key === k)?.clicks ?? 0

  test("behind a trusted proxy (Cloudflare), cf-ipcountry: two uppercase letters, not XX or T1; '' otherwise", async () => {
    const edge = await makeTestApp({ env: { TRUST_PROXY: 'true' } })
    try {
      await clicks(edge, ['NL', 'NL', 'XX', 'T1', 'nl', 'NLD', ''])
      const rows = await edge.ctx.db
        .select({ country: touches.country, n: sql<number>`count(*)` })
        .from(touches)
        .where(and(eq(touches.source, 'click'), like(touches.userAgent, 'Mozilla/5.0 test-%')))
        .groupBy(touches.country)
      expect(Object.fromEntries(rows.map((r) => [r.country, Number(r.n)]))).toEqual({ NL: 2, '': 5 })
    } finally {
      edge.close()
    }
  })

  test("without a trusted proxy the header is the client's word: not taken; a click lands where its link redirects", async () => {
    const before = (await cab('/api/affiliate/reports?range=today&dimension=country')).json
    await clicks(t, ['NL', 'NL', 'DE'])
    const after = (await cab('/api/affiliate/reports?range=today&dimension=country')).json
    expect(count(after, 'NL') - count(before, 'NL')).toBe(0)
    expect(count(after, '') - count(before, '')).toBe(3)
    const landing = (await cab('/api/affiliate/reports?range=today&dimension=landing')).json
    expect(landing.rows.map((x: { key: string }) => x.key)).not.toContain('/go/demo-home')
    expect(count(landing, '/')).toBeGreaterThanOrEqual(3)
  })
})
