// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// The affiliate cabinet's API and the integration API (issue 32): served only on the brand's affiliate
// host, its own tokens and nobody else's, ranges, the funnel equal to the rows behind it, brand isolation,
// every check of spec 5.5 failing on its own, cursor pages over 10,000 rows with inserts meanwhile.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SignJWT } from 'jose'
import { ManualClock } from '../../src/kernel/clock'
import { conversions } from '../../src/modules/affiliate/schema'
import { makeTestApp, type TestApp } from '../support/app'

const clock = new ManualClock(Date.now())
const CAB = 'affiliates.localhost'
const BETA_CAB = 'affiliates.beta.localhost'
const ORIGIN = { origin: `http://${CAB}` }
let t: TestApp
let staff: string
let session: string

async function login(login: string, password: string, host = CAB) {
  return t.request('POST', '/api/affiliate/login', {
    host,
    body: { login, password },
    headers: { origin: `http://${host}` },
  })
}
const cookieOf = (r: { headers: Headers }) =>
  /tcs_aff=([^;]*)/.exec(r.headers.get('set-cookie') ?? '')?.[1] ?? ''
const cab = (path: string, token = session, host = CAB) =>
  t.request('GET', path, { host, headers: { cookie: `tcs_aff=${token}` } })
const api = (path: string, token: string, host = CAB) => t.request('GET', path, { host, token })
async function issue(body: Record<string, unknown> = {}, affiliate = 1) {
  const r = await t.request('POST', `/manager/affiliates/${affiliate}/tokens`, {
    token: staff,
    body: { scopes: ['customers:read', 'transactions:read'], expires_in_days: 30, ...body },
  })
  expect(r.status).toBe(200)
  return r.json as { id: string; token: string; prefix: string }
}
async function allPages(path: string, token: string, size = 1_500, during?: () => Promise<void>) {
  const ids: number[] = []
  let cursor: string | null = null
  for (;;) {
    const r = await api(
      `${path}${path.includes('?') ? '&' : '?'}page_size=${size}${cursor ? `&cursor=${cursor}` : ''}`,
      token,
    )
    expect(r.status).toBe(200)
    ids.push(...r.json.rows.map((x: { id: number }) => x.id))
    if (during) await during()
    if (!r.json.has_more) return ids
    cursor = r.json.next_cursor
  }
}

beforeAll(async () => {
  t = await makeTestApp({ clock, env: { AFFILIATE_API_RATE_PER_MINUTE: '60' } })
  staff = await t.staffToken()
  const r = await login('partner@example.com', 'partner-pass-1')
  expect(r.status).toBe(200)
  expect(r.headers.get('set-cookie')).toContain('HttpOnly')
  expect(r.headers.get('set-cookie')).toContain('SameSite=Strict')
  session = cookieOf(r)
})
afterAll(() => t.close())

describe('the cabinet is served on the affiliate host only', () => {
  test('pages and assets there, with a policy that allows nothing from elsewhere; 404 on the API host', async () => {
    for (const path of ['/', '/login', '/links', '/conversions']) {
      const r = await t.request('GET', path, { host: CAB })
      expect(r.status).toBe(200)
      expect(r.text).toContain('<script type="module" src="/bundle.js">')
      expect(r.headers.get('content-security-policy')).toContain("default-src 'none'")
      expect(r.headers.get('content-security-policy')).toContain("script-src 'self'")
    }
    for (const path of ['/bundle.js', '/bundle.css', '/assets/favicon.svg']) {
      const r = await t.request('GET', path, { host: CAB })
      expect(r.status).toBe(200)
      expect(r.headers.get('cache-control')).toContain('max-age')
    }
    for (const path of ['/login', '/links', '/conversions', '/bundle.js', '/api/affiliate/me'])
      expect((await t.request('GET', path)).status).toBe(404)
    // the API host's root stays the brand's landing page
    const landing = await t.request('GET', '/')
    expect(landing.status).toBe(200)
    expect(landing.text).toContain('<html')
    expect(landing.text).not.toContain('/bundle.js')
    // and the trading API is not served on the cabinet's host
    expect((await t.request('GET', '/account/me', { host: CAB })).json.error).toBe('BRAND_NOT_FOUND')
  })
})

