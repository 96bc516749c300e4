// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eq, sql } from 'drizzle-orm'
import { SignJWT } from 'jose'
import { configurePasswordWork } from '../../src/kernel/auth/passwords'
import { ACCESS_TYP } from '../../src/kernel/auth/tokens'
import { loadConfig } from '../../src/kernel/config'
import { MIGRATIONS_DIR, migrateDatabase } from '../../src/kernel/db/migrate'
import { accounts } from '../../src/modules/accounts/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { tempDatabase } from '../support/database'
import * as F from '../support/files'

// Regression tests of issue 16 (a hostile client and a first-time user): each one failed before its fix.

let t: TestApp
let staff: string
beforeAll(async () => {
  t = await makeTestApp()
  staff = await t.staffToken()
  const dealer = await t.staffToken(3, 'dealer-pass-1')
  await t.request('POST', '/market/quotes', {
    token: dealer,
    body: { ticks: [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }] },
  })
})
afterAll(() => t.close())

describe('1. integer inputs have realistic ranges', () => {
  test('a pending order with an expiration beyond 2100 (or 2^53) is refused, naming the field', async () => {
    const user = await t.userToken()
    for (const expiration of [1e16, 2 ** 53, 4_102_444_801]) {
      const r = await t.request('POST', '/trade/open', {
        token: user,
        body: {
          login: 100001,
          cmd: 2,
          volume: 10,
          symbol: 'EURUSD',
          sl: 0,
          tp: 0,
          open_price: 1,
          expiration,
        },
      })
      expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
      expect(r.json.message).toMatch(/^expiration: /)
    }
    const list = await t.request('GET', '/trade/list?login=100001', { token: user })
    expect(list.status).toBe(200)
  })

  test('price alert times beyond 2100 are refused, not a 500', async () => {
    const user = await t.userToken()
    for (const field of ['expires_at', 'reference_time']) {
      const r = await t.request('POST', '/price_alert', {
        token: user,
        body: { login: 100001, symbol: 'EURUSD', side: 0, condition: 7, move_threshold: 1, [field]: 1e16 },
      })
      expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
      expect(r.json.message).toMatch(new RegExp(`^${field}: `))
    }
  })

  test('ids, logins and counts above 2^53 - 1 are refused in bodies, queries and paths', async () => {
    const user = await t.userToken()
    const body = await t.request('DELETE', '/trade/cancel', { token: user, body: { order: 2 ** 53 } })
    expect([body.status, body.json.message]).toEqual([400, expect.stringMatching(/^order: /)])
    const query = await t.request('GET', '/trade/history?login=100001&from=99999999999999', { token: user })
    expect([query.status, query.json.message]).toEqual([400, expect.stringMatching(/^query from: /)])
    const path = await t.request('DELETE', '/price_alert/9007199254740993', { token: user })
    expect([path.status, path.json.message]).toEqual([400, expect.stringMatching(/^params id: /)])
  })
})

