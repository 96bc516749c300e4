// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { hashPassword } from '../../src/kernel/auth/passwords'
import { MemoryStore } from '../../src/kernel/cache/memory'
import { ManualClock } from '../../src/kernel/clock'
import { createLogger } from '../../src/kernel/logger'
import { AccountsPort } from '../../src/modules/accounts'
import { closingTimes } from '../../src/modules/accounts/domain/closing'
import { accounts } from '../../src/modules/accounts/schema'
import { staff } from '../../src/modules/auth/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { type SqldServer, startSqld } from '../support/sqld'

/**
 * Findings of a hostile probe of the accounts and auth routes (.tmp/probe-accounts): password changes
 * racing each other or a reset, guessing the current password past the sign-in guard, password hashes in
 * the logs, sign-out refused to an account that must change its password, prevbalance never written, a
 * balance past 2^53 minor units, refused openings using up the day's allowance, password lengths counted
 * in UTF-16 units.
 */

const changePassword = (t: TestApp, token: string, password: string, next: string, headers = {}) =>
  t.request('PUT', '/account/password', { token, headers, body: { password, new_password: next } })
const signIn = (t: TestApp, login: number, password: string, headers = {}) =>
  t.request('POST', '/sign/in', { headers, body: { login, password } })

/** Two changes of one account's password proving the same current one, at once on `a` and `b`. */
async function raceChanges(a: TestApp, b: TestApp, login: number, current: string) {
  const [ta, tb] = [await a.userToken(login, current), await b.userToken(login, current)]
  const answers = await Promise.all([
    changePassword(a, ta, current, 'first-new-pass-1'),
    changePassword(b, tb, current, 'second-new-pass-1'),
  ])
  const signIns = [
    (await signIn(a, login, 'first-new-pass-1')).status,
    (await signIn(a, login, 'second-new-pass-1')).status,
  ]
  return { answers, signIns }
}

/** Exactly one change won: it answered 200 and its password signs in; the other 403 INCORRECT_PASSWORD. */
function expectOneWinner(r: Awaited<ReturnType<typeof raceChanges>>) {
  expect(r.answers.map((x) => x.status).sort()).toEqual([200, 403])
  const loser = r.answers.find((x) => x.status === 403)!
  expect(loser.json.error).toBe('INCORRECT_PASSWORD')
  expect(r.signIns).toEqual(r.answers.map((x) => (x.status === 200 ? 200 : 403)))
}

describe('1. a password change replaces only the password it proved', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp()
  })
  afterAll(() => t.close())

  test('two changes proving the same current password: one answers 200, the other 403 INCORRECT_PASSWORD', async () => {
    expectOneWinner(await raceChanges(t, t, 100002, 'demo-pass-1'))
  })

  test("the customer's reset racing a stolen session's change: one wins, and its password is the account's", async () => {
    const thief = await t.userToken(100001, 'demo-pass-1')
    const customer = await t.customerToken()
    const [reset, change] = await Promise.all([
      t.request('PUT', '/customer/accounts/100001/password', {
        token: customer,
        body: { password: 'owner-reset-1' },
      }),
      changePassword(t, thief, 'demo-pass-1', 'thief-new-pass-1'),
    ])
    expect([reset.status, change.status].filter((s) => s === 200)).toHaveLength(1)
    const owner = (await signIn(t, 100001, 'owner-reset-1')).status
    const stolen = (await signIn(t, 100001, 'thief-new-pass-1')).status
    if (reset.status === 200) {
      expect([change.status, change.json.error]).toEqual([403, 'INCORRECT_PASSWORD'])
      expect([owner, stolen]).toEqual([200, 403])
    } else {
      // the change committed between the reset's read and its write: nothing set, the customer sets it again
      expect([reset.status, reset.json.error]).toEqual([409, 'PASSWORD_CHANGED'])
      expect([owner, stolen]).toEqual([403, 200])
      const again = await t.request('PUT', '/customer/accounts/100001/password', {
        token: customer,
        body: { password: 'owner-reset-1' },
      })
      expect(again.status).toBe(200)
    }
    // the demo's password back for the tests after
    const c = await t.customerToken()
    expect(
      (
        await t.request('PUT', '/customer/accounts/100001/password', {
          token: c,
          body: { password: 'demo-pass-1' },
        })
      ).status,
    ).toBe(200)
  })
})

