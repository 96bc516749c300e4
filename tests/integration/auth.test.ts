// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { AccountsPort } from '../../src/modules/accounts'
import { customers, groups } from '../../src/modules/accounts/schema'
import { makeTestApp, type TestApp } from '../support/app'

let t: TestApp
beforeAll(async () => {
  t = await makeTestApp()
})
afterAll(() => t.close())

describe('POST /sign/in (spec 4.1)', () => {
  test('200 returns every field of 2.4, the JWT in __token and in an HttpOnly SameSite=Lax cookie', async () => {
    const r = await t.request('POST', '/sign/in', { body: { login: 100001, password: 'demo-pass-1' } })
    expect(r.status).toBe(200)
    for (const f of ['id', 'login', 'regdate', 'leverage']) expect(Number.isInteger(r.json[f])).toBe(true)
    for (const f of [
      'email',
      'avatar',
      'name',
      'phone',
      'address',
      'city',
      'state',
      'country',
      'zipcode',
      'group',
      'currency',
      '__token',
    ])
      expect(typeof r.json[f]).toBe('string')
    expect(r.json).toMatchObject({ login: 100001, group: 'real\\USD', currency: 'USD', leverage: 100 })
    const cookie = r.headers.get('set-cookie') ?? ''
    expect(cookie).toContain(`tcs_token=${r.json.__token}`)
    expect(cookie).toMatch(/HttpOnly/i)
    expect(cookie).toMatch(/SameSite=Lax/i)
    expect(cookie).not.toMatch(/Secure/i)
    expect(r.headers.get('x-request-id')).toBeTruthy()
  })

  test.each([
    [{ login: -1, password: 'demo-pass-1' }, 'login'],
    [{ login: 'abc', password: 'demo-pass-1' }, 'login'],
    [{ login: 1.5, password: 'demo-pass-1' }, 'login'],
    [{ password: 'demo-pass-1' }, 'login'],
    [{ login: 100001, password: '12345' }, 'password'],
    [{ login: 100001, password: 'x'.repeat(65) }, 'password'],
    [{ login: 100001 }, 'password'],
  ])('400 INVALID_DATA naming the field for %j', async (body, field) => {
    const r = await t.request('POST', '/sign/in', { body })
    expect(r.status).toBe(400)
    expect(r.json.error).toBe('INVALID_DATA')
    expect(r.json.message).toContain(field)
  })

  test('400 INVALID_DATA for malformed JSON', async () => {
    const r = await t.request('POST', '/sign/in', {
      body: '{"login":',
      headers: { 'content-type': 'application/json' },
    })
    expect(r.status).toBe(400)
    expect(r.json.error).toBe('INVALID_DATA')
  })

  test('403 USER_NOT_FOUND_OR_INCORRECT for a wrong password, an unknown login and another brand', async () => {
    for (const body of [
      { login: 100001, password: 'wrong-pass-1' },
      { login: 999999, password: 'demo-pass-1' },
      { login: 200001, password: 'beta-pass-1' },
    ]) {
      const r = await t.request('POST', '/sign/in', { body })
      expect(r.status).toBe(403)
      expect(r.json).toEqual({ error: 'USER_NOT_FOUND_OR_INCORRECT', message: expect.any(String) })
    }
    const beta = await t.request('POST', '/sign/in', {
      body: { login: 200001, password: 'beta-pass-1' },
      host: 'beta.localhost:3000',
    })
    expect(beta.status).toBe(200)
  })

  test('402 USER_DISABLED for a disabled account', async () => {
    const staff = await t.staffToken()
    expect(
      (await t.request('PATCH', '/manager/accounts/100003', { token: staff, body: { enable: 0 } })).status,
    ).toBe(200)
    const r = await t.request('POST', '/sign/in', { body: { login: 100003, password: 'demo-pass-1' } })
    expect(r.status).toBe(402)
    expect(r.json.error).toBe('USER_DISABLED')
    await t.request('PATCH', '/manager/accounts/100003', { token: staff, body: { enable: 1 } })
  })

  test('404 GROUP_NOT_FOUND when the account group is gone', async () => {
    const staff = await t.staffToken()
    const created = await t.request('POST', '/manager/accounts', {
      token: staff,
      body: { group: 'real\\USD', password: 'orphan-pass-1' },
    })
    expect(created.status).toBe(200)
    const g = await t.ctx.db
      .insert(groups)
      .values({
        brandId: 1,
        name: 'tmp\\USD',
        accountMode: 'REAL',
        currency: 'USD',
        leverage: 100,
        createdAt: Date.now(),
      })
      .returning()
    await t.request('PATCH', `/manager/accounts/${created.json.login}`, {
      token: staff,
      body: { group: 'tmp\\USD' },
    })
    await t.ctx.db.delete(groups).where(eq(groups.id, g[0].id))
    await t.ports.get(AccountsPort).read.invalidateGroup(g[0].id)
    const r = await t.request('POST', '/sign/in', {
      body: { login: created.json.login, password: 'orphan-pass-1' },
    })
    expect(r.status).toBe(404)
    expect(r.json.error).toBe('GROUP_NOT_FOUND')
  })

  test('404 BRAND_NOT_FOUND for a host outside the allowlist', async () => {
    const r = await t.request('POST', '/sign/in', {
      body: { login: 100001, password: 'demo-pass-1' },
      host: 'evil.example',
    })
    expect(r.status).toBe(404)
    expect(r.json.error).toBe('BRAND_NOT_FOUND')
  })

  test('X-Forwarded-Host is ignored unless TRUST_PROXY is set', async () => {
    const r = await t.request('POST', '/sign/in', {
      body: { login: 200001, password: 'beta-pass-1' },
      headers: { 'x-forwarded-host': 'beta.localhost' },
    })
    expect(r.status).toBe(403)
    const proxied = await makeTestApp({ env: { TRUST_PROXY: 'true' } })
    try {
      const ok = await proxied.request('POST', '/sign/in', {
        body: { login: 200001, password: 'beta-pass-1' },
        headers: { 'x-forwarded-host': 'beta.localhost' },
      })
      expect(ok.status).toBe(200)
    } finally {
      await proxied.close()
    }
  })
})