describe('3. a disable or a password change ends the sessions', () => {
  test('a disabled account cannot read or write with its old token, and stays out after re-enabling', async () => {
    const opened = await t.request('POST', '/manager/accounts', {
      token: staff,
      body: { group: 'demo\\USD', password: 'epoch-pass-1' },
    })
    const login = opened.json.login
    const token = await t.userToken(login, 'epoch-pass-1')
    expect((await t.request('GET', '/account/me', { token })).status).toBe(200)
    await t.request('PATCH', `/manager/accounts/${login}`, { token: staff, body: { enable: 0 } })
    const form = new FormData()
    form.set('file', new File([F.PNG], 'a.png', { type: 'image/png' }))
    form.set('purpose', 'account_avatar')
    for (const r of [
      await t.request('GET', '/account/me', { token }),
      await t.request('PUT', '/account/me', { token, body: { name: 'x' } }),
      await t.request('POST', '/script', { token, body: { login, name: 's', script: 'x' } }),
      await t.request('POST', '/upload', { token, form }),
    ])
      expect([r.status, r.json.error]).toEqual([401, 'UNAUTHORIZED'])
    await t.request('PATCH', `/manager/accounts/${login}`, { token: staff, body: { enable: 1 } })
    expect((await t.request('GET', '/account/me', { token })).status).toBe(401)
    expect(
      (await t.request('GET', '/account/me', { token: await t.userToken(login, 'epoch-pass-1') })).status,
    ).toBe(200)
  })

  test('PUT /password ends the old sessions at once; the new password signs in', async () => {
    const token = await t.userToken(100003)
    expect((await t.request('GET', '/account/me', { token })).status).toBe(200)
    const r = await t.request('PUT', '/password', {
      token: staff,
      body: { login: 100003, password: 'changed-pass-3' },
    })
    expect(r.status).toBe(200)
    expect((await t.request('GET', '/account/me', { token })).status).toBe(401)
    const fresh = await t.userToken(100003, 'changed-pass-3')
    expect((await t.request('GET', '/account/me', { token: fresh })).status).toBe(200)
    await t.request('PUT', '/password', { token: staff, body: { login: 100003, password: 'demo-pass-1' } })
  })
})

describe('4. self-service leverage is what the group offers', () => {
  test("groups closed to self-service (the prop phases') are neither listed nor opened by customers", async () => {
    const customer = await t.customerToken()
    const names = async () =>
      ((await t.request('GET', '/customer/groups', { token: customer })).json.rows as { name: string }[]).map(
        (g) => g.name,
      )
    expect(await names()).toContain('real\\USD')
    expect(await names()).not.toContain('prop\\funded\\USD')
    for (const group of ['prop\\funded\\USD', 'prop\\eval\\USD']) {
      const r = await t.request('POST', '/customer/accounts', {
        token: customer,
        body: { group, password: 'prop-self-pass-1' },
      })
      expect([r.status, r.json.error]).toEqual([404, 'GROUP_NOT_FOUND'])
    }
    // staff open it again, and close it back
    const listed = (await t.request('GET', '/manager/groups', { token: staff })).json.rows
    const funded = listed.find((g: { name: string }) => g.name === 'prop\\funded\\USD')
    expect(funded.self_service).toBe(0)
    const set = (v: number) =>
      t.request('PATCH', `/manager/groups/${funded.id}`, { token: staff, body: { self_service: v } })
    expect((await set(1)).json.self_service).toBe(1)
    expect(await names()).toContain('prop\\funded\\USD')
    expect((await set(0)).json.self_service).toBe(0)
    expect(await names()).not.toContain('prop\\funded\\USD')
  })

  test('1:1000 on a 1:100 REAL group is refused; the offered steps are accepted', async () => {
    const customer = await t.customerToken()
    const groups = await t.request('GET', '/customer/groups', { token: customer })
    const real = groups.json.rows.find((g: { name: string }) => g.name === 'real\\USD')
    expect(real.leverage_options).toEqual([1, 2, 5, 10, 20, 25, 30, 33, 50, 66, 100])
    for (const leverage of [1000, 200, 77]) {
      const r = await t.request('POST', '/customer/accounts', {
        token: customer,
        body: { group: 'real\\USD', password: 'lever-pass-1', leverage },
      })
      expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
      expect(r.json.message).toMatch(/^leverage: /)
    }
    const ok = await t.request('POST', '/customer/accounts', {
      token: customer,
      body: { group: 'real\\USD', password: 'lever-pass-1', leverage: 50 },
    })
    expect([ok.status, ok.json.leverage]).toEqual([200, 50])
    // staff decide higher leverage per account
    const staffSet = await t.request('PATCH', `/manager/accounts/${ok.json.login}`, {
      token: staff,
      body: { leverage: 500 },
    })
    expect([staffSet.status, staffSet.json.leverage]).toEqual([200, 500])
  })
})