describe('1. two instances on one sqld', () => {
  let sqld: SqldServer
  let a: TestApp
  let b: TestApp
  beforeAll(async () => {
    sqld = await startSqld()
    // the shared store stands for the deployment's Redis
    const store = new MemoryStore()
    a = await makeTestApp({ env: { DATABASE_URL: sqld.url }, store })
    b = await makeTestApp({ env: { DATABASE_URL: sqld.url }, store, seed: false })
  }, 60_000)
  afterAll(async () => {
    await b?.close()
    await a?.close()
    await sqld?.stop()
  })

  test('two changes on two instances proving the same current password: exactly one wins', async () => {
    expectOneWinner(await raceChanges(a, b, 100003, 'demo-pass-1'))
  })
})

describe('2. the current password of PUT /account/password is checked under the sign-in guard', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp({
      env: { TRUST_PROXY: '1', SIGNIN_MAX_FAILURES: '5', SIGNIN_MAX_FAILURES_PER_IP: '8' },
    })
  })
  afterAll(() => t.close())
  const from = (ip: string) => ({ 'x-forwarded-for': ip })

  test('guesses lock the login (429 TOO_MANY_ATTEMPTS), the right password included, for sign-in too', async () => {
    const stolen = await t.userToken(100002)
    const seen: string[] = []
    for (let i = 0; i < 7; i++) {
      const r = await changePassword(t, stolen, `guess-${i}-xx`, 'taken-over-1', from(`10.1.0.${i}`))
      seen.push(`${r.status} ${r.json.error}`)
    }
    expect(seen.slice(0, 5)).toEqual(Array(5).fill('403 INCORRECT_PASSWORD'))
    expect(seen.slice(5)).toEqual(Array(2).fill('429 TOO_MANY_ATTEMPTS'))
    const hit = await changePassword(t, stolen, 'demo-pass-1', 'taken-over-1', from('10.1.0.99'))
    expect([hit.status, hit.json.error]).toEqual([429, 'TOO_MANY_ATTEMPTS'])
    // one count with sign-in's: the login is locked there as well
    const r = await signIn(t, 100002, 'demo-pass-1', from('10.1.0.98'))
    expect([r.status, r.json.error]).toEqual([429, 'TOO_MANY_ATTEMPTS'])
  })

  test("failures count against the client address as sign-in's do", async () => {
    const token = await t.userToken(100003)
    for (let i = 0; i < 4; i++)
      expect(
        (await changePassword(t, token, `wrong-${i}-xx`, 'whatever-1', from('198.51.100.7'))).status,
      ).toBe(403)
    // four more failures of sign-ins on other logins reach the address's limit of 8
    for (let i = 0; i < 4; i++)
      expect((await signIn(t, 300000 + i, 'Summer2026!', from('198.51.100.7'))).status).toBe(403)
    const r = await signIn(t, 100001, 'demo-pass-1', from('198.51.100.7'))
    expect([r.status, r.json.error]).toEqual([429, 'TOO_MANY_ATTEMPTS'])
    // another address changes the password
    const ok = await changePassword(t, token, 'demo-pass-1', 'demo-pass-9', from('198.51.100.8'))
    expect(ok.status).toBe(200)
  })
})

describe('3. a password hash never reaches the logs', () => {
  const lines: string[] = []
  let t: TestApp
  beforeAll(async () => {
    // the production logger (with its redaction), writing into memory
    t = await makeTestApp({ logger: createLogger('info', (l) => lines.push(l)) })
  })
  afterAll(() => t.close())

  /** A database that refuses the write (disk full, I/O error): here a trigger. */
  const refuse = (table: string, name: string, when = '1') =>
    t.ctx.db.run(
      sql.raw(
        `CREATE TRIGGER ${name} BEFORE UPDATE OF password_hash ON ${table} WHEN ${when} BEGIN SELECT RAISE(ABORT, 'disk full'); END`,
      ),
    )
  const hashes = () => lines.filter((l) => l.includes('$argon2'))

  test("a refused write of PUT /account/password or of the customer's reset: 500, its cause logged, no hash", async () => {
    const user = await t.userToken(100002)
    const customer = await t.customerToken()
    await refuse('accounts', 'refuse_accounts', 'NEW.login IN (100002, 100003)')
    lines.length = 0
    const change = await changePassword(t, user, 'demo-pass-1', 'brand-new-pass-9')
    const reset = await t.request('PUT', '/customer/accounts/100003/password', {
      token: customer,
      body: { password: 'brand-new-pass-8' },
    })
    expect([change.status, reset.status]).toEqual([500, 500])
    const logged = lines.filter((l) => l.includes('unhandled error'))
    expect(logged).toHaveLength(2)
    for (const l of logged) {
      expect(JSON.parse(l).err).toContain('disk full')
      expect(l).not.toContain('Failed query')
    }
    expect(hashes()).toEqual([])
  })

  test('a failed rehash at sign-in logs its cause, neither hash', async () => {
    // a staff hash made with the parameters used before (64 MiB): the next sign-in replaces it
    const old = await Bun.password.hash('dealer-pass-1', {
      algorithm: 'argon2id',
      memoryCost: 65536,
      timeCost: 2,
    })
    await t.ctx.db.update(staff).set({ passwordHash: old }).where(eq(staff.login, 3))
    await refuse('staff', 'refuse_staff')
    lines.length = 0
    const r = await t.request('POST', '/manager/sign/in', { body: { login: 3, password: 'dealer-pass-1' } })
    expect(r.status).toBe(200)
    const warned = lines.filter((l) => l.includes('password rehash failed'))
    expect(warned).toHaveLength(1)
    expect(JSON.parse(warned[0]!).err).toContain('disk full')
    expect(hashes()).toEqual([])
  })
})

