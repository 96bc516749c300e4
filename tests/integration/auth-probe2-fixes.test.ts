// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Fixes of the second auth probe (.tmp/probe-auth2): sign-in timing of generated passwords, Unicode
// normalization of passwords, and the replayed challenge purchase's must_change_password.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { PASSWORD_PARAMS } from '../../src/kernel/auth/passwords'
import { accounts, customers } from '../../src/modules/accounts/schema'
import { staff } from '../../src/modules/auth/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { evaluationProgram } from '../support/prop'

let t: TestApp
let manager: string
let customer: string
let program: number
beforeAll(async () => {
  t = await makeTestApp()
  manager = await t.staffToken()
  customer = await t.customerToken()
  const created = await t.request('POST', '/manager/prop/programs', {
    token: manager,
    body: evaluationProgram({ profit_target_pct: 10, daily_loss_pct: 5, total_loss_pct: 10 }),
  })
  expect(created.status).toBe(200)
  program = created.json.id
})
afterAll(() => t.close())

const FULL = `$argon2id$v=19$m=${PASSWORD_PARAMS.m},t=${PASSWORD_PARAMS.t},p=${PASSWORD_PARAMS.p}$`

describe('sign-in timing (probe auth2, finding 1)', () => {
  /** The median of several wrong-password sign-ins of `login`, in milliseconds. */
  async function wrongPasswordMs(login: number, n = 7) {
    const ms: number[] = []
    for (let i = 0; i < n; i++) {
      const s = performance.now()
      const r = await t.request('POST', '/sign/in', { body: { login, password: `wrong-pass-${i}` } })
      ms.push(performance.now() - s)
      expect(r.json?.error).toBe('USER_NOT_FOUND_OR_INCORRECT')
    }
    ms.sort((a, b) => a - b)
    return ms[Math.floor(n / 2)]!
  }

  test('a wrong password costs the same for a temporary-password account and for a login that does not exist', async () => {
    const buy = await t.request('POST', '/prop/challenge/buy', {
      token: customer,
      body: { program_id: program, payer_login: 100001 },
    })
    expect(buy.status).toBe(200)
    const login = buy.json.account.login as number
    // warm-up: the dummy hash is made once a process
    await wrongPasswordMs(999_998, 1)
    const missing = await wrongPasswordMs(999_999)
    const temporary = await wrongPasswordMs(login)
    const ordinary = await wrongPasswordMs(100002)
    // medians within a factor of 3 of each other (a full-cost check is tens of milliseconds, a check of a
    // generated password's hash alone about one): generous for a busy 2-core host
    expect(temporary * 3).toBeGreaterThan(missing)
    expect(temporary * 3).toBeGreaterThan(ordinary)
    // the generated password itself still signs in
    const ok = await t.request('POST', '/sign/in', {
      body: { login, password: buy.json.temporary_password },
    })
    expect(ok.status).toBe(200)
    expect(ok.json.must_change_password).toBe(true)
  }, 60_000)
})

