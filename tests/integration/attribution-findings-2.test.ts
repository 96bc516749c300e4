// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Attribution findings of a hostile probe: names a prototype answers are no values, landing pages checked
// for scripted clicks as links are, a touch's codes checked again at the registration, the first of a
// repeated query name, the /go code held to the rule of values, one dedupe key for pages and links.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { customers } from '../../src/modules/accounts/schema'
import { AttributionPort } from '../../src/modules/attribution'
import { parseParams } from '../../src/modules/attribution/domain/params'
import { touches } from '../../src/modules/attribution/schema'
import { makeTestApp, type TestApp } from '../support/app'

const clock = new ManualClock(Date.UTC(2026, 10, 24, 9, 0, 0))
const BROWSER =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36'
let t: TestApp
let staff: string
let n = 0

const get = (path: string, o: { vid?: string; ua?: string; ip?: string } = {}) =>
  t.request('GET', path, {
    headers: {
      'user-agent': o.ua ?? BROWSER,
      ...(o.vid ? { cookie: `tcs_vid=${o.vid}` } : {}),
      // every test its own address: the suspect counters are per address
      'x-forwarded-for': o.ip ?? '192.0.2.1',
    },
  })
const vidOf = (r: { headers: Headers }) =>
  /tcs_vid=([^;]+)/.exec(r.headers.get('set-cookie') ?? '')?.[1] ?? ''
const flush = () => t.ports.get(AttributionPort).flushTouches()
const touchesOf = async (vid: string) => {
  await flush()
  return t.ctx.db.select().from(touches).where(eq(touches.visitorId, vid)).orderBy(touches.id)
}
async function register(o: { vid?: string; body?: Record<string, unknown> } = {}) {
  const email = `findings2-${++n}@example.com`
  const r = await t.request('POST', '/customer/register', {
    headers: { 'user-agent': BROWSER, ...(o.vid ? { cookie: `tcs_vid=${o.vid}` } : {}) },
    body: { email, password: 'find-pass-1', name: 'Finding', ...o.body },
  })
  expect(r.status).toBe(200)
  const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
  return { id: c.id, attribution: c.attribution ? JSON.parse(c.attribution) : null }
}
/** A fresh affiliate of the brand (and a link of it), so a suspension here touches no other test. */
async function partner(code: string) {
  const a = await t.request('POST', '/manager/affiliates', {
    token: staff,
    body: { email: `${code.toLowerCase()}@example.com`, code, password: 'partner-pass-1' },
  })
  expect(a.status).toBe(200)
  const l = await t.request('POST', '/manager/affiliate-links', {
    token: staff,
    body: { affiliate_id: a.json.id, code: `${code.toLowerCase()}-link`, landing_path: '/p/promo' },
  })
  expect(l.status).toBe(200)
  return { id: a.json.id as number, code, linkId: l.json.id as number, link: `${code.toLowerCase()}-link` }
}

beforeAll(async () => {
  t = await makeTestApp({ clock, env: { TRUST_PROXY: 'true' } })
  staff = await t.staffToken()
})
afterAll(() => t.close())