describe('4. an account that must change its generated password can sign out', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp()
  })
  afterAll(() => t.close())

  const mustChange = async (login: number) => {
    await t.ctx.db.update(accounts).set({ mustChangePassword: 1 }).where(eq(accounts.login, login))
    await t.ports.get(AccountsPort).read.invalidateAccount(login)
  }

  test('POST /sign/out ends the session and clears the cookie; other routes still ask for the change', async () => {
    await mustChange(100002)
    const signedIn = await signIn(t, 100002, 'demo-pass-1')
    expect(signedIn.json.must_change_password).toBe(true)
    const token = signedIn.json.__token
    const refused = await t.request('GET', '/account/me', { token })
    expect([refused.status, refused.json.error]).toEqual([403, 'PASSWORD_CHANGE_REQUIRED'])
    const out = await t.request('POST', '/sign/out', { token })
    expect(out.status).toBe(200)
    expect(out.headers.get('set-cookie')).toMatch(/Max-Age=0/i)
    expect((await t.request('GET', '/account/me', { token })).status).toBe(401)
  })

  test('POST /sign/out/all ends every session of the account', async () => {
    await mustChange(100003)
    const [a, b] = [
      (await signIn(t, 100003, 'demo-pass-1')).json.__token,
      (await signIn(t, 100003, 'demo-pass-1')).json.__token,
    ]
    expect((await t.request('POST', '/sign/out/all', { token: a })).status).toBe(200)
    for (const token of [a, b]) expect((await t.request('GET', '/account/me', { token })).status).toBe(401)
  })
})

describe('5. prevbalance and prevmonthbalance: the balance at the end of the previous day and month', () => {
  const HOUR = 3_600_000
  const clock = new ManualClock(Date.UTC(2026, 9, 30, 12, 0, 0))
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp({ clock, env: { TOKEN_TTL_SECONDS: String(30 * 86400) } })
  })
  afterAll(() => t.close())

  /** Runs the day-close job on `app`, waiting out a run the runner's own timer started. */
  async function closeDays(app = t) {
    for (let i = 0; ; i++)
      try {
        return await app.runJob('accounts.day-close')
      } catch (e) {
        if (i >= 50) throw e
        await Bun.sleep(20)
      }
  }
  const deposit = async (amount: number) => {
    const r = await t.request('POST', '/manager/accounts/100002/balance', {
      token: await t.staffToken(),
      body: { type: 'deposit', amount },
    })
    expect(r.status).toBe(200)
  }
  const figures = async () => {
    const me = (await t.request('GET', '/account/me', { token: await t.userToken(100002) })).json
    return { balance: me.balance, prev: me.prevbalance, prevMonth: me.prevmonthbalance }
  }

  test('the closes of a moment: the day and the month it is in, in UTC', () => {
    expect(closingTimes(Date.UTC(2028, 1, 29, 23, 59, 59, 999))).toEqual({
      day: Math.floor(Date.UTC(2028, 1, 29) / 86_400_000),
      dayStart: Date.UTC(2028, 1, 29),
      month: '2028-02',
      monthStart: Date.UTC(2028, 1, 1),
    })
    const newYear = closingTimes(Date.UTC(2027, 0, 1))
    expect([newYear.dayStart, newYear.month, newYear.monthStart]).toEqual([
      Date.UTC(2027, 0, 1),
      '2027-01',
      Date.UTC(2027, 0, 1),
    ])
  })

  test('each day end and month end, from the ledger as of that moment, however late the job runs', async () => {
    const start = (await figures()).balance
    await deposit(100)
    // 31 October, 00:30: a deposit made after midnight, before the job ran, is not the previous day's
    clock.set(Date.UTC(2026, 9, 31, 0, 30))
    await deposit(50)
    await closeDays()
    expect(await figures()).toEqual({ balance: start + 150, prev: start + 100, prevMonth: 0 })
    // again the same day: nothing changes
    await deposit(5)
    await closeDays()
    expect(await figures()).toEqual({ balance: start + 155, prev: start + 100, prevMonth: 0 })
    // 1 November, 00:00:30: the day is closed a minute after it ended (a commit still under way)
    clock.set(Date.UTC(2026, 10, 1, 0, 0, 30))
    await closeDays()
    expect(await figures()).toEqual({ balance: start + 155, prev: start + 100, prevMonth: 0 })
    // then October is closed at the balance of its end
    clock.set(Date.UTC(2026, 10, 1, 0, 2))
    await closeDays()
    expect(await figures()).toEqual({ balance: start + 155, prev: start + 155, prevMonth: start + 155 })
    await deposit(25)
    // 3 November (a day without a run in between): the previous day's close, the month's kept
    clock.set(Date.UTC(2026, 10, 3, 6, 0))
    await closeDays()
    expect(await figures()).toEqual({ balance: start + 180, prev: start + 180, prevMonth: start + 155 })
    clock.advance(HOUR)
  })

  test('runs at once on two instances write the same closes (read from the ledger, nothing to double)', async () => {
    const other = await makeTestApp({
      clock,
      seed: false,
      env: { DATABASE_URL: t.config.database.url, TOKEN_TTL_SECONDS: String(30 * 86400) },
    })
    try {
      await deposit(1)
      clock.set(Date.UTC(2026, 10, 4, 0, 5))
      // each instance its own store (no shared marks): both close the day
      await Promise.all([closeDays(), closeDays(other)])
      const f = await figures()
      expect(f.prev).toBe(f.balance)
    } finally {
      await other.close()
    }
  })
})