describe('5. an account belongs to an existing customer of its brand', () => {
  test('staff cannot link another brand or a missing customer; the database refuses it too', async () => {
    const beta = await t.request('POST', '/customer/sign/in', {
      body: { email: 'beta@example.com', password: 'beta-pass-1' },
      host: 'beta.localhost',
    })
    for (const customer_id of [beta.json.id, 999]) {
      const r = await t.request('POST', '/manager/accounts', {
        token: staff,
        body: { group: 'real\\USD', password: 'link-pass-1', customer_id },
      })
      expect([r.status, r.json.error]).toEqual([404, 'CUSTOMER_NOT_FOUND'])
    }
    const demoCustomer = await t.request('POST', '/customer/sign/in', {
      body: { email: 'demo@example.com', password: 'demo-pass-1' },
    })
    const ok = await t.request('POST', '/manager/accounts', {
      token: staff,
      body: { group: 'real\\USD', password: 'link-pass-1', customer_id: demoCustomer.json.id },
    })
    expect([ok.status, ok.json.customer_id]).toEqual([200, demoCustomer.json.id])
    // the triggers hold whatever code path writes
    for (const other of [beta.json.id, 999]) {
      const relink = async () =>
        await t.ctx.db.run(sql`update ${accounts} set customer_id = ${other} where login = ${ok.json.login}`)
      await expect(relink()).rejects.toThrow(/customer_id/)
    }
  })
})

describe('6. authentication and the role check come before any validation', () => {
  test('no token: 401 whatever the body, query or path; wrong role: 403, not INVALID_DATA', async () => {
    const none = [
      await t.request('POST', '/manager/symbols', { body: {} }),
      await t.request('POST', '/manager/symbols', {
        body: '{"broken',
        headers: { 'content-type': 'application/json' },
      }),
      await t.request('POST', '/manager/symbols', { body: 'x', headers: { 'content-type': 'text/plain' } }),
      await t.request('GET', '/trade/history?login=abc'),
      await t.request('PATCH', '/manager/accounts/not-a-login', { body: {} }),
    ]
    for (const r of none) {
      expect([r.status, r.json.error]).toEqual([401, 'UNAUTHORIZED'])
      expect(r.text).not.toMatch(/description|sessions|digits/)
    }
    const dealer = await t.staffToken(3, 'dealer-pass-1')
    const wrongRole = await t.request('POST', '/manager/symbols', { token: dealer, body: {} })
    expect([wrongRole.status, wrongRole.json.error]).toEqual([403, 'FORBIDDEN'])
    const customer = await t.customerToken()
    const trade = await t.request('POST', '/trade/open', { token: customer, body: { nonsense: true } })
    expect([trade.status, trade.json.error]).toEqual([401, 'PERMISSION_DENIED'])
    const feed = await t.request('POST', '/feed/quotes', { body: { ticks: 'nope' } })
    expect([feed.status, feed.json.error]).toEqual([401, 'UNAUTHORIZED'])
  })
})

describe('9. token claims are type-checked after the signature', () => {
  const sign = (claims: object) =>
    new SignJWT({
      iss: t.config.jwt.issuer,
      aud: t.config.jwt.audience,
      exp: Math.floor(Date.now() / 1000) + 600,
      jti: crypto.randomUUID(),
      ...claims,
    })
      .setProtectedHeader({ alg: 'HS256', typ: ACCESS_TYP })
      .sign(new TextEncoder().encode(t.config.jwt.secret))

  test('a signed token without login, with a text login, or an unknown session type is 401, never 500', async () => {
    for (const claims of [
      { st: 'SESSION_USER', bid: 1 },
      { st: 'SESSION_USER', bid: 1, login: '100002' },
      { st: 'SESSION_USER', bid: '1', login: 100002 },
      { st: 'SESSION_ROOT', bid: 1, login: 100002 },
      { st: 'SESSION_CUSTOMER', bid: 1, login: 100002 },
      { st: 'SESSION_MANAGER', bid: 1, login: 1 },
      { st: 'SESSION_USER', bid: 1, login: 100002, jti: 'not-a-uuid' },
    ]) {
      const r = await t.request('GET', '/account/me', { token: await sign(claims) })
      expect([r.status, r.json.error]).toEqual([401, 'UNAUTHORIZED'])
    }
    const good = await t.request('GET', '/account/me', {
      token: await sign({ st: 'SESSION_USER', bid: 1, login: 100002 }),
    })
    expect(good.status).toBe(200)
  })
})

