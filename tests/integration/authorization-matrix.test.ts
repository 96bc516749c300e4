import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { SESSION_TYPES, type SessionType } from '../../src/kernel/auth/session'
import { accounts } from '../../src/modules/accounts/schema'
import { makeTestApp } from '../support/app'
import { addBetaStaff } from '../support/staff'

/**
 * The authorization matrix, generated from the app itself (issue 42 item 6): every route the app serves,
 * with the guard it declares (`x-guard` in its OpenAPI detail, put there by the guard macros of
 * kernel/http/security.ts), is called by every kind of caller: no credential, each session type of the
 * Demo brand, an account that must change its generated password, each session type of the Beta brand,
 * the affiliate cabinet session and integration token of each brand, and the price feed's token. A new
 * route is covered without a test being written; a route without a guard fails unless it is in PUBLIC.
 *
 * The guards run in the transform phase, before validation: each call sends an input no route accepts
 * (path ids 999999999, a body with an unknown field, no query), so an allowed call is refused by its
 * input or finds nothing, and changes nothing (checked: an allowed write answers 4xx). A route that takes
 * no input at all and writes (sign-out, the cabinet's logout) is called with a new credential each time.
 */

const FEED_TOKEN = '5d0c7e21a9f84b36c2e1d07a9b48f3e6a1c2'
const ID = '999999999'
const NO_BRAND_HOST = 'no-brand.invalid'
/**
 * A host of each site of each demo brand: `brand`, the brand's own (its API and pages: where `brand` and
 * `auth` routes are served), and `partner`, the affiliate cabinet's (README, demo data).
 */
const HOSTS = {
  Demo: { brand: 'localhost', partner: 'affiliates.localhost' },
  Beta: { brand: 'beta.localhost', partner: 'affiliates.beta.localhost' },
} as const
type BrandName = keyof typeof HOSTS
type SiteName = keyof (typeof HOSTS)['Demo']
const SITE_NAMES = Object.keys(HOSTS.Demo) as SiteName[]
/** Names a site guard may use for several sites at once. */
const SITE_SETS: Record<string, SiteName[]> = { 'brand-or-partner': ['brand', 'partner'] }

/** What the guard macros declare on a route (kernel/http/security.ts). */
interface Guard {
  brand?: true
  feed?: true
  /** the site (or sites) whose hosts serve the route */
  site?: string | string[]
  refusals?: Record<string, string[]>
  roles?: SessionType[]
  denied?: { status: number; code: string } | null
  whileConfined?: boolean
}

/**
 * The sites whose hosts serve a route: the brand's own for `brand` and `auth` routes, the ones a `site`
 * guard names; null for a site the matrix has no host of (a new one: its route is still probed on an
 * unknown host and must not fail on the hosts known; add a host of it to HOSTS to have its callers checked).
 */
function servedOn(g: Guard): SiteName[] | null {
  if (!g.site) return ['brand']
  const names = (typeof g.site === 'string' ? [g.site] : g.site).flatMap((n) => SITE_SETS[n] ?? [n])
  return names.every((n): n is SiteName => (SITE_NAMES as string[]).includes(n)) ? names : null
}

/** What a host that does not serve the route answers (kernel/http/security.ts): the brand is not found. */
const notServed = (sites: SiteName[]) => (sites.includes('brand') ? 'BRAND_NOT_FOUND' : 'NOT_FOUND')

/** Routes without a guard, each with the reason, and what every caller gets from them. */
const PUBLIC: Record<string, { reason: string; status: number }> = {
  'GET /swagger': { reason: 'the API document (Swagger UI): public by design', status: 200 },
  'GET /swagger/json': { reason: 'the API document: public by design', status: 200 },
  'GET /swagger/assets/:file': { reason: 'Swagger UI assets (an unknown name is 404)', status: 404 },
  'GET /health/live': { reason: 'liveness for orchestrators: no brand, no token', status: 200 },
  'GET /health/ready': { reason: 'readiness for load balancers: no brand, no token', status: 200 },
  'GET /health': { reason: 'readiness at the path load balancers ask by default', status: 200 },
  'POST /cron/:job': {
    reason: 'external schedulers: the route checks its own secret, X-Cron-Secret (unset here: refused)',
    status: 401,
  },
}

