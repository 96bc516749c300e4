// What a hostile probe of attribution and the affiliate cabinet found (issue 43's twenty-first session):
// a tracking link that left the brand's host, unique clicks a reload inflated, a bot's registration that
// won (a crawler's: a broker's back end posting the body is no bot), a look-alike affiliate code, dates that rolled over, a circle of recruiters, a lock window per name
// of an affiliate, and a postback address check that let an unanswered name through.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { RedisStore } from '../../src/kernel/cache/redis'
import { ResilientStore } from '../../src/kernel/cache/resilient'
import { ManualClock } from '../../src/kernel/clock'
import { silentLogger } from '../../src/kernel/logger'
import { customers } from '../../src/modules/accounts/schema'
import type { AffiliateCtx } from '../../src/modules/affiliate/context'
import { landingPathOrNull } from '../../src/modules/affiliate/domain/hosts'
import { internalTarget } from '../../src/modules/affiliate/service/egress'
import { AttributionPort } from '../../src/modules/attribution'
import { touches } from '../../src/modules/attribution/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { startRedis } from '../support/redis'

const clock = new ManualClock(Date.UTC(2026, 10, 24, 9, 0, 0))
const BROWSER =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36'
const CAB = 'affiliates.localhost'
let t: TestApp
let staff: string

const asStaff = (method: string, path: string, body?: unknown) =>
  t.request(method, path, { token: staff, body })
const get = (path: string, o: { vid?: string; ip?: string } = {}) =>
  t.request('GET', path, {
    headers: {
      'user-agent': BROWSER,
      ...(o.vid ? { cookie: `tcs_vid=${o.vid}` } : {}),
      ...(o.ip ? { 'x-forwarded-for': o.ip } : {}),
    },
  })
const vidOf = (r: { headers: Headers }) =>
  /tcs_vid=([^;]+)/.exec(r.headers.get('set-cookie') ?? '')?.[1] ?? ''
const flush = () => t.ports.get(AttributionPort).flushTouches()
const login = (login: string, password: string) =>
  t.request('POST', '/api/affiliate/login', {
    host: CAB,
    body: { login, password },
    headers: { origin: `http://${CAB}` },
  })

beforeAll(async () => {
  t = await makeTestApp({ clock, env: { TRUST_PROXY: 'true' } })
  staff = await t.staffToken()
})
afterAll(() => t.close())

describe('tracking links', () => {
  test('a landing path whose dot segments make it `//host` is refused, and never redirects off the host', async () => {
    for (const bad of [
      '/.//evil.example',
      '/..//evil.example',
      '/a/..//evil.example',
      '/%2e//evil.example',
    ]) {
      expect(landingPathOrNull(bad)).toBeNull()
      const r = await asStaff('POST', '/manager/affiliate-links', {
        affiliate_id: 1,
        code: `redir-${bad.length}-${bad.charCodeAt(2)}`,
        landing_path: bad,
      })
      expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
    }
    // a link saved before the check (written here as such) redirects to the brand's root
    const ok = await asStaff('POST', '/manager/affiliate-links', {
      affiliate_id: 1,
      code: 'redir-old',
      landing_path: '/p/promo',
    })
    expect(ok.status).toBe(200)
    await t.ctx.db.run(`update affiliate_links set landing_path = '//evil.example' where code = 'redir-old'`)
    const r = await get('/go/redir-old')
    expect(r.status).toBe(302)
    expect(r.headers.get('location')).toBe('/')
  })
})