describe('Unicode normalization of passwords (probe auth2, finding 2)', () => {
  const nfc = 'Passw\u00f6rd-1'
  const nfd = nfc.normalize('NFD')

  test('a password set in NFC signs in when typed in NFD', async () => {
    expect(nfd).not.toBe(nfc)
    const reg = await t.request('POST', '/customer/register', {
      body: { email: 'nfc.user@example.com', password: nfc, name: 'N' },
    })
    expect(reg.status).toBe(200)
    const same = await t.request('POST', '/customer/sign/in', {
      body: { email: 'nfc.user@example.com', password: nfc },
    })
    expect(same.status).toBe(200)
    const other = await t.request('POST', '/customer/sign/in', {
      body: { email: 'nfc.user@example.com', password: nfd },
    })
    expect(other.status).toBe(200)
  }, 60_000)

  test('an account and a staff password set in NFD sign in typed in NFC, and full-width letters as ASCII', async () => {
    const set = await t.request('PUT', '/password', {
      token: manager,
      body: { login: 100003, password: nfd },
    })
    expect(set.status).toBe(200)
    expect((await t.request('POST', '/sign/in', { body: { login: 100003, password: nfc } })).status).toBe(200)
    // NFKC: a full-width "Ｐ" is the letter P
    const wide = `\uff30${nfc.slice(1)}`
    expect((await t.request('POST', '/sign/in', { body: { login: 100003, password: wide } })).status).toBe(
      200,
    )
    // staff: a hash of the NFD text made the way hashPassword now makes one (of its NFKC form)
    await t.ctx.db
      .update(staff)
      .set({ passwordHash: await Bun.password.hash(nfd.normalize('NFKC'), { algorithm: 'argon2id' }) })
      .where(eq(staff.login, 2))
    expect((await t.request('POST', '/manager/sign/in', { body: { login: 2, password: nfd } })).status).toBe(
      200,
    )
    expect((await t.request('POST', '/manager/sign/in', { body: { login: 2, password: nfc } })).status).toBe(
      200,
    )
  }, 60_000)

  test('a hash of a password as typed before normalization still signs in, and is replaced by one of its NFKC form', async () => {
    const legacy = await Bun.password.hash(nfd, {
      algorithm: 'argon2id',
      memoryCost: PASSWORD_PARAMS.m,
      timeCost: PASSWORD_PARAMS.t,
    })
    await t.ctx.db
      .update(customers)
      .set({ passwordHash: legacy })
      .where(eq(customers.email, 'demo@example.com'))
    const stored = async () =>
      (await t.ctx.db.select().from(customers).where(eq(customers.email, 'demo@example.com')))[0]!
        .passwordHash
    // a wrong password changes nothing
    const wrong = await t.request('POST', '/customer/sign/in', {
      body: { email: 'demo@example.com', password: 'Passw\u00f6rd-2'.normalize('NFD') },
    })
    expect(wrong.status).toBe(403)
    expect(await stored()).toBe(legacy)
    const first = await t.request('POST', '/customer/sign/in', {
      body: { email: 'demo@example.com', password: nfd },
    })
    expect(first.status).toBe(200)
    const now = await stored()
    expect(now).not.toBe(legacy)
    expect(now).toStartWith(FULL)
    expect(await Bun.password.verify(nfd.normalize('NFKC'), now)).toBe(true)
    // both forms sign in from now on, and the first session stands
    for (const password of [nfd, nfc])
      expect(
        (await t.request('POST', '/customer/sign/in', { body: { email: 'demo@example.com', password } }))
          .status,
      ).toBe(200)
    expect((await t.request('GET', '/customer/me', { token: first.json.__token })).status).toBe(200)
  }, 60_000)

  test('a new password shorter than 6 characters once normalized is refused, 400 INVALID_DATA naming the field', async () => {
    // 6 characters as typed (e + U+0301), 5 once normalized: a sign-in typing it precomposed is refused
    const short = 'abcde\u0301'
    expect([...short].length).toBe(6)
    const reg = await t.request('POST', '/customer/register', {
      body: { email: 'short.nfd@example.com', password: short, name: 'S' },
    })
    expect(reg.status).toBe(400)
    expect(reg.json.error).toBe('INVALID_DATA')
    expect(reg.json.message).toContain('password')
    const set = await t.request('PUT', '/password', {
      token: manager,
      body: { login: 100003, password: short },
    })
    expect(set.status).toBe(400)
    expect(set.json.error).toBe('INVALID_DATA')
    // the account's password is the one set before
    expect((await t.request('POST', '/sign/in', { body: { login: 100003, password: nfc } })).status).toBe(200)
  }, 60_000)
})

describe('replayed challenge purchase (probe auth2, finding 3)', () => {
  test('a repeated POST /prop/challenge/buy answers must_change_password as the account stands now', async () => {
    const body = { program_id: program, payer_login: 100001, idempotency_key: 'auth-probe2-replay' }
    const first = await t.request('POST', '/prop/challenge/buy', { token: customer, body })
    expect(first.status).toBe(200)
    expect(first.json.must_change_password).toBe(true)
    const login = first.json.account.login as number
    const again = await t.request('POST', '/prop/challenge/buy', { token: customer, body })
    expect(again.json.idempotent).toBe(true)
    expect(again.json.must_change_password).toBe(true)
    const set = await t.request('PUT', `/customer/accounts/${login}/password`, {
      token: customer,
      body: { password: 'challenge-pass-1' },
    })
    expect(set.status).toBe(200)
    const [row] = await t.ctx.db.select().from(accounts).where(eq(accounts.login, login))
    expect(row!.mustChangePassword).toBe(0)
    const later = await t.request('POST', '/prop/challenge/buy', { token: customer, body })
    expect(later.status).toBe(200)
    expect(later.json.idempotent).toBe(true)
    expect(later.json.account.login).toBe(login)
    expect(later.json.must_change_password).toBe(false)
  }, 60_000)
})