describe('sign-in', () => {
  test('by email or code; wrong, unknown and suspended all answer the same 401; failures lock the login', async () => {
    expect((await login('DEMOPARTNER', 'partner-pass-1')).status).toBe(200)
    for (const [l, p] of [
      ['partner@example.com', 'wrong-pass-1'],
      ['nobody@example.com', 'partner-pass-1'],
      ['BETAPARTNER', 'beta-partner-pass-1'], // no access to this brand
    ])
      expect((await login(l, p)).json.error).toBe('INVALID_CREDENTIALS')
    const sus = await t.request('POST', '/manager/affiliates', {
      token: staff,
      body: { email: 'sus@example.com', code: 'SUSPARTNER', password: 'sus-pass-1' },
    })
    expect((await login('SUSPARTNER', 'sus-pass-1')).status).toBe(200)
    await t.request('PATCH', `/manager/affiliates/${sus.json.id}`, {
      token: staff,
      body: { status: 'suspended' },
    })
    expect((await login('SUSPARTNER', 'sus-pass-1')).json.error).toBe('INVALID_CREDENTIALS')
    for (let i = 0; i < 10; i++) await login('locked@example.com', 'wrong-pass-1')
    expect((await login('locked@example.com', 'wrong-pass-1')).json.error).toBe('TOO_MANY_ATTEMPTS')
  })

  test('a POST from another site is refused (CSRF); a cookie POST must carry its Origin', async () => {
    const r = await t.request('POST', '/api/affiliate/login', {
      host: CAB,
      body: { login: 'partner@example.com', password: 'partner-pass-1' },
      headers: { origin: 'https://evil.example' },
    })
    expect(r.json.error).toBe('CSRF_REJECTED')
    const out = await t.request('POST', '/api/affiliate/logout', {
      host: CAB,
      headers: { cookie: `tcs_aff=${session}` },
    })
    expect(out.json.error).toBe('CSRF_REJECTED')
    expect((await cab('/api/affiliate/me')).status).toBe(200)
  })

  test('behind a trusted proxy, Origin is compared with the forwarded host (the page the browser shows)', async () => {
    const proxied = await makeTestApp({ clock, env: { TRUST_PROXY: '1' } })
    try {
      const login = (origin: string) =>
        proxied.request('POST', '/api/affiliate/login', {
          host: '10.0.0.7:3000',
          body: { login: 'partner@example.com', password: 'partner-pass-1' },
          headers: { origin, 'x-forwarded-host': CAB },
        })
      expect((await login(`http://${CAB}`)).status).toBe(200)
      expect((await login('http://10.0.0.7:3000')).json.error).toBe('CSRF_REJECTED')
    } finally {
      await proxied.close()
    }
  })

  test('only its own tokens: manager, customer and account tokens are refused here, its tokens everywhere else', async () => {
    const customer = await t.customerToken()
    const account = await t.userToken()
    for (const other of [staff, customer, account]) {
      expect((await t.request('GET', '/api/affiliate/me', { host: CAB, token: other })).status).toBe(401)
      expect((await cab('/api/affiliate/me', other)).status).toBe(401)
    }
    expect((await t.request('GET', '/customer/me', { token: session })).status).toBe(401)
    expect((await t.request('GET', '/manager/affiliates', { token: session })).status).toBe(401)
    const apiToken = (await issue()).token
    expect((await cab('/api/affiliate/me', apiToken)).status).toBe(401)
    expect((await api('/api/affiliate/v1/customers', session)).status).toBe(401)
  })

  test('logout ends the session for good', async () => {
    const s = cookieOf(await login('partner@example.com', 'partner-pass-1'))
    const out = await t.request('POST', '/api/affiliate/logout', {
      host: CAB,
      headers: { ...ORIGIN, cookie: `tcs_aff=${s}` },
    })
    expect(out.status).toBe(200)
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0')
    expect((await cab('/api/affiliate/me', s)).json.error).toBe('TOKEN_REVOKED')
  })

  test('sign out everywhere ends every cabinet session of the affiliate on this brand, not its API tokens', async () => {
    const [a, b, c] = [
      cookieOf(await login('partner@example.com', 'partner-pass-1')),
      cookieOf(await login('partner@example.com', 'partner-pass-1')),
      cookieOf(await login('partner@example.com', 'partner-pass-1')),
    ]
    const apiToken = (await issue()).token
    // another affiliate's session stays
    await t.request('POST', '/manager/affiliates', {
      token: staff,
      body: { email: 'other-aff@example.com', code: 'OTHERAFF', password: 'other-pass-1' },
    })
    const other = cookieOf(await login('OTHERAFF', 'other-pass-1'))
    const out = await t.request('POST', '/api/affiliate/logout/all', {
      host: CAB,
      headers: { ...ORIGIN, cookie: `tcs_aff=${a}` },
    })
    expect(out.status).toBe(200)
    expect(out.json.data).toBe('OK')
    expect(out.json.ended).toBeGreaterThanOrEqual(3)
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0')
    for (const s of [a, b, c]) expect((await cab('/api/affiliate/me', s)).json.error).toBe('TOKEN_REVOKED')
    expect((await cab('/api/affiliate/me', other)).status).toBe(200)
    expect((await api('/api/affiliate/v1/customers', apiToken)).status).toBe(200)
    // a cookie POST from another site ends nothing
    const d = cookieOf(await login('partner@example.com', 'partner-pass-1'))
    const forged = await t.request('POST', '/api/affiliate/logout/all', {
      host: CAB,
      headers: { origin: 'https://evil.example', cookie: `tcs_aff=${d}` },
    })
    expect(forged.json.error).toBe('CSRF_REJECTED')
    expect((await cab('/api/affiliate/me', d)).status).toBe(200)
    // the file's shared session ended with the others: the tests after this one use a new one
    session = d
  })
})

