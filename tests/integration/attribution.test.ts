// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Marketing attribution (issue 30): touches per brand from the landing pages and tracking links, the
// window and precedence of a registration's attribution, installs, bots, click dedupe, no open redirect.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { ManualClock } from '../../src/kernel/clock'
import { customers } from '../../src/modules/accounts/schema'
import { AttributionPort } from '../../src/modules/attribution'
import { touches } from '../../src/modules/attribution/schema'
import { makeTestApp, type TestApp } from '../support/app'

const clock = new ManualClock(Date.UTC(2026, 10, 24, 9, 0, 0))
const BROWSER =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36'
const DAY = 86_400_000
let t: TestApp
let staff: string
let n = 0

const visit = (
  path: string,
  o: { vid?: string; host?: string; ua?: string; referer?: string; ip?: string } = {},
) =>
  t.request('GET', path, {
    host: o.host,
    headers: {
      'user-agent': o.ua ?? BROWSER,
      ...(o.vid ? { cookie: `tcs_vid=${o.vid}` } : {}),
      ...(o.referer ? { referer: o.referer } : {}),
      ...(o.ip ? { 'x-forwarded-for': o.ip } : {}),
    },
  })
// landing hits hand their touches to a buffer written every 20 ms: read after writing it
const touchesOf = async (vid: string) => {
  await t.ports.get(AttributionPort).flushTouches()
  return t.ctx.db.select().from(touches).where(eq(touches.visitorId, vid))
}
const vidOf = (r: { headers: Headers }) =>
  /tcs_vid=([^;]+)/.exec(r.headers.get('set-cookie') ?? '')?.[1] ?? ''

async function register(o: { vid?: string; host?: string; body?: Record<string, unknown> } = {}) {
  const email = `attr-${++n}@example.com`
  const r = await t.request('POST', '/customer/register', {
    host: o.host,
    headers: { 'user-agent': BROWSER, ...(o.vid ? { cookie: `tcs_vid=${o.vid}` } : {}) },
    body: { email, password: 'attr-pass-1', name: 'Attr', ...o.body },
  })
  expect(r.status).toBe(200)
  const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
  return { id: c.id, attribution: c.attribution ? JSON.parse(c.attribution) : null }
}
const decision = async (id: number) => {
  // the clock moves by days here: a fresh session each time
  const r = await t.request('GET', `/manager/customers/${id}/attribution`, { token: await t.staffToken() })
  expect(r.status).toBe(200)
  return r.json
}

beforeAll(async () => {
  t = await makeTestApp({ clock, env: { TRUST_PROXY: 'true' } })
  staff = await t.staffToken()
})
afterAll(() => t.close())

