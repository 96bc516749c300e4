// Attribution and affiliates (issue 40): brands sealed for staff, every click counted and to the right
// affiliate, installs from apps, the 1.25.244 repair posted, sub-ids everywhere a conversion is posted or
// shown, unique and suspect clicks, retention with a roll-up, the cabinet's cursor and login.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { customers } from '../../src/modules/accounts/schema'
import { isInternalAddress, isInternalHost } from '../../src/modules/affiliate/domain/internal-address'
import { expandPostbackUrl } from '../../src/modules/affiliate/domain/postback'
import { postbacks } from '../../src/modules/affiliate/schema'
import { AttributionPort } from '../../src/modules/attribution'
import { clickDays, touches } from '../../src/modules/attribution/schema'
import { makeTestApp, type TestApp } from '../support/app'

const clock = new ManualClock(Date.UTC(2026, 10, 24, 9, 0, 0))
const BROWSER =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36'
const CABINET = 'affiliates.localhost'
let t: TestApp
let demoStaff: string
let n = 0

const get = (path: string, o: { vid?: string; ua?: string; ip?: string; host?: string } = {}) =>
  t.request('GET', path, {
    host: o.host,
    headers: {
      'user-agent': o.ua ?? BROWSER,
      ...(o.vid ? { cookie: `tcs_vid=${o.vid}` } : {}),
      ...(o.ip ? { 'x-forwarded-for': o.ip } : {}),
    },
  })
const vidOf = (r: { headers: Headers }) =>
  /tcs_vid=([^;]+)/.exec(r.headers.get('set-cookie') ?? '')?.[1] ?? ''
async function register(o: { vid?: string; body?: Record<string, unknown> } = {}) {
  const email = `find-${++n}@example.com`
  const r = await t.request('POST', '/customer/register', {
    headers: { 'user-agent': BROWSER, ...(o.vid ? { cookie: `tcs_vid=${o.vid}` } : {}) },
    body: { email, password: 'find-pass-1', name: 'Find', ...o.body },
  })
  expect(r.status).toBe(200)
  const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
  return c!.attribution ? (JSON.parse(c!.attribution) as Record<string, string>) : null
}
const flush = () => t.ports.get(AttributionPort).flushTouches()

beforeAll(async () => {
  t = await makeTestApp({ clock, env: { TRUST_PROXY: 'true' } })
  demoStaff = await t.staffToken()
})
afterAll(() => t.close())

describe('staff of one brand on another brand', () => {
  test("another brand's affiliate: its keys and profile are off limits, and nothing of its home brand is shown", async () => {
    // Demo staff grant BETAPARTNER access to Demo: Beta's fields stay Beta's
    const granted = await t.request('PUT', '/manager/affiliates/access/BETAPARTNER', {
      token: demoStaff,
      body: { status: 'active', password: 'grant-pass-1' },
    })
    expect(granted.status).toBe(200)
    expect(granted.json).toMatchObject({ email: '', postback_url: '', postback_key_ids: [] })
    const id = granted.json.id
    const key = await t.request('POST', `/manager/affiliates/${id}/postback-keys`, { token: demoStaff })
    expect([key.status, key.json.error]).toEqual([403, 'NOT_HOME_BRAND'])
    const del = await t.request('DELETE', `/manager/affiliates/${id}/postback-keys/pk_000000000000`, {
      token: demoStaff,
    })
    expect([del.status, del.json.error]).toEqual([403, 'NOT_HOME_BRAND'])
    expect((await t.request('GET', `/manager/affiliates/${id}`, { token: demoStaff })).json.email).toBe('')
    // its cabinet on Demo, with the password Demo's staff set, shows no home-brand field either
    const signedIn = await t.request('POST', '/api/affiliate/login', {
      host: 'affiliates.localhost',
      body: { login: 'BETAPARTNER', password: 'grant-pass-1' },
      headers: { origin: 'http://affiliates.localhost' },
    })
    expect(signedIn.status).toBe(200)
    expect(signedIn.json.me).toMatchObject({ email: '', code: 'BETAPARTNER', brand: { name: 'Demo' } })
    const cookie = /tcs_aff=([^;]*)/.exec(signedIn.headers.get('set-cookie') ?? '')?.[1] ?? ''
    const me = await t.request('GET', '/api/affiliate/me', {
      host: 'affiliates.localhost',
      headers: { cookie: `tcs_aff=${cookie}` },
    })
    expect([me.status, me.json.email]).toEqual([200, ''])
    // revoked: no link can be made for it on this brand
    const revoked = await t.request('PUT', '/manager/affiliates/access/BETAPARTNER', {
      token: demoStaff,
      body: { status: 'revoked' },
    })
    expect(revoked.json.access_status).toBe('revoked')
    const link = await t.request('POST', '/manager/affiliate-links', {
      token: demoStaff,
      body: { affiliate_id: id, code: 'beta-on-demo' },
    })
    expect([link.status, link.json.error]).toEqual([409, 'AFFILIATE_NOT_ACTIVE'])
  })
})

