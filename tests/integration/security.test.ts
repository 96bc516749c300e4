// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SignJWT } from 'jose'
import { ACCESS_TYP } from '../../src/kernel/auth/tokens'
import { ManualClock } from '../../src/kernel/clock'
import { makeTestApp, type TestApp } from '../support/app'
import { forexSymbol } from '../support/symbols'

let t: TestApp
const clock = new ManualClock(Date.now())
let tokens: Record<string, string | undefined>
beforeAll(async () => {
  t = await makeTestApp({ clock })
  tokens = {
    none: undefined,
    user: await t.userToken(),
    customer: await t.customerToken(),
    manager: await t.staffToken(1, 'manager-pass-1'),
    admin: await t.staffToken(2, 'admin-pass-1'),
    dealer: await t.staffToken(3, 'dealer-pass-1'),
  }
})
afterAll(() => t.close())

describe('JWT attack set: every forgery answers 401', () => {
  const secret = () => new TextEncoder().encode(t.config.jwt.secret)
  const claims = () => ({ st: 'SESSION_USER', bid: 1, login: 100001, jti: crypto.randomUUID() })
  const now = () => Math.floor(clock.now() / 1000)
  const sign = (c: object, header: object = { alg: 'HS256', typ: ACCESS_TYP }) =>
    new SignJWT({ ...c }).setProtectedHeader(header as never).sign(secret())
  const b64url = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')

  const forged: Record<string, () => Promise<string>> = {
    'a well-formed control token (must pass)': () =>
      sign({ ...claims(), iss: t.config.jwt.issuer, aud: t.config.jwt.audience, exp: now() + 60 }),
    'alg none': async () =>
      `${b64url({ alg: 'none', typ: ACCESS_TYP })}.${b64url({ ...claims(), iss: t.config.jwt.issuer, aud: t.config.jwt.audience, exp: now() + 60 })}.`,
    'another algorithm (HS512)': () =>
      sign(
        { ...claims(), iss: t.config.jwt.issuer, aud: t.config.jwt.audience, exp: now() + 60 },
        { alg: 'HS512', typ: ACCESS_TYP },
      ),
    expired: () =>
      sign({ ...claims(), iss: t.config.jwt.issuer, aud: t.config.jwt.audience, exp: now() - 1 }),
    'no exp': () => sign({ ...claims(), iss: t.config.jwt.issuer, aud: t.config.jwt.audience }),
    'no jti': () =>
      sign({
        st: 'SESSION_USER',
        bid: 1,
        login: 100001,
        iss: t.config.jwt.issuer,
        aud: t.config.jwt.audience,
        exp: now() + 60,
      }),
    'wrong iss': () =>
      sign({ ...claims(), iss: 'someone-else', aud: t.config.jwt.audience, exp: now() + 60 }),
    'wrong aud': () => sign({ ...claims(), iss: t.config.jwt.issuer, aud: 'other-api', exp: now() + 60 }),
    'wrong typ (another token class)': () =>
      sign(
        { ...claims(), iss: t.config.jwt.issuer, aud: t.config.jwt.audience, exp: now() + 60 },
        { alg: 'HS256', typ: 'tcs-affiliate+jwt' },
      ),
    'wrong secret': () =>
      new SignJWT({ ...claims(), iss: t.config.jwt.issuer, aud: t.config.jwt.audience, exp: now() + 60 })
        .setProtectedHeader({ alg: 'HS256', typ: ACCESS_TYP })
        .sign(new TextEncoder().encode('x'.repeat(40))),
    'tampered payload': async () => {
      const real = tokens.user!
      const [h, , s] = real.split('.')
      const payload = JSON.parse(Buffer.from(real.split('.')[1], 'base64url').toString())
      return `${h}.${b64url({ ...payload, login: 100002 })}.${s}`
    },
    // One bit of the signature's first byte flipped: editing the last base64url characters can leave
    // the decoded bytes unchanged (the final character carries padding bits a lenient decoder drops).
    'tampered signature': async () => {
      const real = tokens.user!
      const [h, p, s] = real.split('.')
      const bytes = Buffer.from(s, 'base64url')
      bytes[0] ^= 1
      return `${h}.${p}.${bytes.toString('base64url')}`
    },
  }

  for (const [name, make] of Object.entries(forged)) {
    test(name, async () => {
      const r = await t.request('GET', '/account/me', { token: await make() })
      expect(r.status).toBe(name.startsWith('a well-formed') ? 200 : 401)
    })
  }

  test('a token becomes invalid when it expires (clock moved, no sleeping)', async () => {
    const token = await t.userToken()
    expect((await t.request('GET', '/account/me', { token })).status).toBe(200)
    clock.advance((t.config.jwt.ttlSeconds + 1) * 1000)
    try {
      expect((await t.request('GET', '/account/me', { token })).status).toBe(401)
    } finally {
      clock.advance(-(t.config.jwt.ttlSeconds + 1) * 1000)
    }
  })

  test('a revoked jti answers 401', async () => {
    const token = await t.userToken()
    await t.request('POST', '/sign/out', { token })
    expect((await t.request('GET', '/account/me', { token })).status).toBe(401)
  })
})