describe('unique clicks', () => {
  test("a landing page reloaded with an affiliate's code is one unique click, however often", async () => {
    const vid = vidOf(await get('/?affiliate=DEMOPARTNER'))
    for (let i = 0; i < 4; i++) await get('/?affiliate=DEMOPARTNER', { vid })
    await flush()
    const rows = await t.ctx.db.select().from(touches).where(eq(touches.visitorId, vid))
    expect(rows.map((r) => r.uniqueClick)).toEqual([1, 0, 0, 0, 0])
  })

  test('a client that drops the cookie is counted once per link and hour by its address and browser', async () => {
    const seen: string[] = []
    for (let i = 0; i < 4; i++) seen.push(vidOf(await get('/go/demo-home', { ip: '192.0.2.44' })))
    expect(new Set(seen).size).toBe(4)
    await flush()
    const unique = []
    for (const vid of seen) {
      const [row] = await t.ctx.db.select().from(touches).where(eq(touches.visitorId, vid))
      unique.push(row!.uniqueClick)
    }
    expect(unique).toEqual([1, 0, 0, 0])
    // another address is another visitor
    const other = vidOf(await get('/go/demo-home', { ip: '192.0.2.45' }))
    await flush()
    const [row] = await t.ctx.db.select().from(touches).where(eq(touches.visitorId, other))
    expect(row!.uniqueClick).toBe(1)
  })
})

describe('unique clicks with the shared cache away', () => {
  test('a click while Redis is down counts as unique (a repeat may count twice; a visitor is never lost)', async () => {
    const redis = await startRedis()
    const store = new ResilientStore(new RedisStore(redis.url, 300), silentLogger, 200)
    const own = await makeTestApp({ store, env: { TRUST_PROXY: 'true' } })
    try {
      const click = async (ip: string) => {
        const r = await own.request('GET', '/go/demo-home', {
          headers: { 'user-agent': BROWSER, 'x-forwarded-for': ip },
        })
        expect(r.status).toBe(302)
        await own.ports.get(AttributionPort).flushTouches()
        const vid = vidOf(r)
        return (await own.ctx.db.select().from(touches).where(eq(touches.visitorId, vid)))[0]!.uniqueClick
      }
      expect(await click('192.0.2.60')).toBe(1)
      expect(await click('192.0.2.60')).toBe(0)
      await redis.stop()
      // first clicks of two new visitors, and the page of one of them, with nobody to ask
      expect(await click('192.0.2.61')).toBe(1)
      expect(await click('192.0.2.62')).toBe(1)
      const page = await own.request('GET', '/?affiliate=DEMOPARTNER', {
        headers: { 'user-agent': BROWSER, 'x-forwarded-for': '192.0.2.63' },
      })
      await own.ports.get(AttributionPort).flushTouches()
      const [row] = await own.ctx.db
        .select()
        .from(touches)
        .where(eq(touches.visitorId, vidOf(page)))
      expect(row!.uniqueClick).toBe(1)
    } finally {
      await own.close()
      await redis.stop()
    }
  })
})

describe('registration', () => {
  test("a crawler's registration carrying an affiliate code wins nothing; the broker's back end's does", async () => {
    const attributionOf = async (email: string, ua: string) => {
      const r = await t.request('POST', '/customer/register', {
        headers: { 'user-agent': ua },
        body: { email, password: 'bot-pass-1', name: 'Bot', attribution: { affiliate: 'DEMOPARTNER' } },
      })
      expect(r.status).toBe(200)
      const [c] = await t.ctx.db.select().from(customers).where(eq(customers.email, email))
      return c!.attribution ? (JSON.parse(c!.attribution) as Record<string, unknown>) : null
    }
    const crawled = await attributionOf(
      'crawler-reg@example.com',
      'Googlebot/2.1 (+http://www.google.com/bot.html)',
    )
    expect(crawled?.won_by ?? 'none').toBe('none')
    const proxied = await attributionOf('backend-reg@example.com', 'node-fetch/1.0')
    expect(proxied?.won_by).toBe('registration_body')
  })
})