interface Route {
  method: string
  path: string
  guard: Guard | null
  /** the security schemes the route names (a site route says which credential it verifies) */
  schemes: string[]
  /** the route takes no input at all (no path parameter, no body): a call cannot be made harmless */
  noInput: boolean
}

interface Credential {
  name: string
  brand: BrandName
  /** the session type of a token of the kernel's sessions */
  session?: SessionType
  /** the security scheme a site route names for it */
  scheme?: string
  mustChangePassword?: true
  headers: Record<string, string>
  /** a new credential of the same kind, for a call that may end it */
  fresh: () => Promise<Record<string, string>>
}

interface Answer {
  status: number
  code?: string
  message?: string
}

type Outcome = 'allowed' | { status: number; codes: string[]; message?: string }

const t = await makeTestApp({ env: { FEED_TOKEN } })
afterAll(() => t.close())

const routes: Route[] = t.app.routes.map((r) => {
  const detail = ((r.hooks as { detail?: Record<string, unknown> }).detail ?? {}) as {
    'x-guard'?: Guard
    security?: Record<string, string[]>[]
  }
  const kind = t.ctx.routeBodies.get(`${r.method} ${r.path}`)
  return {
    method: r.method,
    path: r.path,
    guard: detail['x-guard'] ?? null,
    schemes: (detail.security ?? []).flatMap((s) => Object.keys(s)),
    noInput: r.method !== 'GET' && kind === 'none' && !r.path.includes(':'),
  }
})

/** A guard in a few words, for the test's name. */
function named(g: Guard | null) {
  if (!g) return '(public)'
  if (g.feed) return 'feed'
  if (g.roles) {
    const d = g.denied ? ` (else ${g.denied.status} ${g.denied.code})` : ''
    return `auth ${g.roles.map((r) => r.replace('SESSION_', '')).join(',')}${d}${g.whileConfined ? ' whileConfined' : ''}`
  }
  if (g.site) return `site ${[g.site].flat().join(',')}`
  return g.brand ? 'brand' : JSON.stringify(g)
}

/** Every path parameter of a route points to nothing. */
const concrete = (path: string) => path.replace(/:[A-Za-z_]+\??/g, ID)

async function send(method: string, path: string, host: string, headers: Record<string, string>) {
  const h: Record<string, string> = { host, ...headers }
  let body: string | undefined
  if (method !== 'GET' && method !== 'HEAD') {
    // a field no route declares: refused by validation (ADR 0006) once the guard let the call through
    body = JSON.stringify({ authorization_matrix: 'not a field of any route' })
    h['content-type'] = 'application/json'
  }
  const res = await t.app.handle(new Request(`http://${host}${path}`, { method, headers: h, body }))
  // an event stream never ends: its status is the answer
  if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
    await res.body?.cancel()
    return { status: res.status }
  }
  const text = await res.text()
  let json: { error?: string; message?: string } | undefined
  try {
    json = text ? JSON.parse(text) : undefined
  } catch {}
  return { status: res.status, code: json?.error, message: json?.message } satisfies Answer
}

const TOKEN_REQUIRED = 'a session token is required'
const TOKEN_INVALID = 'the session token is invalid, expired or revoked'
const mayNot = /^SESSION_[A-Z]+ may not call this route$/

/** Is the answer one a guard gives (so the call did not reach the route)? */
function guardRefusal(r: Route, a: Answer) {
  if (a.code === 'BRAND_NOT_FOUND' || a.code === 'PASSWORD_CHANGE_REQUIRED') return true
  if (a.message && mayNot.test(a.message)) return true
  if (a.status === 401 && a.code === 'UNAUTHORIZED')
    if (a.message === TOKEN_REQUIRED || a.message === TOKEN_INVALID || a.message?.includes('X-Feed-Token'))
      return true
  if (r.guard?.site) {
    if (a.status === 404 && a.code === 'NOT_FOUND' && a.message === 'not found') return true
    if (a.code && r.guard.refusals?.[String(a.status)]?.includes(a.code)) return true
  }
  return false
}