describe('cabinet sessions end with the credentials that opened them', () => {
  // a hostile client's probe: a cabinet cookie outlived a password reset, a suspension and a revoked
  // access, and worked again once the affiliate was let back in
  test('a new password, a suspension or a revoked access ends every open session; letting it in again revives none', async () => {
    const made = await t.request('POST', '/manager/affiliates', {
      token: staff,
      body: { email: 'ends@example.com', code: 'ENDSPARTNER', password: 'ends-pass-1' },
    })
    expect(made.status).toBe(200)
    const id = made.json.id as number
    const patch = (body: Record<string, unknown>) =>
      t.request('PATCH', `/manager/affiliates/${id}`, { token: staff, body })
    const open = async (password: string) => {
      const r = await login('ends@example.com', password)
      expect(r.status).toBe(200)
      const s = cookieOf(r)
      expect((await cab('/api/affiliate/me', s)).status).toBe(200)
      return s
    }
    const a = await open('ends-pass-1')
    const apiToken = (await issue({}, id)).token
    expect((await patch({ password: 'ends-pass-2' })).status).toBe(200)
    expect((await cab('/api/affiliate/me', a)).json.error).toBe('TOKEN_REVOKED')
    // an integration token is a credential of its own: it stays
    expect((await api('/api/affiliate/v1/customers', apiToken)).status).toBe(200)

    const b = await open('ends-pass-2')
    expect((await patch({ status: 'suspended' })).status).toBe(200)
    expect((await patch({ status: 'active' })).status).toBe(200)
    expect((await cab('/api/affiliate/me', b)).json.error).toBe('TOKEN_REVOKED')

    const c = await open('ends-pass-2')
    const access = (status: string) =>
      t.request('PUT', '/manager/affiliates/access/ENDSPARTNER', { token: staff, body: { status } })
    expect((await access('revoked')).status).toBe(200)
    expect((await access('active')).status).toBe(200)
    expect((await cab('/api/affiliate/me', c)).json.error).toBe('TOKEN_REVOKED')
    await open('ends-pass-2')
  })

  // a reviewer's finding: a login that read the old hash and was still checking it when a new password
  // was written got its session after the reset had ended the others
  test('a login with the old password racing a reset never gets a session that outlives the reset', async () => {
    const made = await t.request('POST', '/manager/affiliates', {
      token: staff,
      body: { email: 'race@example.com', code: 'RACEPARTNER', password: 'race-pass-0' },
    })
    expect(made.status).toBe(200)
    const id = made.json.id as number
    let survived = 0
    let raced = 0
    for (let i = 0; i < 12; i++) {
      const old = `race-pass-${i}`
      // the reset starts first: its hashing holds the password worker while the login reads the old hash
      const reset = t.request('PATCH', `/manager/affiliates/${id}`, {
        token: staff,
        body: { password: `race-pass-${i + 1}` },
      })
      await Bun.sleep(i % 4)
      const [r, p] = await Promise.all([login('race@example.com', old), reset])
      expect(p.status).toBe(200)
      if (r.status !== 200) continue
      raced++
      if ((await cab('/api/affiliate/me', cookieOf(r))).status === 200) survived++
    }
    console.log(`[cabinet] ${raced} of 12 logins with the old password answered 200 beside the reset`)
    expect(survived).toBe(0)
  })
})