describe('names an object prototype answers are no attribution values', () => {
  test('parseParams knows its names only, and answers an object without a prototype', () => {
    const p = parseParams(
      new URLSearchParams('constructor=x&__proto__=y&toString=z&hasOwnProperty=w&valueOf=v&utm_source=ok'),
    )
    expect(Object.keys(p)).toEqual(['utm_source'])
    expect(Object.getPrototypeOf(p)).toBeNull()
    expect(Object.keys(parseParams({ constructor: 'x', toString: 'y', aff: 'DEMOPARTNER' }))).toEqual([
      'affiliate',
    ])
  })

  test("a later visit with ?constructor=1 is no touch: the affiliate's click still wins", async () => {
    const vid = vidOf(await get('/go/demo-spring?sub1=proto', { ip: '192.0.2.10' }))
    clock.advance(1_000)
    await get('/p/promo?constructor=1&toString=2', { vid, ip: '192.0.2.10' })
    expect((await touchesOf(vid)).map((x) => x.source)).toEqual(['click'])
    const r = await register({ vid })
    expect([r.attribution?.affiliate_id, r.attribution?.won_by]).toEqual(['1', 'last_touch'])
    expect(Object.keys(r.attribution).some((k) => k.includes('function'))).toBe(false)
  })

  test('a registration body of such names carries no values: the click wins', async () => {
    clock.advance(1_000)
    const vid = vidOf(await get('/go/demo-spring?sub1=proto2', { ip: '192.0.2.11' }))
    const r = await register({ vid, body: { attribution: { constructor: 'x', tostring: 'y' } } })
    expect([r.attribution?.affiliate_id, r.attribution?.won_by]).toEqual(['1', 'last_touch'])
    expect(Object.keys(r.attribution).some((k) => k.includes('function'))).toBe(false)
  })

  test('a touch an older version stored under such a name neither wins nor lands in the record', async () => {
    clock.advance(1_000)
    const vid = vidOf(await get('/go/demo-spring?sub1=proto3', { ip: '192.0.2.12' }))
    const [click] = await touchesOf(vid)
    // what `?constructor=1` stored before: the name the prototype's function printed as
    await t.ctx.db.insert(touches).values({
      brandId: click.brandId,
      visitorId: vid,
      source: 'page',
      params: JSON.stringify({ 'function Object() { [native code] }': '1' }),
      direct: 0,
      createdAt: clock.now() + 1_000,
    })
    clock.advance(2_000)
    const r = await register({ vid })
    expect([r.attribution?.affiliate_id, r.attribution?.sub1]).toEqual(['1', 'proto3'])
    expect(Object.keys(r.attribution).some((k) => k.includes('function'))).toBe(false)
  })

  test('an install of such names is not attributed', async () => {
    const r = await t.request('POST', '/app', {
      headers: { 'user-agent': 'okhttp/4.12' },
      body: { installation_id: 'inst-findings2-proto', platform: 'ios', attribution: { constructor: 'x' } },
    })
    expect([r.status, r.json.attributed]).toEqual([200, false])
  })
})

describe('landing pages are checked for scripted clicks as links are', () => {
  test('one address rotating user agents: its page clicks turn suspect', async () => {
    clock.advance(600_000)
    for (let i = 0; i < 12; i++)
      await get('/?affiliate=DEMOPARTNER&sub1=rotate', { ip: '192.0.2.20', ua: `${BROWSER} r/${i}` })
    await flush()
    const rows = (await t.ctx.db.all(
      sql`select unique_click, suspect from attribution_touches
          where json_extract(params, '$.sub1') = 'rotate' order by id`,
    )) as { unique_click: number; suspect: number }[]
    expect(rows).toHaveLength(12)
    // the first 8 agents pass, the rest are a rotation
    expect(rows.slice(0, 8).every((r) => r.suspect === 0)).toBe(true)
    expect(rows.slice(8).every((r) => r.suspect === 1)).toBe(true)
  })

  test('40 page hits a minute from one address with fresh cookies: no more than 30 unique', async () => {
    clock.advance(600_000)
    for (let i = 0; i < 40; i++)
      await get('/?affiliate=DEMOPARTNER&sub1=burst', { ip: '192.0.2.21', vid: crypto.randomUUID() })
    await flush()
    const rows = (await t.ctx.db.all(
      sql`select unique_click, suspect from attribution_touches
          where json_extract(params, '$.sub1') = 'burst' order by id`,
    )) as { unique_click: number; suspect: number }[]
    expect(rows).toHaveLength(40)
    expect(rows.filter((r) => r.unique_click === 1 && r.suspect === 0)).toHaveLength(30)
  })

  test('a visit of the brand without a code pays no check and counts nothing suspect', async () => {
    clock.advance(600_000)
    for (let i = 0; i < 35; i++)
      await get('/?utm_source=news', { ip: '192.0.2.22', vid: crypto.randomUUID() })
    await flush()
    const [row] = (await t.ctx.db.all(
      sql`select count(*) as n, sum(suspect) as s from attribution_touches
          where json_extract(params, '$.utm_source') = 'news'`,
    )) as { n: number; s: number }[]
    expect([Number(row.n), Number(row.s)]).toEqual([35, 0])
  })
})