/** What the route's guard answers this credential on the brand's host that serves the route. */
function expected(r: Route, c: Credential): Outcome {
  const g = r.guard as Guard
  if (g.feed)
    return c.headers['x-feed-token']
      ? 'allowed'
      : { status: 401, codes: ['UNAUTHORIZED'], message: 'a valid X-Feed-Token is required' }
  if (g.roles) {
    if (!c.session || c.brand !== 'Demo')
      return {
        status: 401,
        codes: ['UNAUTHORIZED'],
        message: c.headers.authorization ? TOKEN_INVALID : TOKEN_REQUIRED,
      }
    if (!g.roles.includes(c.session)) {
      const d = g.denied ?? { status: 403, code: 'FORBIDDEN' }
      return { status: d.status, codes: [d.code], message: `${c.session} may not call this route` }
    }
    if (c.mustChangePassword && !g.whileConfined) return { status: 403, codes: ['PASSWORD_CHANGE_REQUIRED'] }
    return 'allowed'
  }
  if (g.site && r.schemes.length) {
    if (c.brand === 'Demo' && c.scheme && r.schemes.includes(c.scheme)) return 'allowed'
    // refused by the site's own verification, with a code it declares; no credential at all is a 401
    const status = c.headers.authorization ? undefined : 401
    const refusals = Object.entries(g.refusals ?? {}).filter(
      ([s]) => status === undefined || Number(s) === status,
    )
    return { status: status ?? -1, codes: refusals.flatMap(([, codes]) => codes) }
  }
  // `brand: true`, or a public route of a site: the guard only finds the brand
  if (g.brand || g.site) return 'allowed'
  throw new Error(`${r.method} ${r.path}: a guard the matrix does not know: ${JSON.stringify(g)}`)
}

function check(r: Route, c: Credential, a: Answer, fresh: boolean) {
  const cell = `${r.method} ${r.path} as ${c.name}: ${JSON.stringify(a)}`
  expect(a.status, cell).toBeLessThan(500)
  const want = expected(r, c)
  if (want === 'allowed') {
    expect(guardRefusal(r, a), `${cell} (allowed, refused by a guard)`).toBe(false)
    // the probe changes nothing: an allowed write is refused by its input or finds nothing
    if (r.method !== 'GET' && !fresh)
      expect(a.status, `${cell} (allowed write succeeded)`).toBeGreaterThanOrEqual(400)
    return
  }
  if (want.status === -1) expect([401, 403], cell).toContain(a.status)
  else expect(a.status, cell).toBe(want.status)
  expect(want.codes, cell).toContain(a.code ?? '(no code)')
  if (want.message) expect(a.message, cell).toBe(want.message)
}

// ---- the callers -------------------------------------------------------------------------------------