describe('dashboard, links, conversions', () => {
  test('every range answers; others are 400 naming the field', async () => {
    for (const range of ['today', '7d', '30d', '90d', 'mtd', 'ytd'])
      expect((await cab(`/api/affiliate/dashboard?range=${range}`)).json.range).toBe(range)
    const custom = await cab('/api/affiliate/dashboard?range=custom&from=2026-01-01&to=2026-01-31')
    expect(custom.json.series.days).toHaveLength(31)
    for (const [q, field] of [
      ['range=1y', 'range'],
      ['range=custom&to=2026-01-31', 'from'],
      ['range=custom&from=2026-01-01&to=2027-06-01', 'to'],
      ['range=custom&from=2026-02-30&to=2026-03-01', 'from'],
    ]) {
      const r = await cab(`/api/affiliate/dashboard?${q}`)
      expect(r.status).toBe(400)
      expect(r.json.message.startsWith(field)).toBe(true)
    }
  })

  test('each funnel number equals the rows behind it for the same range', async () => {
    for (const range of ['7d', '30d', '90d']) {
      const d = (await cab(`/api/affiliate/dashboard?range=${range}`)).json
      const count = async (path: string) => {
        let n = 0
        let cursor: string | null = null
        do {
          const r = await cab(`${path}&range=${range}&limit=200${cursor ? `&cursor=${cursor}` : ''}`)
          n += r.json.rows.length
          cursor = r.json.next_cursor
        } while (cursor)
        return n
      }
      expect(await count('/api/affiliate/clicks?x=1')).toBe(d.funnel.clicks)
      for (const [kind, key] of [
        ['registration', 'registrations'],
        ['kyc_approval', 'kyc_approvals'],
        ['first_deposit', 'first_deposits'],
        ['active_trader', 'active_traders'],
        ['deposit', 'deposits'],
        ['deposit_reversal', 'reversals'],
      ])
        expect(await count(`/api/affiliate/conversions?kind=${kind}`)).toBe(d.funnel[key])
      if (range === '90d') {
        // the demo funnel is not empty
        expect(d.funnel.clicks).toBeGreaterThan(0)
        expect(d.funnel.registrations).toBeGreaterThan(0)
        expect(d.funnel.first_deposits).toBeGreaterThan(0)
        expect(d.deposit_volume[0].currency).toBe('USD')
      }
    }
  })

  test('links carry the URL to share on the brand host', async () => {
    const r = await cab('/api/affiliate/links')
    expect(r.json.rows.map((l: { url: string }) => l.url).sort()).toEqual([
      'http://localhost/go/demo-home',
      'http://localhost/go/demo-spring',
    ])
  })

  test("a second brand's affiliate sees only its brand; a session does not cross brands", async () => {
    const beta = cookieOf(await login('beta-partner@example.com', 'beta-partner-pass-1', BETA_CAB))
    const me = await cab('/api/affiliate/me', beta, BETA_CAB)
    expect(me.json.brand.name).toBe('Beta')
    const rows = (await cab('/api/affiliate/conversions?range=90d&limit=200', beta, BETA_CAB)).json.rows
    expect(rows.length).toBeGreaterThan(0)
    expect(new Set(rows.map((r: { brand_id: number }) => r.brand_id))).toEqual(new Set([me.json.brand.id]))
    expect((await cab('/api/affiliate/me', beta, CAB)).status).toBe(401)
    expect((await cab('/api/affiliate/me', session, BETA_CAB)).status).toBe(401)
  })
})