describe('clicks', () => {
  test('two visitors behind one address and browser build are each attributed', async () => {
    const a = vidOf(await get('/go/demo-spring', { ip: '203.0.113.7' }))
    const b = vidOf(await get('/go/demo-spring', { ip: '203.0.113.7' }))
    expect(a).not.toBe(b)
    expect(
      (await register({ vid: a }))?.affiliate_code ?? (await register({ vid: a }))?.link_code,
    ).toBeTruthy()
    expect((await register({ vid: b }))?.won_by).toBe('last_touch')
  })

  test("A's link, then a page of B, then A's link again: A wins (the latest touch)", async () => {
    const vid = vidOf(await get('/go/demo-spring'))
    await get('/?affiliate=BETAPARTNER', { vid })
    await get('/go/demo-spring', { vid })
    const won = await register({ vid })
    expect(won?.link_code).toBe('demo-spring')
    // the repeat is a touch of its own, counted raw and not unique
    await flush()
    const clicks = await t.ctx.db.select().from(touches).where(eq(touches.visitorId, vid))
    expect(clicks.filter((c) => c.source === 'click').map((c) => c.uniqueClick)).toEqual([1, 0])
  })

  test('an address that clicks like a script is flagged suspect, never dropped', async () => {
    for (let i = 0; i < 12; i++)
      await get('/go/demo-home', { ip: '198.51.100.9', ua: `${BROWSER} rotate/${i}` })
    await flush()
    const rows = (await t.ctx.db.all(
      sql`select suspect from attribution_touches where source = 'click' and ip_hash = (
            select ip_hash from attribution_touches order by id desc limit 1) order by id`,
    )) as { suspect: number }[]
    expect(rows).toHaveLength(12)
    expect(rows.at(-1)!.suspect).toBe(1)
    expect(rows[0]!.suspect).toBe(0)
  })

  test('an app install reported by okhttp counts, and wins its registration', async () => {
    const r = await t.request('POST', '/app', {
      headers: { 'user-agent': 'okhttp/4.12.0' },
      body: {
        installation_id: 'inst-okhttp-1',
        platform: 'android',
        attribution: { affiliate: 'DEMOPARTNER' },
      },
    })
    expect(r.status).toBe(200)
    const won = await register({ body: { installation_id: 'inst-okhttp-1' } })
    expect(won?.won_by).toBe('install')
  })

  test('old touches are pruned and their clicks rolled up: the funnel counts the same', async () => {
    const partner = await t.request('POST', '/api/affiliate/login', {
      host: CABINET,
      headers: { origin: `http://${CABINET}` },
      body: { login: 'demopartner', password: 'partner-pass-1' },
    })
    // the code in any case signs in (codes are shown upper case)
    expect(partner.status).toBe(200)
    const cookie = /tcs_aff=[^;]+/.exec(partner.headers.get('set-cookie') ?? '')![0]
    const YEAR = 'range=custom&from=2026-01-01&to=2026-11-30'
    const funnel = async () =>
      (await t.request('GET', `/api/affiliate/dashboard?${YEAR}`, { host: CABINET, headers: { cookie } }))
        .json.funnel
    const before = await funnel()
    expect(before.clicks).toBeGreaterThan(0)
    clock.advance(200 * 86_400_000)
    // keep the session alive across the jump: a fresh one
    const again = await t.request('POST', '/api/affiliate/login', {
      host: CABINET,
      headers: { origin: `http://${CABINET}` },
      body: { login: 'DEMOPARTNER', password: 'partner-pass-1' },
    })
    const cookie2 = /tcs_aff=[^;]+/.exec(again.headers.get('set-cookie') ?? '')![0]
    await t.runJob('attribution.touches-retention')
    expect((await t.ctx.db.select().from(clickDays)).length).toBeGreaterThan(0)
    const after = (
      await t.request('GET', `/api/affiliate/dashboard?${YEAR}`, {
        host: CABINET,
        headers: { cookie: cookie2 },
      })
    ).json.funnel
    expect([after.clicks, after.unique_clicks]).toEqual([before.clicks, before.unique_clicks])
    // a cursor that is not one is refused, not read as the first page
    const bad = await t.request('GET', '/api/affiliate/clicks?range=ytd&cursor=garbage', {
      host: CABINET,
      headers: { cookie: cookie2 },
    })
    expect([bad.status, bad.json.error]).toEqual([400, 'INVALID_DATA'])
  })
})