async function signIn(path: string, body: unknown, host: string) {
  const res = await t.app.handle(
    new Request(`http://${host}${path}`, {
      method: 'POST',
      headers: { host, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }),
  )
  if (res.status !== 200) throw new Error(`${host}${path}: ${res.status} ${await res.text()}`)
  const cookie = /tcs_aff=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')?.[1]
  const json = (await res.json()) as { __token?: string }
  return { authorization: (json.__token ?? cookie) as string }
}

const STAFF = [
  ['SESSION_MANAGER', 'MANAGER', 1, 'manager-pass-1'],
  ['SESSION_ADMIN', 'ADMIN', 2, 'admin-pass-1'],
  ['SESSION_DEALER', 'DEALER', 3, 'dealer-pass-1'],
] as const

/** The way each brand signs in each session type (README, demo data; Beta's staff are added below). */
function sessionSignIn(brand: BrandName, type: SessionType) {
  const host = HOSTS[brand].brand
  const beta = brand === 'Beta'
  if (type === 'SESSION_USER')
    return () =>
      signIn(
        '/sign/in',
        beta ? { login: 200001, password: 'beta-pass-1' } : { login: 100001, password: 'demo-pass-1' },
        host,
      )
  if (type === 'SESSION_CUSTOMER')
    return () =>
      signIn(
        '/customer/sign/in',
        beta
          ? { email: 'beta@example.com', password: 'beta-pass-1' }
          : { email: 'demo@example.com', password: 'demo-pass-1' },
        host,
      )
  const s = STAFF.find(([session]) => session === type)
  if (!s) throw new Error(`no credential of ${type}: teach the authorization matrix how to sign one in`)
  return () => signIn('/manager/sign/in', { login: s[2], password: s[3] }, host)
}

const credentials: Credential[] = []
/** the routes whose matrix passed */
const covered = new Set<string>()

beforeAll(async () => {
  // Beta's staff (the demo data has Demo's only), so a Beta token of each staff role is a real one
  await addBetaStaff(
    t,
    STAFF.map(([, role, login, password]) => [role, login, password] as const),
  )
  // an account with a generated password it has not replaced yet (as a prop challenge's)
  await t.ctx.db.update(accounts).set({ mustChangePassword: 1 }).where(eq(accounts.login, 100003))

  const add = async (c: Omit<Credential, 'headers'>) => credentials.push({ ...c, headers: await c.fresh() })
  const nothing = async () => ({})
  await add({ name: 'no credential', brand: 'Demo', fresh: nothing })
  for (const brand of ['Demo', 'Beta'] as const)
    for (const session of SESSION_TYPES)
      await add({ name: `${brand} ${session}`, brand, session, fresh: sessionSignIn(brand, session) })
  await add({
    name: 'Demo SESSION_USER that must change its password',
    brand: 'Demo',
    session: 'SESSION_USER',
    mustChangePassword: true,
    fresh: () => signIn('/sign/in', { login: 100003, password: 'demo-pass-1' }, HOSTS.Demo.brand),
  })
  const partners = {
    Demo: ['partner@example.com', 'partner-pass-1'],
    Beta: ['beta-partner@example.com', 'beta-partner-pass-1'],
  }
  for (const brand of ['Demo', 'Beta'] as const) {
    const [login, password] = partners[brand]
    await add({
      name: `${brand} affiliate cabinet session`,
      brand,
      scheme: 'AffiliateSession',
      fresh: () => signIn('/api/affiliate/login', { login, password }, HOSTS[brand].partner),
    })
    // an integration token of the brand's partner, issued by the brand's manager
    const managerOf = credentials.find((c) => c.name === `${brand} SESSION_MANAGER`)!
    const manager = managerOf.headers
    const list = await t.app.handle(
      new Request(`http://${HOSTS[brand].brand}/manager/affiliates`, {
        headers: { host: HOSTS[brand].brand, ...manager },
      }),
    )
    const body = (await list.json()) as
      | { rows?: { id: number; email: string }[] }
      | { id: number; email: string }[]
    const rows = Array.isArray(body) ? body : (body.rows ?? [])
    const partner = rows.find((a) => a.email === login)
    if (!partner) throw new Error(`${brand}: no partner ${login} in ${JSON.stringify(body)}`)
    // by a manager session of its own: a route that ends sessions may have ended the listed one's
    const issue = async () => {
      const res = await t.app.handle(
        new Request(`http://${HOSTS[brand].brand}/manager/affiliates/${partner.id}/tokens`, {
          method: 'POST',
          headers: {
            host: HOSTS[brand].brand,
            'content-type': 'application/json',
            ...(await managerOf.fresh()),
          },
          body: JSON.stringify({
            scopes: ['customers:read', 'transactions:read', 'commissions:read'],
            expires_in_days: 1,
          }),
        }),
      )
      if (res.status !== 200) throw new Error(`integration token: ${res.status} ${await res.text()}`)
      return { authorization: ((await res.json()) as { token: string }).token }
    }
    await add({ name: `${brand} affiliate integration token`, brand, scheme: 'AffiliateToken', fresh: issue })
  }
  await add({
    name: 'the price feed',
    brand: 'Demo',
    scheme: 'FeedToken',
    fresh: async () => ({ 'x-feed-token': FEED_TOKEN }),
  })
})

// ---- the matrix --------------------------------------------------------------------------------------

describe('the matrix covers the app', () => {
  test('every route has a guard or is public for a stated reason; the document lists no other route', async () => {
    const keys = routes.map((r) => `${r.method} ${r.path}`)
    expect(new Set(keys).size).toBe(routes.length)
    const unguarded = routes.filter((r) => !r.guard).map((r) => `${r.method} ${r.path}`)
    expect(unguarded.sort()).toEqual(Object.keys(PUBLIC).sort())
    // what clients see: every operation of the document is one of these routes
    const doc = (await (await t.app.handle(new Request('http://localhost/swagger/json'))).json()) as {
      paths: Record<string, Record<string, unknown>>
    }
    for (const [path, item] of Object.entries(doc.paths))
      for (const method of Object.keys(item))
        expect(keys).toContain(`${method.toUpperCase()} ${path.replace(/\{([^}]+)\}/g, ':$1')}`)
  })

  test('every session type has a caller of each brand', () => {
    for (const brand of ['Demo', 'Beta'] as const)
      for (const type of SESSION_TYPES)
        expect(credentials.some((c) => c.brand === brand && c.session === type)).toBe(true)
  })
})

/** Routes that end every session of a principal (sign-out everywhere, staff ending sessions). */
const ENDS_SESSIONS = /\/sign\/out\/all$|\/logout\/all$|\/sessions\/end$/

describe("authorization matrix (generated from each route's declared guard)", () => {
  for (const r of routes) {
    const path = concrete(r.path)
    const key = `${r.method} ${r.path}`
    test(`${key} ${named(r.guard)}`, async () => {
      const pub = PUBLIC[key]
      if (!r.guard) {
        for (const c of credentials) {
          const a = await send(r.method, path, HOSTS.Demo.brand, c.headers)
          expect(a.status, `${key} as ${c.name}`).toBe(pub.status)
        }
        covered.add(key)
        return
      }
      const g = r.guard
      const served = g.feed ? (['brand'] as SiteName[]) : servedOn(g)
      if (!served) {
        // a site the matrix has no host of: unknown hosts do not serve it, the hosts known fail no call
        expect((await send(r.method, path, NO_BRAND_HOST, {})).status, `${key} on an unknown host`).toBe(404)
        for (const host of Object.values(HOSTS.Demo))
          for (const c of credentials)
            expect(
              (await send(r.method, path, host, c.headers)).status,
              `${key} on ${host} as ${c.name}`,
            ).toBeLessThan(500)
        return
      }
      // the price feed's route finds no brand; any other is served only on the hosts of its sites: an
      // unknown host, and the brand's hosts of its other sites, do not serve it, even to a caller it takes
      if (!g.feed) {
        const elsewhere = { status: 404, code: notServed(served) }
        const anonymous = credentials.find((c) => !c.session && !c.scheme) as Credential
        const allowed = credentials.find((c) => c !== anonymous && expected(r, c) === 'allowed')
        for (const c of [anonymous, ...(allowed ? [allowed] : [])]) {
          const a = await send(r.method, path, NO_BRAND_HOST, c.headers)
          expect({ status: a.status, code: a.code }, `${key} on an unknown host as ${c.name}`).toEqual(
            elsewhere,
          )
          for (const other of SITE_NAMES.filter((s) => !served.includes(s))) {
            const b = await send(r.method, path, HOSTS.Demo[other], c.headers)
            expect({ status: b.status, code: b.code }, `${key} on ${HOSTS.Demo[other]} as ${c.name}`).toEqual(
              elsewhere,
            )
          }
        }
      }
      if (ENDS_SESSIONS.test(r.path)) {
        // it ends more than the token it is sent with: each caller signs in just before its own call, one
        // after another, and every caller signs in again after them
        for (const host of served)
          for (const c of credentials) {
            const a = await send(r.method, path, HOSTS.Demo[host], await c.fresh())
            check(r, c, a, expected(r, c) === 'allowed')
          }
        for (const c of credentials) c.headers = await c.fresh()
        covered.add(key)
        return
      }
      for (const host of served)
        await Promise.all(
          credentials.map(async (c) => {
            // a call that takes no input and writes may end the session: a new one each time
            const fresh = r.noInput && expected(r, c) === 'allowed'
            const headers = fresh ? await c.fresh() : c.headers
            check(r, c, await send(r.method, path, HOSTS.Demo[host], headers), fresh)
          }),
        )
      covered.add(key)
    })
  }
})

describe('after the matrix', () => {
  test('every route of the app was called by every caller', () => {
    expect(covered.size).toBe(t.app.routes.length)
  })
})