// Every route's guard against every caller (each session type of each brand, no token, the affiliate
// and feed credentials) is checked by the matrix generated from the routes: authorization-matrix.test.ts.
// The rows here pin who may call these routes and what an allowed caller gets from them (the record
// scoping of 404s, the 200s, trading's answers), which a matrix generated from the declared guards cannot.
describe('authorization matrix: each session type against each route', () => {
  const F = 403
  const D = 401 // trading routes answer PERMISSION_DENIED with 401 (spec 4.7)
  const newSymbol = (kind: string) => forexSymbol(`MTX${kind.toUpperCase()}`)
  const newGroup = (kind: string) => ({
    name: `matrix-${kind}`,
    account_mode: 'DEMO',
    currency: 'USD',
    leverage: 100,
  })
  const security = { show: 1, trade: 1, lot_min: 1, lot_max: 10_000, lot_step: 1 }
  // [method, path, body (or body per session kind), expected status for none, user, customer, manager, admin, dealer]
  const routes: [string, string, unknown, number[]][] = [
    ['GET', '/account/me?login=100002', undefined, [401, 404, 200, 200, 200, 200]],
    ['PUT', '/account/me', { login: 100002, city: 'Paris' }, [401, 404, 200, 200, 200, 200]],
    ['GET', '/balance/me?login=100002', undefined, [401, 404, 200, 200, 200, 200]],
    ['GET', '/upload/list', undefined, [401, 200, 200, 200, 200, 200]],
    ['POST', '/sign/out', undefined, [401, 200, 200, 200, 200, 200]],
    ['GET', '/customer/me', undefined, [401, F, 200, F, F, F]],
    ['POST', '/customer/accounts', { group: 'demo\\USD', password: 'matrix-pass-1' }, [401, F, 200, F, F, F]],
    ['PUT', '/password', { login: 100003, password: 'demo-pass-1' }, [401, F, F, 200, 200, 200]],
    ['GET', '/manager/groups', undefined, [401, F, F, 200, 200, 200]],
    ['GET', '/manager/accounts/100002', undefined, [401, F, F, 200, 200, 200]],
    ['PATCH', '/manager/accounts/100002', { comment: 'matrix' }, [401, F, F, 200, 200, F]],
    [
      'POST',
      '/manager/accounts',
      { group: 'real\\USD', password: 'matrix-pass-1' },
      [401, F, F, 200, 200, F],
    ],
    ['POST', '/manager/accounts/100002/balance', { type: 'deposit', amount: 1 }, [401, F, F, 200, 200, F]],
    ['GET', '/manager/accounts/100002/operations', undefined, [401, F, F, 200, 200, 200]],
    // trading (spec 4.7: a session type without the right answers 401 PERMISSION_DENIED); no quotes are
    // loaded here, so an allowed open reaches the price check and answers 503 PRICE_STALE (issue 39)
    ['GET', '/trade/list?login=100001', undefined, [401, 200, D, 200, 200, 200]],
    ['GET', '/trade/history?login=100001', undefined, [401, 200, D, 200, 200, 200]],
    [
      'POST',
      '/trade/open',
      { login: 100001, cmd: 0, volume: 1, symbol: 'EURUSD', sl: 0, tp: 0 },
      [401, 503, D, 503, 503, 503],
    ],
    ['PUT', '/trade/modify', { order: 999_999, sl: 0, tp: 0 }, [401, 404, D, D, D, D]],
    ['DELETE', '/trade/close', { order: 999_999 }, [401, 404, D, 404, 404, 404]],
    ['DELETE', '/trade/cancel', { order: 999_999 }, [401, 401, D, 401, 401, 401]],
    // market
    ['GET', '/market/watch/list?login=100001&prefix=', undefined, [401, 200, F, 200, 200, 200]],
    ['GET', '/market/symbol?login=100001&symbol=EURUSD', undefined, [401, 200, F, 200, 200, 200]],
    ['GET', '/market/short/list?login=100001', undefined, [401, 200, F, 200, 200, 200]],
    // a sane quote: a spread of half the price is refused (400) since the ingest bounds it
    [
      'POST',
      '/market/quotes',
      { ticks: [{ symbol: 'BTCUSD', bid: 43000, ask: 43030 }] },
      [401, F, F, F, 200, 200],
    ],
    // reference data: symbols are deployment-wide (admin), group settings belong to the brand's managers
    ['GET', '/manager/symbols', undefined, [401, F, F, 200, 200, 200]],
    ['POST', '/manager/symbols', newSymbol, [401, F, F, F, 200, F]],
    ['PATCH', '/manager/symbols/EURUSD', { stops_level: 5 }, [401, F, F, F, 200, F]],
    ['POST', '/manager/groups', newGroup, [401, F, F, 200, 200, F]],
    ['PATCH', '/manager/groups/1', { margin_call: 90 }, [401, F, F, 200, 200, F]],
    ['GET', '/manager/groups/1/trading', undefined, [401, F, F, 200, 200, 200]],
    ['PUT', '/manager/groups/1/securities/Forex', security, [401, F, F, 200, 200, F]],
    ['PUT', '/manager/groups/1/symbols/EURUSD', { spread: 12 }, [401, F, F, 200, 200, F]],
    ['DELETE', '/manager/groups/1/symbols/EURUSD', undefined, [401, F, F, 200, 404, F]],
    // notifications: read by the account session, sent by managers and admins
    ['GET', '/notify/list?limit=10&offset=0&filter=', undefined, [401, 200, F, F, F, F]],
    ['PUT', '/notify/read', { all: true }, [401, 200, F, F, F, F]],
    ['POST', '/manager/notify', { login: 100002, title: 'matrix', body: 'matrix' }, [401, F, F, 200, 200, F]],
    // scripts: USER, MANAGER, ADMIN, DEALER (spec 4.6)
    ['GET', '/scripts?login=100001', undefined, [401, 200, F, 200, 200, 200]],
    ['POST', '/script', { login: 100001, name: 'matrix', script: 'x' }, [401, 200, F, 200, 200, 200]],
    // price alerts: any session, for a login it may see (100002 is the demo customer's account)
    [
      'POST',
      '/price_alert',
      { login: 100002, symbol: 'EURUSD', side: 0, condition: 0, target_price: 2 },
      // another's login: 403 USER_NOT_FOUND (spec 4.5 lists 400, 401, 403, 500), as trading answers
      [401, F, 200, 200, 200, 200],
    ],
    ['GET', '/price_alerts?login=100002', undefined, [401, F, 200, 200, 200, 200]],
  ]
  const kinds = ['none', 'user', 'customer', 'manager', 'admin', 'dealer']
  for (const [method, path, body, expected] of routes)
    test(`${method} ${path}`, async () => {
      const got: number[] = []
      for (const kind of kinds) {
        // sign-out revokes: use a fresh token for that row
        const token = path === '/sign/out' && kind !== 'none' ? await freshToken(kind) : tokens[kind]
        const b = typeof body === 'function' ? body(kind) : body
        got.push((await t.request(method, path, { token, body: b })).status)
      }
      expect(got).toEqual(expected)
    })

  async function freshToken(kind: string) {
    if (kind === 'user') return t.userToken()
    if (kind === 'customer') return t.customerToken()
    const [login, pass] = {
      manager: [1, 'manager-pass-1'],
      admin: [2, 'admin-pass-1'],
      dealer: [3, 'dealer-pass-1'],
    }[kind] as [number, string]
    return t.staffToken(login, pass)
  }
})

describe('cross-brand probes answer as not found and change nothing', () => {
  test('Beta staff token and Beta customer cannot see or touch Demo records', async () => {
    const betaCustomer = await t.customerToken('beta@example.com', 'beta-pass-1', 'beta.localhost')
    for (const [method, path, body] of [
      ['GET', '/account/me?login=100001', undefined],
      ['GET', '/balance/me?login=100001', undefined],
      ['PUT', '/account/me', { login: 100001, name: 'pwned' }],
    ] as const) {
      const r = await t.request(method, path, { token: betaCustomer, body, host: 'beta.localhost' })
      expect(r.status).toBe(404)
    }
    const demo = await t.request('GET', '/account/me?login=100001', { token: tokens.manager })
    expect(demo.json.name).not.toBe('pwned')
    // a Demo token presented on the Beta host is not valid there
    expect(
      (await t.request('GET', '/account/me', { token: tokens.user, host: 'beta.localhost' })).status,
    ).toBe(401)
  })
})