describe('brute force', () => {
  const newRealAccount = async (password: string) =>
    (
      await t.request('POST', '/manager/accounts', {
        token: await t.staffToken(),
        body: { group: 'real\\USD', password },
      })
    ).json.login as number
  test('after 10 failures from one IP the login answers 429 TOO_MANY_ATTEMPTS, even with the right password', async () => {
    const login = await newRealAccount('brute-pass-1')
    for (let i = 0; i < 10; i++) {
      const r = await t.request('POST', '/sign/in', { body: { login, password: 'wrong-pass-1' } })
      expect(r.status).toBe(403)
    }
    const locked = await t.request('POST', '/sign/in', { body: { login, password: 'brute-pass-1' } })
    expect(locked.status).toBe(429)
    expect(locked.json.error).toBe('TOO_MANY_ATTEMPTS')
    // another identity is not affected
    expect(
      (await t.request('POST', '/sign/in', { body: { login: 100002, password: 'demo-pass-1' } })).status,
    ).toBe(200)
  })

  test('guesses sent at once: no more passwords are checked than the limit, and the right one among them is locked out', async () => {
    // a hostile client's probe: the counters were read before any failure of the burst was written, so
    // 29 wrong passwords and the right one sent together were all checked, and the right one signed in
    const login = await newRealAccount('burst-pass-1')
    const burst = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        t.request('POST', '/sign/in', {
          body: { login, password: i === 29 ? 'burst-pass-1' : `wrong-pass-${i}` },
        }),
      ),
    )
    const by = (status: number) => burst.filter((r) => r.status === status).length
    // at most ten checked (403, or 200 if the right one came early enough); the rest refused unchecked
    expect(by(403) + by(200)).toBeLessThanOrEqual(10)
    expect(by(429) + by(503)).toBeGreaterThanOrEqual(20)
    expect(by(403) + by(200) + by(429) + by(503)).toBe(30)
    if (by(200) === 0) {
      const after = await t.request('POST', '/sign/in', { body: { login, password: 'burst-pass-1' } })
      expect([after.status, after.json.error]).toEqual([429, 'TOO_MANY_ATTEMPTS'])
    }
  })

  test('a success resets the counter', async () => {
    for (let i = 0; i < 9; i++)
      await t.request('POST', '/sign/in', { body: { login: 100002, password: 'wrong-pass-1' } })
    expect(
      (await t.request('POST', '/sign/in', { body: { login: 100002, password: 'demo-pass-1' } })).status,
    ).toBe(200)
    for (let i = 0; i < 9; i++)
      await t.request('POST', '/sign/in', { body: { login: 100002, password: 'wrong-pass-1' } })
    expect(
      (await t.request('POST', '/sign/in', { body: { login: 100002, password: 'demo-pass-1' } })).status,
    ).toBe(200)
  })
})