describe('10. a body that is sent must be a JSON object', () => {
  test('PUT /account/me: truncated, array, null, text/plain and form bodies are 400; no body is no change', async () => {
    const token = await t.userToken(100002)
    for (const [body, type] of [
      ['{"name":', 'application/json'],
      ['[]', 'application/json'],
      ['null', 'application/json'],
      ['"text"', 'application/json'],
      ['name=x', 'text/plain'],
      ['name=x', 'application/x-www-form-urlencoded'],
    ]) {
      const r = await t.request('PUT', '/account/me', { token, body, headers: { 'content-type': type } })
      expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
      expect(r.json.message).toMatch(/^body/)
    }
    const none = await t.request('PUT', '/account/me', { token })
    expect(none.status).toBe(200)
  })
})

describe('12. the script limit counts bytes of UTF-8', () => {
  test('65,536 × "é" (131,072 bytes) is refused; 32,768 × "é" fits', async () => {
    const token = await t.userToken()
    const big = await t.request('POST', '/script', {
      token,
      body: { login: 100001, name: 'utf8', script: 'é'.repeat(65_536) },
    })
    expect([big.status, big.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(big.json.message).toMatch(/^script: 131072 bytes/)
    const fits = await t.request('POST', '/script', {
      token,
      body: { login: 100001, name: 'utf8', script: 'é'.repeat(32_768) },
    })
    expect(fits.status).toBe(200)
  })
})

describe('15. a new account starts with its group market watch', () => {
  test('self-service and staff accounts get the list; staff set it per group', async () => {
    const customer = await t.customerToken()
    const opened = await t.request('POST', '/customer/accounts', {
      token: customer,
      body: { group: 'demo\\USD', password: 'watch-pass-1' },
    })
    const token = await t.userToken(opened.json.login, 'watch-pass-1')
    // the watch list is written by the market module's consumer of account.created
    await t.settle()
    const first = await t.request('GET', `/market/watch/list?login=${opened.json.login}&prefix=`, { token })
    expect(Object.keys(first.json.assets)).toEqual(
      expect.arrayContaining(['EURUSD', 'GBPUSD', 'XAUUSD', 'BTCUSD']),
    )
    const groups = await t.request('GET', '/manager/groups', { token: staff })
    const demo = groups.json.rows.find((g: { name: string }) => g.name === 'demo\\USD')
    const bad = await t.request('PUT', `/manager/groups/${demo.id}/watch`, {
      token: staff,
      body: { symbols: ['EURUSD', 'NOPE'] },
    })
    expect([bad.status, bad.json.message]).toEqual([400, expect.stringMatching(/^symbols.1: NOPE/)])
    const set = await t.request('PUT', `/manager/groups/${demo.id}/watch`, {
      token: staff,
      body: { symbols: ['XAUUSD', 'EURUSD'] },
    })
    expect(set.json).toEqual({ group_id: demo.id, symbols: ['XAUUSD', 'EURUSD'] })
    expect(
      (await t.request('GET', `/manager/groups/${demo.id}/watch`, { token: staff })).json.symbols,
    ).toEqual(['XAUUSD', 'EURUSD'])
    const next = await t.request('POST', '/manager/accounts', {
      token: staff,
      body: { group: 'demo\\USD', password: 'watch-pass-2' },
    })
    const nextToken = await t.userToken(next.json.login, 'watch-pass-2')
    await t.settle()
    const list = await t.request('GET', `/market/watch/list?login=${next.json.login}&prefix=`, {
      token: nextToken,
    })
    expect(Object.keys(list.json.assets)).toEqual(['XAUUSD', 'EURUSD'])
    const [row] = await t.ctx.db.select().from(accounts).where(eq(accounts.login, next.json.login))
    expect(row.sessionEpoch).toBe(0)
  })
})

describe('validation messages', () => {
  test('a missing field says required; a wrong one says what was expected', async () => {
    const token = await t.userToken()
    const missing = await t.request('POST', '/trade/open', {
      token,
      body: { login: 100001, cmd: 0, symbol: 'EURUSD', sl: 0, tp: 0 },
    })
    expect(missing.json).toEqual({ error: 'INVALID_DATA', message: 'volume: required' })
    const wrong = await t.request('POST', '/trade/open', {
      token,
      body: { login: 100001, cmd: 0, volume: 'ten', symbol: 'EURUSD', sl: 0, tp: 0 },
    })
    expect(wrong.json).toEqual({ error: 'INVALID_DATA', message: 'volume: Expected integer' })
    const query = await t.request('GET', '/trade/list', { token })
    expect(query.json).toEqual({ error: 'INVALID_DATA', message: 'query login: required' })
  })
})

describe('7. brute force, spraying and enumeration', () => {
  let limited: TestApp
  beforeAll(async () => {
    limited = await makeTestApp({
      env: {
        TRUST_PROXY: '1',
        SIGNIN_MAX_FAILURES: '5',
        SIGNIN_MAX_FAILURES_PER_IP: '20',
        REGISTER_MAX_PER_HOUR: '3',
        ACCOUNT_OPEN_MAX_PER_DAY: '2',
      },
    })
  })
  afterAll(() => limited.close())
  const from = (ip: string) => ({ 'x-forwarded-for': ip })

  test('a login locked by failures stays locked from another address', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await limited.request('POST', '/sign/in', {
        body: { login: 100003, password: 'wrong-pass-1' },
        headers: from(`10.0.0.${i}`),
      })
      expect(r.status).toBe(403)
    }
    const elsewhere = await limited.request('POST', '/sign/in', {
      body: { login: 100003, password: 'demo-pass-1' },
      headers: from('192.0.2.77'),
    })
    expect([elsewhere.status, elsewhere.json.error]).toEqual([429, 'TOO_MANY_ATTEMPTS'])
  })

  test('one password tried on many logins from one address is throttled', async () => {
    const statuses: number[] = []
    for (let i = 0; i < 25; i++) {
      const r = await limited.request('POST', '/sign/in', {
        body: { login: 300000 + i, password: 'Summer2026!' },
        headers: from('198.51.100.9'),
      })
      statuses.push(r.status)
    }
    expect(statuses.slice(0, 20).every((s) => s === 403)).toBe(true)
    expect(statuses.slice(20).every((s) => s === 429)).toBe(true)
    // even a right password from that address waits; another address is served
    const sprayed = await limited.request('POST', '/sign/in', {
      body: { login: 100001, password: 'demo-pass-1' },
      headers: from('198.51.100.9'),
    })
    expect(sprayed.status).toBe(429)
    const other = await limited.request('POST', '/sign/in', {
      body: { login: 100001, password: 'demo-pass-1' },
      headers: from('198.51.100.10'),
    })
    expect(other.status).toBe(200)
  })

  test('registrations per address and account openings per customer are limited', async () => {
    const statuses: number[] = []
    for (let i = 0; i < 4; i++)
      statuses.push(
        (
          await limited.request('POST', '/customer/register', {
            body: { email: `rate${i}@example.com`, password: 'rate-pass-1', name: 'Rate' },
            headers: from('203.0.113.5'),
          })
        ).status,
      )
    expect(statuses).toEqual([200, 200, 200, 429])
    const customer = await limited.customerToken()
    const opens: number[] = []
    for (let i = 0; i < 3; i++)
      opens.push(
        (
          await limited.request('POST', '/customer/accounts', {
            token: customer,
            body: { group: 'demo\\USD', password: 'rate-pass-1' },
            headers: from(`203.0.113.${10 + i}`),
          })
        ).status,
      )
    expect(opens).toEqual([200, 200, 429])
  })
})