describe('postbacks carry what the tracker matches by', () => {
  test('macros fill the URL; the body carries the tracking values', async () => {
    const body = JSON.stringify({
      type: 'conversion',
      conversion: {
        id: 7,
        kind: 'first_deposit',
        value: 250,
        currency: 'USD',
        tracking: { click_id: 'c 1', sub2: 'x' },
      },
    })
    expect(
      expandPostbackUrl('https://t.example/pb/{event}?cid={click_id}&s2={sub2}&s3={sub3}&v={value}', body),
    ).toBe('https://t.example/pb/first_deposit?cid=c%201&s2=x&s3=&v=250')
    // the demo's referred customers: their rows in the cabinet carry the click id and sub-id
    const partner = await t.request('POST', '/api/affiliate/login', {
      host: CABINET,
      headers: { origin: `http://${CABINET}` },
      body: { login: 'partner@example.com', password: 'partner-pass-1' },
    })
    const cookie = /tcs_aff=[^;]+/.exec(partner.headers.get('set-cookie') ?? '')![0]
    const rows = (
      await t.request(
        'GET',
        '/api/affiliate/conversions?range=custom&from=2026-01-01&to=2026-11-30&kind=registration',
        {
          host: CABINET,
          headers: { cookie },
        },
      )
    ).json.rows
    expect(rows.length).toBeGreaterThan(0)
    const demo = rows.filter((r: { tracking: Record<string, string> }) => r.tracking.sub1 === 'spring')
    expect(demo.length).toBe(6)
    for (const r of demo) expect(r.tracking.click_id).toMatch(/^demo-click-\d$/)
  })

  test('internal addresses, however written', () => {
    for (const ip of [
      '169.254.169.254',
      '10.0.0.1',
      '0.0.0.0',
      '127.0.0.1',
      '::1',
      '::ffff:10.0.0.1',
      'fe80::1',
      'fd00::1',
      '100.64.0.1',
    ])
      expect(isInternalAddress(ip), ip).toBe(true)
    for (const ip of ['93.184.216.34', '2606:2800:220:1::1', '8.8.8.8'])
      expect(isInternalAddress(ip), ip).toBe(false)
    for (const h of ['metadata.google.internal', 'localhost', 'a.localhost', 'svc.internal'])
      expect(isInternalHost(h), h).toBe(true)
    expect(isInternalHost('tracker.example.com')).toBe(false)
  })

  test('the 1.25.244 repair posts a first deposit corrected without a postback, and stamps it', async () => {
    const [row] = (await t.ctx.db.all(
      sql`select id, affiliate_id, reference_id, updated_at from affiliate_conversions where kind = 'first_deposit' limit 1`,
    )) as { id: number; affiliate_id: number; reference_id: string; updated_at: number }[]
    expect(row).toBeDefined()
    // as the migration left it: a postback that named another deposit, the row corrected silently
    await t.ctx.db.run(
      sql`update affiliates set postback_url = 'https://postbacks.example.com/pb' where id = ${row!.affiliate_id}`,
    )
    await t.ctx.db.insert(postbacks).values({
      brandId: 1,
      affiliateId: row!.affiliate_id,
      conversionId: row!.id,
      body: JSON.stringify({ type: 'conversion', conversion: { reference_id: 'the-last-deposit' } }),
      status: 'sent',
      nextAt: 0,
      createdAt: 0,
    })
    await t.runJob('affiliate.first-deposit-repair')
    const sent = await t.ctx.db.select().from(postbacks).where(eq(postbacks.conversionId, row!.id))
    expect(sent.map((p) => JSON.parse(p.body).conversion.reference_id).at(-1)).toBe(row!.reference_id)
    const [after] = (await t.ctx.db.all(
      sql`select updated_at from affiliate_conversions where id = ${row!.id}`,
    )) as { updated_at: number }[]
    expect(after!.updated_at).toBeGreaterThan(row!.updated_at)
    // once: a second run posts nothing more
    await t.runJob('affiliate.first-deposit-repair')
    expect(await t.ctx.db.select().from(postbacks).where(eq(postbacks.conversionId, row!.id))).toHaveLength(
      sent.length,
    )
  })
})