describe('affiliates', () => {
  test('a code that differs from another only in case is refused (the cabinet signs in by code in any case)', async () => {
    const r = await asStaff('POST', '/manager/affiliates', {
      email: 'lookalike@example.com',
      code: 'demopartner',
      password: 'lookalike-pass-1',
    })
    expect([r.status, r.json.error]).toEqual([409, 'AFFILIATE_EXISTS'])
  })

  test('two affiliates cannot recruit each other, directly or through a third', async () => {
    const ids: number[] = []
    for (const code of ['CIRCLEA', 'CIRCLEB', 'CIRCLEC']) {
      const r = await asStaff('POST', '/manager/affiliates', {
        email: `${code.toLowerCase()}@example.com`,
        code,
        password: 'circle-pass-1',
      })
      expect(r.status).toBe(200)
      ids.push(r.json.id)
    }
    const [a, b, c] = ids as [number, number, number]
    expect((await asStaff('PUT', `/manager/affiliates/${b}/recruiter`, { recruiter_id: a })).status).toBe(200)
    expect((await asStaff('PUT', `/manager/affiliates/${c}/recruiter`, { recruiter_id: b })).status).toBe(200)
    for (const [who, by] of [
      [a, b],
      [a, c],
    ]) {
      const r = await asStaff('PUT', `/manager/affiliates/${who}/recruiter`, { recruiter_id: by })
      expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
    }
    // moving one out of the chain is allowed, and then so is what it blocked
    expect((await asStaff('PUT', `/manager/affiliates/${c}/recruiter`, { recruiter_id: null })).status).toBe(
      200,
    )
    expect((await asStaff('PUT', `/manager/affiliates/${a}/recruiter`, { recruiter_id: c })).status).toBe(200)
  })

  test('wrong passwords count against the affiliate, by its email and its code alike', async () => {
    const r = await asStaff('POST', '/manager/affiliates', {
      email: 'twonames@example.com',
      code: 'TWONAMES',
      password: 'two-names-pass-1',
    })
    expect(r.status).toBe(200)
    for (let i = 0; i < 5; i++) expect((await login('TWONAMES', 'wrong-pass-1')).status).toBe(401)
    for (let i = 0; i < 5; i++) expect((await login('twonames@example.com', 'wrong-pass-1')).status).toBe(401)
    expect((await login('TwoNames', 'wrong-pass-1')).json.error).toBe('TOO_MANY_ATTEMPTS')
    expect((await login('twonames@example.com', 'two-names-pass-1')).json.error).toBe('TOO_MANY_ATTEMPTS')
  })
})

describe('integration API', () => {
  test('a date that does not exist is refused, not rolled over into the next month', async () => {
    const issued = await asStaff('POST', '/manager/affiliates/1/tokens', {
      scopes: ['customers:read'],
      expires_in_days: 30,
    })
    expect(issued.status).toBe(200)
    const api = (q: string) =>
      t.request('GET', `/api/affiliate/v1/customers?${q}`, { host: CAB, token: issued.json.token })
    expect((await api('from=2026-02-28')).status).toBe(200)
    for (const q of ['from=2026-02-30', 'from=2026-11-31', 'to=2026-02-31']) {
      const r = await api(q)
      expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
      expect(r.json.message).toContain(q.slice(0, q.indexOf('=')))
    }
    // a range that ends before it starts is refused as the cabinet refuses it, not answered empty
    const reversed = await api('from=2026-11-10&to=2026-11-01')
    expect([reversed.status, reversed.json.error, reversed.json.message]).toEqual([
      400,
      'INVALID_DATA',
      'to: on or after from',
    ])
    expect((await api('from=2026-11-01&to=2026-11-01')).status).toBe(200)
  })
})

describe('postbacks', () => {
  test('a name the check cannot resolve is refused at a send (the send would resolve it again), allowed when saved', async () => {
    const ctx = { allowPrivatePostbacks: false } as AffiliateCtx
    const host = 'no-such-name.invalid'
    expect(await internalTarget(ctx, host, 'allowed')).toBeNull()
    expect(await internalTarget(ctx, host, 'refused')).toContain('could not be checked')
  })
})