describe('6. a balance past 2^53 - 1 minor units is refused', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp()
  })
  afterAll(() => t.close())

  test('a deposit or a credit that would take the total past it: 400 INVALID_DATA naming amount, nothing written', async () => {
    const manager = await t.staffToken()
    const g = await t.request('POST', '/manager/groups', {
      token: manager,
      body: { name: 'real\\BTC', account_mode: 'REAL', currency: 'BTC', leverage: 100 },
    })
    expect(g.status).toBe(200)
    const acct = await t.request('POST', '/manager/accounts', {
      token: manager,
      body: { group: 'real\\BTC', password: 'btc-account-1' },
    })
    const login = acct.json.login
    const op = (type: string) =>
      t.request('POST', `/manager/accounts/${login}/balance`, {
        token: manager,
        body: { type, amount: 90_000_000 },
      })
    for (const type of ['deposit', 'credit_in']) {
      expect((await op(type)).status).toBe(200)
      const second = await op(type)
      expect([second.status, second.json.error]).toEqual([400, 'INVALID_DATA'])
      expect(second.json.message).toStartWith('amount:')
    }
    const read = await t.request('GET', `/manager/accounts/${login}`, { token: manager })
    expect(read.status).toBe(200)
    expect([read.json.balance, read.json.credit]).toEqual([90_000_000, 90_000_000])
    const ops = await t.request('GET', `/manager/accounts/${login}/operations`, { token: manager })
    expect(ops.json.rows).toHaveLength(2)
  })
})

describe('7. only openings that happen use the daily allowance', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp({ env: { ACCOUNT_OPEN_MAX_PER_DAY: '2' } })
  })
  afterAll(() => t.close())

  test('refused openings give their count back, to the customer and to the address', async () => {
    const customer = await t.customerToken()
    const open = (body: Record<string, unknown>, token = customer) =>
      t.request('POST', '/customer/accounts', { token, body: { password: 'abcdefg1', ...body } })
    expect((await open({ group: 'demo\\USDD' })).status).toBe(404)
    expect((await open({ group: 'demo\\USD', leverage: 7 })).status).toBe(400)
    expect((await open({ group: 'demo\\USD' })).status).toBe(200)
    expect((await open({ group: 'demo\\USD' })).status).toBe(200)
    const third = await open({ group: 'demo\\USD' })
    expect([third.status, third.json.error]).toEqual([429, 'TOO_MANY_REQUESTS'])
    // the address (every in-process request shares one) has used its two openings as well
    const master = await t.customerToken('master@example.com', 'master-pass-1')
    expect((await open({ group: 'demo\\USD' }, master)).status).toBe(429)
  })
})