describe("a touch's codes as they stand at the registration", () => {
  test('an affiliate suspended after the click refers nobody; the touch still wins with its values', async () => {
    clock.advance(600_000)
    const p = await partner('STANDSUSP')
    const vid = vidOf(await get(`/?affiliate=${p.code}&sub1=susp`, { ip: '192.0.2.30' }))
    const [touch] = await touchesOf(vid)
    expect(touch.affiliateId).toBe(p.id)
    const s = await t.request('PATCH', `/manager/affiliates/${p.id}`, {
      token: staff,
      body: { status: 'suspended' },
    })
    expect(s.status).toBe(200)
    const r = await register({ vid })
    expect(r.attribution.affiliate_id).toBeUndefined()
    expect([r.attribution.won_by, r.attribution.sub1, r.attribution.touch_id]).toEqual([
      'last_touch',
      'susp',
      String(touch.id),
    ])
    await t.settle()
    const conversions = await t.ctx.db.all(
      sql`select id from affiliate_conversions where customer_id = ${r.id}`,
    )
    expect(conversions).toHaveLength(0)
  })

  test('a link deactivated after the click refers through nothing', async () => {
    clock.advance(600_000)
    const p = await partner('STANDLINK')
    const vid = vidOf(await get(`/go/${p.link}?sub1=deact`, { ip: '192.0.2.31' }))
    expect((await touchesOf(vid))[0].linkId).toBe(p.linkId)
    const off = await t.request('PATCH', `/manager/affiliate-links/${p.linkId}`, {
      token: staff,
      body: { active: false },
    })
    expect(off.status).toBe(200)
    const r = await register({ vid })
    expect([r.attribution.affiliate_id, r.attribution.link_id]).toEqual([undefined, undefined])
    expect(r.attribution.won_by).toBe('last_touch')
  })

  test("a link deactivated after a visit that also named the affiliate's code: the affiliate alone", async () => {
    clock.advance(600_000)
    const p = await partner('STANDBOTH')
    const vid = vidOf(await get(`/?link=${p.link}&affiliate=${p.code}`, { ip: '192.0.2.32' }))
    expect((await touchesOf(vid))[0].linkId).toBe(p.linkId)
    await t.request('PATCH', `/manager/affiliate-links/${p.linkId}`, {
      token: staff,
      body: { active: false },
    })
    const r = await register({ vid })
    expect([r.attribution.affiliate_id, r.attribution.link_id]).toEqual([String(p.id), undefined])
  })

  test('an active affiliate and link still refer (control)', async () => {
    clock.advance(600_000)
    const p = await partner('STANDOK')
    const vid = vidOf(await get(`/go/${p.link}`, { ip: '192.0.2.33' }))
    const r = await register({ vid })
    expect([r.attribution.affiliate_id, r.attribution.link_id]).toEqual([String(p.id), String(p.linkId)])
  })
})

describe('query values and the /go code', () => {
  test('a repeated query name: the first value wins', async () => {
    const r = await get('/?utm_source=first&utm_source=second&affiliate=DEMOPARTNER&affiliate=NOPE', {
      ip: '192.0.2.40',
    })
    const [touch] = await touchesOf(vidOf(r))
    expect(JSON.parse(touch.params)).toMatchObject({ utm_source: 'first', affiliate: 'DEMOPARTNER' })
    expect(touch.affiliateId).toBe(1)
  })

  test('a query value with a control character is dropped, not trimmed into a value', async () => {
    const r = await get('/?utm_source=%0D%0ASet-Cookie:%20a=1&utm_medium=ok', { ip: '192.0.2.41' })
    const [touch] = await touchesOf(vidOf(r))
    expect(JSON.parse(touch.params)).toEqual({ utm_medium: 'ok' })
  })

  test('a /go code not plain text, or over 128 characters, keeps no link and redirects to /', async () => {
    for (const code of [
      '%0D%0ASet-Cookie:%20a=1',
      '%E2%80%AEtxt.exe',
      '%00',
      'demo-spring'.padEnd(200, 'x'),
    ]) {
      const r = await get(`/go/${code}?sub1=bad`, { ip: '192.0.2.42' })
      expect([r.status, r.headers.get('location')]).toEqual([302, '/'])
      const [touch] = await touchesOf(vidOf(r))
      expect(JSON.parse(touch.params)).toEqual({ sub1: 'bad' })
      expect(touch.linkId).toBeNull()
    }
  })

  test('a /go code that cannot be decoded redirects to /, never an error', async () => {
    for (const code of ['%', '%E2%80', 'a%zz']) {
      const r = await get(`/go/${code}`, { ip: '192.0.2.43' })
      expect([r.status, r.headers.get('location')]).toEqual([302, '/'])
    }
  })
})

test('a link followed then opened as /?link= within the hour is one unique click', async () => {
  clock.advance(600_000)
  const vid = vidOf(await get('/go/demo-spring?sub1=dbl', { ip: '192.0.2.50' }))
  await get('/?link=demo-spring&sub1=dbl', { vid, ip: '192.0.2.50' })
  const rows = await touchesOf(vid)
  expect(rows.map((x) => [x.source, x.uniqueClick])).toEqual([
    ['click', 1],
    ['page', 0],
  ])
})