describe('customer and staff sessions', () => {
  test('customer sign-in lists owned accounts; wrong password is 403', async () => {
    const r = await t.request('POST', '/customer/sign/in', {
      body: { email: 'Demo@Example.com', password: 'demo-pass-1' },
    })
    expect(r.status).toBe(200)
    expect(r.json.accounts).toEqual(expect.arrayContaining([100001, 100002, 100003]))
    expect(r.json.session_type).toBe('SESSION_CUSTOMER')
    const bad = await t.request('POST', '/customer/sign/in', {
      body: { email: 'demo@example.com', password: 'nope-nope' },
    })
    expect(bad.status).toBe(403)
    const invalid = await t.request('POST', '/customer/sign/in', {
      body: { email: 'not-an-email', password: 'demo-pass-1' },
    })
    expect(invalid.status).toBe(400)
    expect(invalid.json.message).toContain('email')
  })

  test('staff sign-in maps roles to session types', async () => {
    for (const [login, password, type] of [
      [1, 'manager-pass-1', 'SESSION_MANAGER'],
      [2, 'admin-pass-1', 'SESSION_ADMIN'],
      [3, 'dealer-pass-1', 'SESSION_DEALER'],
    ] as const) {
      const r = await t.request('POST', '/manager/sign/in', { body: { login, password } })
      expect(r.status).toBe(200)
      expect(r.json.session_type).toBe(type)
    }
  })

  test('registration creates a customer and answers the same for a taken email; sign-in, attribution, accounts', async () => {
    const body = {
      email: 'new.customer@example.com',
      password: 'new-pass-123',
      name: 'New Customer',
      attribution: { campaign: 'spring', utm_source: 'news' },
    }
    const r = await t.request('POST', '/customer/register', { body })
    expect(r.status).toBe(200)
    expect(r.json.status).toBe('accepted')
    expect(r.headers.get('set-cookie')).toBeNull()
    // a taken email (any case) gets exactly the same answer, so registration reveals nothing
    const dup = await t.request('POST', '/customer/register', {
      body: { ...body, email: 'NEW.customer@example.com', password: 'other-pass-9' },
    })
    expect(dup.status).toBe(200)
    expect(dup.text).toBe(r.text)
    const taken = await t.request('POST', '/customer/register', {
      body: { ...body, email: 'demo@example.com' },
    })
    expect(taken.text).toBe(r.text)
    // the demo customer's password is untouched, the duplicate's password does not sign in
    expect(
      (
        await t.request('POST', '/customer/sign/in', {
          body: { email: 'demo@example.com', password: 'demo-pass-1' },
        })
      ).status,
    ).toBe(200)
    expect(
      (
        await t.request('POST', '/customer/sign/in', {
          body: { email: body.email, password: 'other-pass-9' },
        })
      ).status,
    ).toBe(403)
    const signIn = await t.request('POST', '/customer/sign/in', {
      body: { email: body.email, password: body.password },
    })
    expect(signIn.status).toBe(200)
    expect(signIn.json.accounts).toEqual([])
    const token = signIn.json.__token
    const [row] = await t.ctx.db.select().from(customers).where(eq(customers.email, body.email))
    // the values as given, and how the attribution module decided (issue 30)
    expect(JSON.parse(row.attribution!)).toEqual({
      ...body.attribution,
      won_by: 'registration_body',
      touch_id: expect.any(String),
      decision_id: expect.any(String),
    })
    const open = await t.request('POST', '/customer/accounts', {
      token,
      body: { group: 'demo\\USD', password: 'acct-pass-1' },
    })
    expect(open.status).toBe(200)
    expect(open.json).toMatchObject({
      group: 'demo\\USD',
      account_mode: 'DEMO',
      balance: 10000,
      currency: 'USD',
    })
    const me = await t.request('GET', '/account/me', { token })
    expect(me.status).toBe(200)
    expect(me.json).toMatchObject({ login: open.json.login, balance: 10000, equity: 10000 })
    const other = await t.request('POST', '/customer/accounts', {
      token,
      body: { group: 'beta\\real\\USD', password: 'acct-pass-1' },
    })
    expect(other.status).toBe(404)
    expect(other.json.error).toBe('GROUP_NOT_FOUND')
  })
})