describe('8. password lengths count characters, not UTF-16 units', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp()
  })
  afterAll(() => t.close())
  const forty = '😀'.repeat(40)
  const four = 'ab😀😀'

  test('40 emoji are a valid password everywhere; 4 characters (6 units) are not', async () => {
    const manager = await t.staffToken()
    const set = await t.request('PUT', '/password', {
      token: manager,
      body: { login: 100002, password: forty },
    })
    expect(set.status).toBe(200)
    const token = (await signIn(t, 100002, forty)).json.__token
    expect(token).toBeString()
    const changed = await changePassword(t, token, forty, `${forty}x`)
    expect(changed.status).toBe(200)
    const customer = await t.customerToken()
    const reset = await t.request('PUT', '/customer/accounts/100002/password', {
      token: customer,
      body: { password: '界'.repeat(64) },
    })
    expect(reset.status).toBe(200)
    expect((await signIn(t, 100002, '界'.repeat(64))).status).toBe(200)

    const refusals = [
      [
        'PUT /password',
        'password',
        await t.request('PUT', '/password', { token: manager, body: { login: 100002, password: four } }),
      ],
      [
        'POST /customer/register',
        'password',
        await t.request('POST', '/customer/register', {
          body: { email: 'x@example.com', password: four, name: 'X' },
        }),
      ],
      [
        'PUT /customer/accounts/{login}/password',
        'password',
        await t.request('PUT', '/customer/accounts/100002/password', {
          token: customer,
          body: { password: four },
        }),
      ],
      [
        'PUT /account/password',
        'new_password',
        await changePassword(
          t,
          (await signIn(t, 100002, '界'.repeat(64))).json.__token,
          '界'.repeat(64),
          four,
        ),
      ],
      [
        'POST /customer/accounts',
        'password',
        await t.request('POST', '/customer/accounts', {
          token: customer,
          body: { group: 'demo\\USD', password: four },
        }),
      ],
      [
        'POST /manager/accounts',
        'password',
        await t.request('POST', '/manager/accounts', {
          token: manager,
          body: { group: 'demo\\USD', password: four },
        }),
      ],
      [
        'POST /manager/affiliates',
        'password',
        await t.request('POST', '/manager/affiliates', {
          token: manager,
          body: { email: 'p8@example.com', code: 'PROBE8', password: four },
        }),
      ],
    ] as const
    for (const [route, field, r] of refusals) {
      expect([route, r.status, r.json.error]).toEqual([route, 400, 'INVALID_DATA'])
      // the field and its rule, in words (not the pattern that counts characters)
      expect([route, r.json.message]).toEqual([route, `${field}: 6..64 characters`])
    }
    // a sign-in checks a password, it does not set one: past 64 characters it is refused as such (and under 6
    // UTF-16 units, as before: tests/integration/auth.test.ts)
    for (const r of [
      await signIn(t, 100002, '😀'.repeat(65)),
      await t.request('POST', '/manager/sign/in', { body: { login: 1, password: '😀'.repeat(65) } }),
      await t.request('POST', '/customer/sign/in', {
        body: { email: 'demo@example.com', password: '😀'.repeat(65) },
      }),
    ])
      expect([r.status, r.json.message]).toEqual([400, 'password: 6..64 characters'])
  })

  // a reviewer's finding: staff set a cabinet password counted in characters, the cabinet's sign-in still
  // counted UTF-16 units
  test('an affiliate cabinet password of 40 emoji set by staff signs in at the cabinet', async () => {
    const created = await t.request('POST', '/manager/affiliates', {
      token: await t.staffToken(),
      body: { email: 'emoji@example.com', code: 'EMOJI1', password: forty },
    })
    expect(created.status).toBe(200)
    const cabinet = 'affiliates.localhost'
    const r = await t.request('POST', '/api/affiliate/login', {
      host: cabinet,
      body: { login: 'emoji@example.com', password: forty },
      headers: { origin: `http://${cabinet}` },
    })
    expect(r.status).toBe(200)
  })

  // a reviewer's finding: the sign-in bodies took the rule for setting a password, so one set before it
  // (6 UTF-16 units, fewer characters) could no longer sign in
  test('a password set under the old count (4 characters, 6 units) still signs in: only a new one is held to 6', async () => {
    await t.ctx.db
      .update(accounts)
      .set({ passwordHash: await hashPassword(four) })
      .where(eq(accounts.login, 100003))
    expect((await signIn(t, 100003, four)).status).toBe(200)
    expect((await signIn(t, 100003, 'ab😀😀x')).status).not.toBe(200)
  })
})