describe('the cabinet sign-in (a hostile probe, twenty-third session)', () => {
  const signIn = (password: string) =>
    t.request('POST', '/api/affiliate/login', {
      host: CABINET,
      body: { login: 'BETAPARTNER', password },
      headers: { origin: `http://${CABINET}` },
    })
  // a token of now: the tests before moved the clock past the last one's life
  const access = async (body: Record<string, unknown>) =>
    t.request('PUT', '/manager/affiliates/access/BETAPARTNER', { token: await t.staffToken(), body })

  test('an access revoked before it had a password is granted again only with one, and never signs in without', async () => {
    // no access to Demo yet (a test above gave it one), then revoked first: the row exists, without a password
    await t.ctx.db.run(
      sql`delete from affiliate_access where affiliate_id = (select id from affiliates where code = 'BETAPARTNER') and brand_id = 1`,
    )
    expect((await access({ status: 'revoked' })).status).toBe(200)
    const granted = await access({ status: 'active' })
    expect([granted.status, granted.json.error, granted.json.message]).toEqual([
      400,
      'INVALID_DATA',
      'password: required when access is granted',
    ])
    // an active access without a stored password, however it came to be: nothing signs in with it
    await t.ctx.db.run(
      sql`update affiliate_access set status = 'active' where affiliate_id = (select id from affiliates where code = 'BETAPARTNER') and brand_id = 1`,
    )
    for (const password of ['not-a-real-password', 'wrong-pass-1'])
      expect((await signIn(password)).status).toBe(401)
    expect((await access({ status: 'active', password: 'beta-cabinet-1' })).status).toBe(200)
    expect((await signIn('beta-cabinet-1')).status).toBe(200)
  })
})