describe('sign-out and tokens', () => {
  test('bare, Bearer and cookie forms are accepted; sign-out revokes the token and clears the cookie', async () => {
    const token = await t.userToken()
    expect((await t.request('GET', '/account/me', { token })).status).toBe(200)
    expect((await t.request('GET', '/account/me', { token: `Bearer ${token}` })).status).toBe(200)
    expect(
      (await t.request('GET', '/account/me', { headers: { cookie: `tcs_token=${token}` } })).status,
    ).toBe(200)
    const out = await t.request('POST', '/sign/out', { token })
    expect(out.status).toBe(200)
    expect(out.json).toEqual({ data: 'OK' })
    expect(out.headers.get('set-cookie') ?? '').toMatch(/tcs_token=;|Max-Age=0|Expires=Thu, 01 Jan 1970/i)
    const after = await t.request('GET', '/account/me', { token })
    expect(after.status).toBe(401)
  })
})

describe('CSRF: a change signed in by the session cookie alone comes from a page of this host', () => {
  test('another host, or no Origin, is refused 403 CSRF_REJECTED and changes nothing; this host, or Authorization, passes', async () => {
    const token = await t.userToken()
    const cookie = `tcs_token=${token}`
    // a sibling host of one site: SameSite=Lax sends the cookie, and a POST without a body needs no preflight
    for (const origin of ['http://evil.localhost', 'http://beta.localhost', 'null', undefined]) {
      const r = await t.request('POST', '/sign/out', { headers: { cookie, ...(origin ? { origin } : {}) } })
      expect([r.status, r.json.error]).toEqual([403, 'CSRF_REJECTED'])
    }
    // another port of the host the request names is another page
    const port = await t.request('POST', '/sign/out', {
      host: 'localhost:3000',
      headers: { cookie, origin: 'http://localhost:8081' },
    })
    expect([port.status, port.json.error]).toEqual([403, 'CSRF_REJECTED'])
    expect((await t.request('GET', '/account/me', { token })).status).toBe(200)
    // reads are not changes: the cookie alone still reads
    expect((await t.request('GET', '/account/me', { headers: { cookie } })).status).toBe(200)
    // a script signing with Authorization is no browser riding on a cookie
    const other = await t.userToken()
    const scripted = await t.request('POST', '/sign/out', {
      token: other,
      headers: { origin: 'http://evil.localhost' },
    })
    expect(scripted.status).toBe(200)
    const same = await t.request('POST', '/sign/out', { headers: { cookie, origin: 'http://localhost' } })
    expect(same.status).toBe(200)
    expect((await t.request('GET', '/account/me', { token })).status).toBe(401)
  })
})

describe('PUT /password (spec 4.2)', () => {
  test('a refused update answers UPDATE_PASSWORD_ERROR naming the cause, never the statement or the new hash', async () => {
    const manager = await t.staffToken()
    await t.ctx.db.run(
      sql.raw(
        `CREATE TRIGGER refuse_password BEFORE UPDATE OF password_hash ON accounts WHEN NEW.login = 100003 BEGIN SELECT RAISE(ABORT, 'refused by the database'); END`,
      ),
    )
    try {
      const r = await t.request('PUT', '/password', {
        token: manager,
        body: { login: 100003, password: 'another-pass-7' },
      })
      expect([r.status, r.json.error]).toEqual([401, 'UPDATE_PASSWORD_ERROR'])
      // the database's own words (sqld puts 'SQLite error: ' before them)
      expect(r.json.message).toStartWith('password update failed: ')
      expect(r.json.message).toEndWith('refused by the database')
      expect(r.text).not.toMatch(/argon2|Failed query|params/i)
    } finally {
      // the staff audit trail writes the request's outcome after the answer: DDL waits for it
      await t.ctx.audit.settled()
      await t.ctx.db.run(sql.raw('DROP TRIGGER refuse_password'))
    }
  })
  test('staff set the password; the account signs in with it; trailing slash works', async () => {
    for (const [login, password] of [
      [1, 'manager-pass-1'],
      [2, 'admin-pass-1'],
      [3, 'dealer-pass-1'],
    ] as const) {
      const staff = await t.staffToken(login, password)
      const r = await t.request('PUT', '/password', {
        token: staff,
        body: { login: 100002, password: `new-pass-${login}` },
      })
      expect(r.status).toBe(200)
      expect(r.json).toEqual({ login: 'OK' })
      expect(
        (await t.request('POST', '/sign/in', { body: { login: 100002, password: `new-pass-${login}` } }))
          .status,
      ).toBe(200)
    }
    const staff = await t.staffToken()
    const slash = await t.request('PUT', '/password/', {
      token: staff,
      body: { login: 100002, password: 'demo-pass-1' },
    })
    expect(slash.status).toBe(200)
  })

  test('400 INVALID_DATA, 401 UPDATE_PASSWORD_ERROR for an unknown or other-brand account, 403 for non-staff', async () => {
    const staff = await t.staffToken()
    const bad = await t.request('PUT', '/password', {
      token: staff,
      body: { login: 100002, password: 'short' },
    })
    expect(bad.status).toBe(400)
    expect(bad.json.error).toBe('INVALID_DATA')
    for (const login of [999999, 200001]) {
      const r = await t.request('PUT', '/password', { token: staff, body: { login, password: 'whatever-1' } })
      expect(r.status).toBe(401)
      expect(r.json.error).toBe('UPDATE_PASSWORD_ERROR')
      expect(r.json.message).toContain(String(login))
    }
    const user = await t.userToken()
    expect(
      (await t.request('PUT', '/password', { token: user, body: { login: 100001, password: 'whatever-1' } }))
        .status,
    ).toBe(403)
    // Beta's account still signs in with its own password: nothing changed across brands
    expect(
      (
        await t.request('POST', '/sign/in', {
          body: { login: 200001, password: 'beta-pass-1' },
          host: 'beta.localhost',
        })
      ).status,
    ).toBe(200)
  })
})