describe('1. the upgrade repairs what unbounded inputs stored before', () => {
  test('pending orders and alerts with times beyond 2100 are cancelled / disabled by migration 0006', async () => {
    const db = await tempDatabase('repair')
    const before = mkdtempSync(join(tmpdir(), 'tcs-migrations-'))
    try {
      // the migrations as they were before this release
      cpSync(MIGRATIONS_DIR, before, { recursive: true })
      const journalPath = join(before, 'meta', '_journal.json')
      const journal = JSON.parse(readFileSync(journalPath, 'utf8'))
      const upto = journal.entries.findIndex((e: { tag: string }) => e.tag === '0006_hardening_and_kernel')
      journal.entries = journal.entries.slice(0, upto)
      writeFileSync(journalPath, JSON.stringify(journal))
      await migrateDatabase(db.db, before)
      await db.client.execute(`insert into orders (brand_id, login, symbol, cmd, volume, state, open_price, open_time,
        expiration, updated_at) values (1, 100002, 'EURUSD', 2, 10, 'pending', 1.05, 0, 10000000000000000, 7)`)
      await db.client.execute(`insert into price_alerts (brand_id, login, symbol, side, condition, expires_at,
        reference_time, created_at, updated_at) values (1, 100002, 'EURUSD', 0, 0, 10000000000000000, -5, 0, 0)`)
      await migrateDatabase(db.db)
      const order = (
        await db.client.execute('select state, close_reason, expiration, close_time from orders')
      ).rows[0]
      expect({ ...order } as Record<string, unknown>).toEqual({
        state: 'cancelled',
        close_reason: 'invalid',
        expiration: 0,
        close_time: 7,
      })
      const alert = (await db.client.execute('select active, expires_at, reference_time from price_alerts'))
        .rows[0]
      expect({ ...alert } as Record<string, unknown>).toEqual({ active: 0, expires_at: 0, reference_time: 0 })
    } finally {
      rmSync(before, { recursive: true, force: true })
      db.close()
    }
  })
})