describe('attribution (a hostile probe)', () => {
  const clicksToday = async () => {
    const login = await t.request('POST', '/api/affiliate/login', {
      host: CABINET,
      headers: { origin: `http://${CABINET}` },
      body: { login: 'DEMOPARTNER', password: 'partner-pass-1' },
    })
    const cookie = /tcs_aff=[^;]+/.exec(login.headers.get('set-cookie') ?? '')![0]
    await flush()
    const r = await t.request('GET', '/api/affiliate/dashboard?range=today', {
      host: CABINET,
      headers: { cookie },
    })
    return [r.json.funnel.clicks, r.json.funnel.unique_clicks] as [number, number]
  }
  const install = (installation_id: string, ua: string) =>
    t.request('POST', '/app', {
      headers: { 'user-agent': ua },
      body: { installation_id, platform: 'android', attribution: { affiliate: 'DEMOPARTNER' } },
    })

  test('a registration body and an app install are not clicks; a page opened with the code is', async () => {
    const before = await clicksToday()
    expect((await install('inst-not-a-click', 'okhttp/4.12.0')).status).toBe(200)
    await register({ body: { attribution: { affiliate: 'DEMOPARTNER', sub1: 'body' } } })
    expect(await clicksToday()).toEqual(before)
    await get('/?affiliate=DEMOPARTNER')
    expect(await clicksToday()).toEqual([before[0] + 1, before[1] + 1])
  })

  test('a registration refused for its taken email leaves no decision and no touch', async () => {
    const email = `taken-${++n}@example.com`
    const once = (sub1: string) =>
      t.request('POST', '/customer/register', {
        headers: { 'user-agent': BROWSER },
        body: {
          email,
          password: 'find-pass-1',
          name: 'Taken',
          attribution: { affiliate: 'DEMOPARTNER', sub1 },
        },
      })
    expect((await once('first')).status).toBe(200)
    const count = async () =>
      (
        (await t.ctx.db.all(
          sql`select (select count(*) from attribution_decisions) as d, (select count(*) from attribution_touches) as t`,
        )) as { d: number; t: number }[]
      )[0]
    const before = await count()
    const again = await once('second')
    expect(again.status).toBe(200) // the same answer: no enumeration
    expect(await count()).toEqual(before)
    const second = await t.ctx.db.all(sql`select id from attribution_touches where params like '%"second"%'`)
    expect(second).toEqual([])
  })

  test("a crawler's install does not swallow the body's values; an install past the window does not win", async () => {
    expect((await install('inst-crawler', 'Googlebot/2.1 (+http://www.google.com/bot.html)')).status).toBe(
      200,
    )
    const body = await register({
      body: { installation_id: 'inst-crawler', attribution: { affiliate: 'DEMOPARTNER', sub1: 'landing' } },
    })
    expect(body).toMatchObject({
      won_by: 'registration_body',
      affiliate_code: 'DEMOPARTNER',
      sub1: 'landing',
    })
    expect((await install('inst-old', 'okhttp/4.12.0')).status).toBe(200)
    clock.advance(31 * 86_400_000)
    expect((await register({ body: { installation_id: 'inst-old' } }))?.won_by ?? 'none').toBe('none')
  })

  test('an affiliate code in any case attributes (codes are one in any case)', async () => {
    const vid = vidOf(await get('/?affiliate=demopartner&sub1=lower'))
    const won = await register({ vid })
    expect(won).toMatchObject({ won_by: 'last_touch', sub1: 'lower' })
    expect(Number(won?.affiliate_id)).toBeGreaterThan(0)
  })

  test('of two codes made differing by case only (before codes were one in any case), the exact one wins', async () => {
    const now = clock.now()
    for (const code of ['CaseTwin', 'CASETWIN'])
      await t.ctx.db.run(
        sql`insert into affiliates (brand_id, email, code, created_at) values (1, ${`${code}@twins.example`}, ${code}, ${now})`,
      )
    await t.ctx.db.run(
      sql`insert into affiliate_access (affiliate_id, brand_id, created_at)
          select id, 1, ${now} from affiliates where email like '%@twins.example'`,
    )
    const ids = (await t.ctx.db.all(
      sql`select id, code from affiliates where email like '%@twins.example' order by id`,
    )) as { id: number; code: string }[]
    const winner = async (code: string) =>
      Number((await register({ vid: vidOf(await get(`/?affiliate=${code}`)) }))?.affiliate_id)
    expect(await winner('CASETWIN')).toBe(ids[1]!.id)
    expect(await winner('CaseTwin')).toBe(ids[0]!.id)
    expect(await winner('casetwin')).toBe(ids[0]!.id)
  })
})