describe('master password', () => {
  test('off unless configured; when configured it signs in and is logged', async () => {
    expect(
      (await t.request('POST', '/sign/in', { body: { login: 100001, password: 'master-password-123' } }))
        .status,
    ).toBe(403)
    const lines: string[] = []
    const m = await makeTestApp({
      env: { MASTER_PASSWORD: 'master-password-123' },
      logger: { log: (level, msg, fields) => lines.push(JSON.stringify({ level, msg, ...fields })) },
    })
    try {
      const r = await m.request('POST', '/sign/in', {
        body: { login: 100001, password: 'master-password-123' },
      })
      expect(r.status).toBe(200)
      expect(lines.some((l) => l.includes('master password used') && l.includes('100001'))).toBe(true)
      expect(lines.join('\n')).not.toContain('master-password-123')
    } finally {
      await m.close()
    }
  })
})

describe('password hashes with older parameters', () => {
  test('a 64 MiB hash signs in and is replaced by an OWASP 19 MiB one; sessions stay; a wrong password changes nothing', async () => {
    const { accounts } = await import('../../src/modules/accounts/schema')
    const { staff } = await import('../../src/modules/auth/schema')
    const old = await Bun.password.hash('demo-pass-1', {
      algorithm: 'argon2id',
      memoryCost: 65536,
      timeCost: 2,
    })
    await t.ctx.db.update(accounts).set({ passwordHash: old }).where(eq(accounts.login, 100002))
    await t.ctx.db.update(customers).set({ passwordHash: old }).where(eq(customers.email, 'demo@example.com'))
    const staffOld = await Bun.password.hash('manager-pass-1', {
      algorithm: 'argon2id',
      memoryCost: 65536,
      timeCost: 2,
    })
    await t.ctx.db.update(staff).set({ passwordHash: staffOld }).where(eq(staff.login, 1))
    const stored = async () => ({
      account: (await t.ctx.db.select().from(accounts).where(eq(accounts.login, 100002)))[0].passwordHash,
      customer: (await t.ctx.db.select().from(customers).where(eq(customers.email, 'demo@example.com')))[0]
        .passwordHash,
      staff: (await t.ctx.db.select().from(staff).where(eq(staff.login, 1)))[0].passwordHash,
    })
    const wrong = await t.request('POST', '/sign/in', { body: { login: 100002, password: 'wrong-pass-9' } })
    expect(wrong.status).toBe(403)
    expect((await stored()).account).toBe(old)
    const first = await t.request('POST', '/sign/in', { body: { login: 100002, password: 'demo-pass-1' } })
    expect(first.status).toBe(200)
    expect(
      (
        await t.request('POST', '/customer/sign/in', {
          body: { email: 'demo@example.com', password: 'demo-pass-1' },
        })
      ).status,
    ).toBe(200)
    expect(
      (await t.request('POST', '/manager/sign/in', { body: { login: 1, password: 'manager-pass-1' } }))
        .status,
    ).toBe(200)
    const now = await stored()
    for (const h of Object.values(now)) expect(h).toStartWith('$argon2id$v=19$m=19456,t=2,p=1$')
    // the session of the first sign-in is still good, and the new hash signs in
    expect((await t.request('GET', '/account/me', { token: first.json.__token })).status).toBe(200)
    expect(
      (await t.request('POST', '/sign/in', { body: { login: 100002, password: 'demo-pass-1' } })).status,
    ).toBe(200)
  }, 60_000)
})