describe('a flood of sign-ins is shed, not queued (password work, PASSWORD_WORK_*)', () => {
  let flooded: TestApp
  beforeAll(async () => {
    flooded = await makeTestApp({
      env: { PASSWORD_WORK_CONCURRENCY: '1', PASSWORD_WORK_MAX_WAIT_MS: '100', SIGNIN_MAX_FAILURES: '12' },
    })
  })
  afterAll(() => {
    flooded.close()
    // the gate is the process's: the next suites get the default back
    configurePasswordWork(loadConfig({}).passwordWork)
  })

  test('checks past the wait bound answer 503 with Retry-After at once, and are not counted as failures', async () => {
    // as many as the limit allows at once: each is let through to the check (past the limit, the rest
    // would be refused unchecked, 429, and counted)
    const flood = await Promise.all(
      Array.from({ length: 12 }, () =>
        flooded.request('POST', '/sign/in', { body: { login: 100002, password: 'wrong-pass-1' } }),
      ),
    )
    const refused = flood.filter((r) => r.status === 503)
    const checked = flood.filter((r) => r.status === 403)
    expect(refused.length + checked.length).toBe(12)
    // one check at a time and 100 ms of waiting: not all of them can be checked in time
    expect(refused.length).toBeGreaterThanOrEqual(1)
    expect(refused[0]!.json).toEqual({
      error: 'SERVICE_UNAVAILABLE',
      message: 'password check busy; retry later',
    })
    expect(Number(refused[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
    // the 503s were not counted as failures: the right password still signs in
    const after = await flooded.request('POST', '/sign/in', {
      body: { login: 100002, password: 'demo-pass-1' },
    })
    expect(after.status).toBe(200)
  })
})