describe('touches', () => {
  test('a landing page with values records a touch of the brand and sets the visitor cookie', async () => {
    const r = await visit('/?affiliate=DEMOPARTNER&utm_source=news&sub1=a1&click_id=c-9', {
      referer: 'https://search.example/q',
    })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toContain('text/html')
    expect(r.text).toContain('<html')
    // nothing runs there and nothing loads from elsewhere (the policy is the page's first tag)
    expect(r.text).toMatch(/<head>\s*<meta http-equiv="Content-Security-Policy" content="default-src 'none'/)
    expect(r.headers.get('x-content-type-options')).toBe('nosniff')
    expect(r.headers.get('cache-control')).toBe('private, no-store')
    const cookie = r.headers.get('set-cookie')!
    expect(cookie).toContain('HttpOnly')
    expect(cookie).toContain('SameSite=Lax')
    expect(cookie).not.toContain('Secure') // not production
    const [touch] = await touchesOf(vidOf(r))
    expect(touch.brandId).toBe(1)
    expect(touch.affiliateId).toBeGreaterThan(0)
    expect(JSON.parse(touch.params)).toEqual({
      affiliate: 'DEMOPARTNER',
      utm_source: 'news',
      sub1: 'a1',
      click_id: 'c-9',
    })
    expect(touch.landingPath).toBe('/')
    expect(touch.referrer).toBe('https://search.example/q')
    expect(touch.ipHash).not.toBe('')
    expect(touch.ipHash).not.toContain('unknown') // a keyed hash, never the address
  })

  test('an unknown code, an over-long value and junk are recorded unattributed, never an error', async () => {
    const long = 'x'.repeat(500)
    const r = await visit(`/?affiliate=NOPE&campaign=${long}&utm_medium=cpc&whatever=1`)
    expect(r.status).toBe(200)
    const [touch] = await touchesOf(vidOf(r))
    expect(touch.affiliateId).toBeNull()
    expect(JSON.parse(touch.params)).toEqual({ affiliate: 'NOPE', utm_medium: 'cpc' })
  })

  test('a plain visit records nothing; a page that does not exist is 404', async () => {
    const r = await visit('/p/promo')
    expect(r.status).toBe(200)
    expect(await touchesOf(vidOf(r))).toHaveLength(0)
    expect((await visit('/p/no-such-page')).status).toBe(404)
    expect((await visit('/p/..%2F..%2Fpackage')).status).toBe(400)
  })

  test('bots are recorded as such and never win', async () => {
    const r = await visit('/?affiliate=DEMOPARTNER', { ua: 'Mozilla/5.0 (compatible; Googlebot/2.1)' })
    const [touch] = await touchesOf(vidOf(r))
    expect(touch.bot).toBe(1)
    const c = await register({ vid: vidOf(r) })
    expect(c.attribution).toBeNull()
  })
})

describe('tracking links', () => {
  test('a click redirects to the landing path on the same host; unique once per visitor and hour, every click a touch', async () => {
    const r = await visit('/go/demo-spring?sub2=s2', { ip: '203.0.113.7' })
    expect(r.status).toBe(302)
    expect(r.headers.get('location')).toBe('/p/promo')
    const vid = vidOf(r)
    const again = await visit('/go/demo-spring?sub2=s2', { vid, ip: '203.0.113.7' })
    expect(again.status).toBe(302)
    let rows = await touchesOf(vid)
    expect(rows.map((x) => [x.source, x.uniqueClick])).toEqual([
      ['click', 1],
      ['click', 0],
    ])
    expect(rows[0].linkId).toBeGreaterThan(0)
    expect(JSON.parse(rows[0].params)).toMatchObject({ link: 'demo-spring', campaign: 'spring', sub2: 's2' })
    clock.advance(3_600_001)
    await visit('/go/demo-spring', { vid, ip: '203.0.113.7' })
    rows = await touchesOf(vid)
    expect(rows.map((x) => x.uniqueClick)).toEqual([1, 0, 1])
  })

  test('an unknown or inactive link goes to / and is recorded unattributed', async () => {
    for (const code of ['nope', 'https:%2F%2Fevil.example', '%2F%2Fevil.example']) {
      const r = await visit(`/go/${code}`)
      expect(r.status).toBe(302)
      expect(r.headers.get('location')).toBe('/')
      const [touch] = await touchesOf(vidOf(r))
      expect(touch.linkId).toBeNull()
      expect(touch.affiliateId).toBeNull()
    }
  })

  test('a link cannot be given a landing page on another host', async () => {
    for (const landing_path of [
      '//evil.example/x',
      'https://evil.example',
      '/\\evil.example',
      'evil',
      '/ok path',
    ])
      expect(
        (
          await t.request('POST', '/manager/affiliate-links', {
            token: staff,
            body: { affiliate_id: 1, code: `x${++n}`, landing_path },
          })
        ).json.error,
      ).toBe('INVALID_DATA')
    const ok = await t.request('POST', '/manager/affiliate-links', {
      token: staff,
      body: { affiliate_id: 1, code: 'promo-2', landing_path: '/p/promo?x=1' },
    })
    expect(ok.status).toBe(200)
    expect((await visit('/go/promo-2')).headers.get('location')).toBe('/p/promo?x=1')
    const off = await t.request('PATCH', `/manager/affiliate-links/${ok.json.id}`, {
      token: staff,
      body: { active: false },
    })
    expect(off.json.active).toBe(false)
    expect((await visit('/go/promo-2')).headers.get('location')).toBe('/')
  })
})

describe('registration', () => {
  test('takes the latest touch with values of the visitor; staff see the touch, the ones considered and the rule', async () => {
    const first = await visit('/?affiliate=DEMOPARTNER&utm_source=first')
    const vid = vidOf(first)
    clock.advance(DAY)
    await visit('/?link=demo-home&utm_source=second', { vid })
    clock.advance(DAY)
    await visit('/p/promo', { vid, referer: 'https://news.example/' }) // a later direct visit
    const c = await register({ vid })
    expect(c.attribution).toMatchObject({
      link_code: 'demo-home',
      utm_source: 'second',
      won_by: 'last_touch',
    })
    expect(Number(c.attribution.affiliate_id)).toBeGreaterThan(0)
    expect(Number(c.attribution.link_id)).toBeGreaterThan(0)
    const d = await decision(c.id)
    expect(d.won_by).toBe('last_touch')
    expect(d.touch.values).toEqual({ link: 'demo-home', utm_source: 'second' })
    expect(d.considered).toHaveLength(3)
    expect(d.considered.filter((x: { direct: boolean }) => x.direct)).toHaveLength(1)
  })

  test('a direct visit alone wins only as last_direct; outside the window nothing wins', async () => {
    const r = await visit('/', { referer: 'https://blog.example/post' })
    const c = await register({ vid: vidOf(r) })
    expect(c.attribution).toMatchObject({ won_by: 'last_direct' })
    expect(c.attribution.affiliate_id).toBeUndefined()
    const old = await visit('/?affiliate=DEMOPARTNER')
    clock.advance(31 * DAY)
    const late = await register({ vid: vidOf(old) })
    expect(late.attribution).toBeNull()
    expect((await decision(late.id)).won_by).toBe('none')
  })

  test('body values of an external landing page win over the cookie touch, and are a touch of their own', async () => {
    const r = await visit('/?affiliate=DEMOPARTNER')
    const c = await register({ vid: vidOf(r), body: { attribution: { link: 'demo-spring', sub3: 'lp' } } })
    expect(c.attribution).toMatchObject({ link_code: 'demo-spring', sub3: 'lp', won_by: 'registration_body' })
    const d = await decision(c.id)
    expect(d.touch.source).toBe('registration')
    expect(d.considered).toHaveLength(2)
  })

  test('a touch on one brand never attributes a customer of another', async () => {
    const r = await visit('/?affiliate=DEMOPARTNER')
    const beta = await register({ vid: vidOf(r), host: 'beta.localhost' })
    expect(beta.attribution).toBeNull()
    // the Demo affiliate's code on Beta's page: it has no access there, so the touch is unattributed
    const b = await visit('/?affiliate=DEMOPARTNER', { host: 'beta.localhost' })
    const [touch] = await touchesOf(vidOf(b))
    expect(touch.brandId).not.toBe(1)
    expect(touch.affiliateId).toBeNull()
  })
})

describe('installs', () => {
  test('an install attributes the registration made with its installation_id; replays change nothing', async () => {
    const body = {
      installation_id: 'ios-test-install-0001',
      platform: 'ios',
      referrer: 'utm_source=store&affiliate=DEMOPARTNER',
    }
    const a = await t.request('POST', '/app', { body, headers: { 'user-agent': BROWSER } })
    expect(a.status).toBe(200)
    expect(a.json).toMatchObject({ attributed: true, activated_time: 0 })
    const replay = await t.request('POST', '/app', { body: { ...body, referrer: 'affiliate=OTHER' } })
    expect(replay.json).toEqual(a.json)
    const act = await t.request('POST', '/app/activate', { body: { installation_id: body.installation_id } })
    expect(act.json.activated_time).toBeGreaterThan(0)
    clock.advance(5_000)
    const again = await t.request('POST', '/app/activate', {
      body: { installation_id: body.installation_id },
    })
    expect(again.json.activated_time).toBe(act.json.activated_time)
    expect(
      (await t.request('POST', '/app/activate', { body: { installation_id: 'never-installed-1' } })).json
        .error,
    ).toBe('INSTALL_NOT_FOUND')
    // the install beats a cookie touch and the body
    const r = await visit('/?link=demo-home')
    const c = await register({
      vid: vidOf(r),
      body: { installation_id: body.installation_id, attribution: { campaign: 'x' } },
    })
    expect(c.attribution).toMatchObject({
      won_by: 'install',
      utm_source: 'store',
      affiliate_code: 'DEMOPARTNER',
      installation_id: body.installation_id,
    })
    // the install of another brand does not exist here
    const beta = await register({ host: 'beta.localhost', body: { installation_id: body.installation_id } })
    expect(beta.attribution).toBeNull()
  })

  test('bad install bodies are 400 naming the field', async () => {
    const r = await t.request('POST', '/app', { body: { installation_id: 'short', platform: 'ios' } })
    expect(r.status).toBe(400)
    expect(r.json.message).toContain('installation_id')
    expect(
      (await t.request('POST', '/app', { body: { installation_id: 'long-enough-id', platform: 'symbian' } }))
        .json.message,
    ).toContain('platform')
  })
})

describe('brand settings', () => {
  test('affiliate_host takes a bare hostname only', async () => {
    const staff = await t.staffToken()
    for (const h of [
      'https://partners.localhost',
      'partners.localhost:8080',
      'partners.localhost/x',
      'bad host',
      '',
    ])
      expect(
        (await t.request('PUT', '/manager/affiliate-settings', { token: staff, body: { affiliate_host: h } }))
          .status,
      ).toBe(400)
    expect(
      (
        await t.request('PUT', '/manager/affiliate-settings', {
          token: staff,
          body: { affiliate_host: 'beta.localhost' },
        })
      ).json.error,
    ).toBe('HOST_TAKEN')
    const ok = await t.request('PUT', '/manager/affiliate-settings', {
      token: staff,
      body: { affiliate_host: 'Partners.Localhost' },
    })
    expect(ok.json.affiliate_host).toBe('partners.localhost')
  })
})