describe('integration API: every check of spec 5.5 on its own', () => {
  test('a good token reads; each failing check answers its own refusal', async () => {
    const good = await issue()
    expect((await api('/api/affiliate/v1/customers', good.token)).status).toBe(200)
    const cases: [string, () => Promise<{ status: number; json: any }>, number, string][] = [
      [
        'Bearer scheme',
        () => t.request('GET', '/api/affiliate/v1/customers', { host: CAB, token: `Bearer ${good.token}` }),
        401,
        'UNAUTHORIZED',
      ],
      ['no token', () => t.request('GET', '/api/affiliate/v1/customers', { host: CAB }), 401, 'UNAUTHORIZED'],
      ['wrong brand', () => api('/api/affiliate/v1/customers', good.token, BETA_CAB), 401, 'UNAUTHORIZED'],
      [
        'wrong scope',
        async () =>
          api('/api/affiliate/v1/transactions', (await issue({ scopes: ['customers:read'] })).token),
        403,
        'INSUFFICIENT_SCOPE',
      ],
      ['cabinet session', () => api('/api/affiliate/v1/customers', session), 401, 'UNAUTHORIZED'],
      [
        'forged signature',
        async () => {
          const forged = await new SignJWT(
            JSON.parse(Buffer.from(good.token.split('.')[1], 'base64url').toString()),
          )
            .setProtectedHeader({ alg: 'HS256', typ: 'tcs-affiliate-api+jwt' })
            .sign(new TextEncoder().encode('not-the-secret-of-this-deployment-at-all'))
          return api('/api/affiliate/v1/customers', forged)
        },
        401,
        'UNAUTHORIZED',
      ],
      [
        'revoked',
        async () => {
          const tk = await issue()
          expect(
            (await t.request('POST', `/manager/affiliate-tokens/${tk.id}/revoke`, { token: staff })).json
              .status,
          ).toBe('revoked')
          return api('/api/affiliate/v1/customers', tk.token)
        },
        401,
        'TOKEN_REVOKED',
      ],
    ]
    for (const [name, run, status, code] of cases) {
      const r = await run()
      expect([name, r.status, r.json?.error]).toEqual([name, status, code])
    }
  })

  test('expiry, suspension and access removal apply from the next request', async () => {
    const a = await t.request('POST', '/manager/affiliates', {
      token: staff,
      body: { email: 'int@example.com', code: 'INTPARTNER', password: 'int-pass-1' },
    })
    const tk = await issue({ expires_in_days: 1 }, a.json.id)
    expect((await api('/api/affiliate/v1/customers', tk.token)).status).toBe(200)
    await t.request('PATCH', `/manager/affiliates/${a.json.id}`, {
      token: staff,
      body: { status: 'suspended' },
    })
    expect((await api('/api/affiliate/v1/customers', tk.token)).json.error).toBe('AFFILIATE_SUSPENDED')
    await t.request('PATCH', `/manager/affiliates/${a.json.id}`, { token: staff, body: { status: 'active' } })
    expect((await api('/api/affiliate/v1/customers', tk.token)).status).toBe(200)
    await t.request('PUT', '/manager/affiliates/access/INTPARTNER', {
      token: staff,
      body: { status: 'revoked' },
    })
    expect((await api('/api/affiliate/v1/customers', tk.token)).json.error).toBe('BRAND_ACCESS_REVOKED')
    await t.request('PUT', '/manager/affiliates/access/INTPARTNER', {
      token: staff,
      body: { status: 'active' },
    })
    clock.advance(86_400_001)
    expect((await api('/api/affiliate/v1/customers', tk.token)).json.error).toBe('TOKEN_EXPIRED')
    staff = await t.staffToken()
    const list = await t.request('GET', `/manager/affiliates/${a.json.id}/tokens`, { token: staff })
    expect(list.json.rows[0]).toMatchObject({ id: tk.id, prefix: tk.prefix, status: 'expired' })
    expect(list.text).not.toContain(tk.token)
    expect(list.json.rows[0].last_used_time).toBeGreaterThan(0)
  })

  test('page size: default 100, at most 1500, more is 400; rate limit headers, then 429 with Retry-After', async () => {
    const tk = await issue()
    const r = await api('/api/affiliate/v1/transactions', tk.token)
    expect(r.headers.get('x-ratelimit-limit')).toBe('60')
    expect(Number(r.headers.get('x-ratelimit-remaining'))).toBe(59)
    expect(r.json.rows.length).toBeLessThanOrEqual(100)
    expect((await api('/api/affiliate/v1/transactions?page_size=1501', tk.token)).json.message).toContain(
      'page_size',
    )
    expect((await api('/api/affiliate/v1/transactions?cursor=garbage', tk.token)).json.message).toContain(
      'cursor',
    )
    expect((await api('/api/affiliate/v1/transactions?page_size=1500', tk.token)).status).toBe(200)
    // three counted so far: page_size 1501 is refused by the schema before the limit counts it
    for (let i = 3; i < 60; i++) await api('/api/affiliate/v1/customers', tk.token)
    const over = await api('/api/affiliate/v1/customers', tk.token)
    expect(over.status).toBe(429)
    expect(over.json.error).toBe('RATE_LIMITED')
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(over.headers.get('x-ratelimit-remaining')).toBe('0')
    // another token of the same affiliate has its own budget
    expect((await api('/api/affiliate/v1/customers', (await issue()).token)).status).toBe(200)
  })

  test('10,000 rows by cursor while rows are inserted: each row of the start once, none twice', async () => {
    const a = await t.request('POST', '/manager/affiliates', {
      token: staff,
      body: { email: 'bulk@example.com', code: 'BULKPARTNER', password: 'bulk-pass-1' },
    })
    const affiliateId = a.json.id as number
    const base = clock.now() - 1_000_000
    const row = (i: number, time: number) => ({
      brandId: 1,
      affiliateId,
      linkId: null,
      customerId: 500_000 + (i % 700),
      kind: 'deposit',
      key: `deposit:b${i}`,
      valueMinor: 100 + i,
      currency: 'USD',
      referenceId: `b${i}`,
      // many rows share an instant: the cursor's (time, id) must still neither skip nor repeat them
      eventTime: time,
      eventId: i,
      createdAt: base,
      updatedAt: base,
    })
    for (let i = 0; i < 10_000; i += 500)
      await t.ctx.db
        .insert(conversions)
        .values(Array.from({ length: 500 }, (_, j) => row(i + j, base + Math.floor((i + j) / 7))))
    const tk = await issue({}, affiliateId)
    let extra = 10_000
    const seen = await allPages('/api/affiliate/v1/transactions', tk.token, 1_500, async () => {
      // rows arriving meanwhile: newer ones, and ones at an instant already listed
      await t.ctx.db.insert(conversions).values([row(extra++, clock.now()), row(extra++, base + 700)])
    })
    expect(new Set(seen).size).toBe(seen.length)
    const original = (
      await t.ctx.db.select({ id: conversions.id, ref: conversions.referenceId }).from(conversions)
    )
      .filter((r) => r.ref.startsWith('b') && Number(r.ref.slice(1)) < 10_000)
      .map((r) => r.id)
    const got = new Set(seen)
    expect(original.filter((id) => !got.has(id))).toEqual([])
  })
})
