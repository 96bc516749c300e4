// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// What a hostile client and a first-time user found in cashier, KYC and prop (issue 27): each case
// failed before its fix.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { accounts, balanceOperations } from '../../src/modules/accounts/schema'
import type { sandboxEvent } from '../../src/modules/cashier/providers/sandbox'
import { orders } from '../../src/modules/trading/schema'
import { makeTestApp, type TestApp } from '../support/app'
import { sandboxWebhook } from '../support/cashier'
import { PERSONAL_ANSWERS } from '../support/kyc'

let t: TestApp
let customer: string
let manager: string
let dealer: string
let programs: Record<string, number>

beforeAll(async () => {
  t = await makeTestApp()
  customer = await t.customerToken()
  manager = await t.staffToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  const list = await t.request('GET', '/prop/programs', { token: customer })
  programs = Object.fromEntries(list.json.rows.map((p: { name: string; id: number }) => [p.name, p.id]))
})
afterAll(() => t.close())

const post = (path: string, body: unknown, token = customer) => t.request('POST', path, { token, body })
const me = async (login = 100001) =>
  (await t.request('GET', `/account/me?login=${login}`, { token: customer })).json
const deposit = (body: Record<string, unknown>) =>
  post('/cashier/deposit', { login: 100001, method: 'card', ...body })
const webhook = (id: string, type: Parameters<typeof sandboxEvent>[1], tx: { id: number; amount: number }) =>
  sandboxWebhook(t, id, type, tx)
const staffTx = async (id: number) =>
  (await t.request('GET', `/manager/cashier/transactions/${id}`, { token: manager })).json
const staffBalance = (login: number, type: 'deposit' | 'withdrawal', amount: number) =>
  post(`/manager/accounts/${login}/balance`, { type, amount, comment: 'test' }, manager)

async function ledgerIsBalance(login: number) {
  const ops = await t.ctx.db.select().from(balanceOperations).where(eq(balanceOperations.login, login))
  const [a] = await t.ctx.db.select().from(accounts).where(eq(accounts.login, login))
  expect(ops.reduce((s, o) => s + o.amount, 0)).toBe(a!.balance)
}

/** A deposit credited by a signed webhook. */
async function credited(amount: number, key: string) {
  const d = await deposit({ amount, idempotency_key: key })
  expect(d.status).toBe(200)
  const tx = { id: d.json.transaction.id as number, amount: amount * 100 }
  expect((await webhook(`evt-${key}-ok`, 'payment.succeeded', tx)).status).toBe(200)
  const row = await staffTx(tx.id)
  if (row.status_name !== 'credited') console.log(JSON.stringify(row))
  expect(row.status_name).toBe('credited')
  return tx
}

describe('money', () => {
  test('4: more decimals than the currency has is refused at any size', async () => {
    for (const amount of [20.004, 5000.004, 0.001]) {
      const r = await deposit({ amount })
      expect(r.status).toBe(400)
      expect(r.json.error).toBe('INVALID_DATA')
      expect(r.json.message).toStartWith('amount:')
    }
    expect((await deposit({ amount: 20.01 })).status).toBe(200)
  })

  test('3: an idempotency key reused for another request is 409 IDEMPOTENCY_KEY_REUSED; the same request replays', async () => {
    const first = await deposit({ amount: 100, idempotency_key: 'reuse-key-0001' })
    expect(first.status).toBe(200)
    const same = await deposit({ amount: 100, idempotency_key: 'reuse-key-0001' })
    expect(same.json.idempotent).toBe(true)
    const other = await deposit({ amount: 200, idempotency_key: 'reuse-key-0001' })
    expect(other.status).toBe(409)
    expect(other.json.error).toBe('IDEMPOTENCY_KEY_REUSED')
    const withdrawal = await post('/cashier/withdrawal', {
      login: 100001,
      method: 'wire',
      amount: 100,
      idempotency_key: 'reuse-key-0001',
    })
    expect(withdrawal.status).toBe(409)
    expect(withdrawal.json.error).toBe('IDEMPOTENCY_KEY_REUSED')
    // prop purchases: the same key for another program
    const buy = await post('/prop/challenge/buy', {
      program_id: programs['Two-Step 10k'],
      payer_login: 100001,
      idempotency_key: 'buy-key-00000001',
    })
    expect(buy.status).toBe(200)
    const replay = await post('/prop/challenge/buy', {
      program_id: programs['Two-Step 10k'],
      payer_login: 100001,
      idempotency_key: 'buy-key-00000001',
    })
    expect(replay.json.idempotent).toBe(true)
    const reused = await post('/prop/challenge/buy', {
      program_id: programs['One-Step 10k'],
      payer_login: 100001,
      idempotency_key: 'buy-key-00000001',
    })
    expect(reused.status).toBe(409)
    expect(reused.json.error).toBe('IDEMPOTENCY_KEY_REUSED')
  })

  test('1: a provider refund of money still on the balance takes it back, unflagged', async () => {
    const before = (await me()).balance
    const tx = await credited(300, 'refund-covered')
    expect((await me()).balance).toBe(before + 300)
    expect((await webhook('evt-refund-covered-back', 'payment.refunded', tx)).status).toBe(200)
    const row = await staffTx(tx.id)
    expect(row.status_name).toBe('refunded')
    expect(row.flagged).toBe(false)
    expect((await me()).balance).toBe(before)
    await ledgerIsBalance(100001)
  })

  // a hostile client's probe: a staff refund left positions without margin (stopped out, the balance at
  // -3,070), and a chargeback whose money the positions' loss had already spent was flagged short by nothing
  test('1: with positions open, a staff refund keeps them covered, and a chargeback flags what the equity lacks', async () => {
    const user = await t.userToken(100001)
    const eurusd = (bid: number) =>
      post('/market/quotes', { ticks: [{ symbol: 'EURUSD', bid, ask: bid + 0.0002 }] }, dealer)
    expect((await eurusd(1.1)).status).toBe(200)
    const tx = await credited(1000, 'refund-with-positions')
    // 3,000 on the balance, then 1 lot (about 1,100 of margin)
    const start = (await me()).balance as number
    expect((await staffBalance(100001, 'withdrawal', Math.round((start - 3000) * 100) / 100)).status).toBe(
      200,
    )
    const open = await t.request('POST', '/trade/open', {
      token: user,
      body: { login: 100001, cmd: 0, volume: 100, symbol: 'EURUSD', sl: 0, tp: 0 },
    })
    expect(open.status).toBe(200)
    // a loss of about 1,500: equity near 1,500, free margin near 400, under the refund's 1,000
    expect((await eurusd(1.085)).status).toBe(200)
    const before = await me()
    expect(before.margin_free).toBeLessThan(1000)
    expect(before.balance).toBe(3000)
    const refused = await post(`/manager/cashier/transactions/${tx.id}/refund`, { note: 'asked' }, manager)
    expect([refused.status, refused.json.error]).toEqual([400, 'NOT_ENOUGH_FREE_MARGIN'])
    expect((await staffTx(tx.id)).status_name).toBe('credited')
    expect((await me()).balance).toBe(3000)
    // the price falls on: the equity (about 980) is less than the deposit a chargeback then takes back
    expect((await eurusd(1.08)).status).toBe(200)
    const equity = (await me()).equity as number
    expect(equity).toBeLessThan(1000)
    expect(equity).toBeGreaterThan(0)
    expect((await webhook('evt-refund-with-positions-cb', 'payment.disputed', tx)).status).toBe(200)
    const row = await staffTx(tx.id)
    expect(row.status_name).toBe('chargeback')
    expect((await me()).balance).toBe(2000)
    expect(row.flagged).toBe(true)
    expect(row.staff_note).toContain(`short by ${Math.round((1000 - equity) * 100) / 100} USD`)
    await ledgerIsBalance(100001)
    // back to where it was: the position closed, 10,000
    // below zero equity the engine stops the position out (a close of ours races it)
    let state = ''
    for (let i = 0; i < 50 && state !== 'closed'; i++) {
      const [o] = await t.ctx.db.select().from(orders).where(eq(orders.ticket, open.json.order))
      state = o!.state
      if (state !== 'closed') await Bun.sleep(20)
    }
    expect(state).toBe('closed')
    expect((await eurusd(1.1)).status).toBe(200)
    const left = (await me()).balance as number
    expect((await staffBalance(100001, 'deposit', Math.round((10_000 - left) * 100) / 100)).status).toBe(200)
  })

  test('1: a provider refund of money already spent is recorded all the same: the balance goes negative, flagged with the shortfall', async () => {
    const tx = await credited(500, 'refund-spent')
    // the customer spends all but 53
    const balance = (await me()).balance as number
    expect((await staffBalance(100001, 'withdrawal', Math.round((balance - 53) * 100) / 100)).status).toBe(
      200,
    )
    expect((await me()).balance).toBe(53)
    expect((await webhook('evt-refund-spent-back', 'payment.refunded', tx)).status).toBe(200)
    const row = await staffTx(tx.id)
    expect(row.status_name).toBe('refunded')
    expect(row.flagged).toBe(true)
    expect(row.staff_note).toContain('short by 447 USD')
    expect((await me()).balance).toBe(-447)
    await ledgerIsBalance(100001)
    // a refund staff start needs the money: refused while the balance is short
    const again = await credited(100, 'refund-staff')
    const refused = await post(`/manager/cashier/transactions/${again.id}/refund`, { note: 'asked' }, manager)
    expect(refused.status).toBe(400)
    expect(refused.json.error).toBe('NOT_ENOUGH_FUNDS')
    // back to 10,000 for what follows
    expect((await staffBalance(100001, 'deposit', 10_000 - (await me()).balance)).status).toBe(200)
  })

  test('2: the prop fee needs free margin, as a withdrawal does; preview and payers say so too', async () => {
    expect(
      (await post('/market/quotes', { ticks: [{ symbol: 'BTCUSD', bid: 43_000, ask: 43_030 }] }, dealer))
        .status,
    ).toBe(200)
    const user = await t.userToken()
    const open = (volume: number) =>
      t.request('POST', '/trade/open', {
        token: user,
        body: { login: 100001, cmd: 0, volume, symbol: 'BTCUSD', sl: 0, tp: 0 },
      })
    const free0 = (await me()).margin_free as number
    expect((await open(100)).status).toBe(200)
    const free1 = (await me()).margin_free as number
    // leave between 20 and 90 of free margin, far less than the 99 of the fee, with the balance above it
    const perHundredth = (free0 - free1) / 100
    let rest = Math.floor((free1 - 55) / perHundredth)
    while (rest > 0) {
      const v = Math.min(rest, 10_000)
      expect((await open(v)).status).toBe(200)
      rest -= v
    }
    const m = await me()
    expect(m.margin_free).toBeGreaterThan(0)
    expect(m.margin_free).toBeLessThan(99)
    expect(m.balance).toBeGreaterThan(99)
    const body = { program_id: programs['Two-Step 10k'], payer_login: 100001 }
    const buy = await post('/prop/challenge/buy', body)
    expect(buy.status).toBe(400)
    expect(buy.json.error).toBe('NOT_ENOUGH_FUNDS')
    expect(buy.json.message).toContain('free margin')
    const preview = await post('/prop/challenge/buy/preview', body)
    expect(preview.json).toMatchObject({ can_buy: false, reason: 'NOT_ENOUGH_FUNDS', effects: [] })
    const payers = await t.request('GET', `/prop/programs/${body.program_id}/payers`, { token: customer })
    expect(payers.json.rows.find((r: { login: number }) => r.login === 100001)).toMatchObject({
      can_pay: false,
      reason: 'NOT_ENOUGH_FUNDS',
    })
    await t.request('DELETE', '/trade/close/group', { token: user, body: { login: 100001, type: 0 } })
  })

  test('6: preview and buy give one code for a DEMO payer, and the preview promises no effects', async () => {
    const body = { program_id: programs['Two-Step 10k'], payer_login: 100002 }
    const preview = await post('/prop/challenge/buy/preview', body)
    expect(preview.json).toMatchObject({ can_buy: false, reason: 'PAYER_ACCOUNT_NOT_REAL', effects: [] })
    const buy = await post('/prop/challenge/buy', body)
    expect(buy.status).toBe(400)
    expect(buy.json.error).toBe('PAYER_ACCOUNT_NOT_REAL')
    expect(preview.json.reason_message).toBe(buy.json.message)
  })

  test('5: a free program is one trial per period by default; the code says which limit', async () => {
    const body = { program_id: programs['Free Trial 10k'], payer_login: 100001 }
    const program = (await t.request('GET', `/prop/programs/${body.program_id}`, { token: customer })).json
    expect(program).toMatchObject({
      limits: { per_period: 1, period_days: 30, active: 1 },
      limits_default: true,
    })
    expect((await post('/prop/challenge/buy', body)).status).toBe(200)
    const preview = await post('/prop/challenge/buy/preview', body)
    expect(preview.json).toMatchObject({ can_buy: false, reason: 'PURCHASE_LIMIT_PER_PERIOD' })
    // twelve more attempts, some at once: none opens a second trial
    const more = await Promise.all(Array.from({ length: 12 }, () => post('/prop/challenge/buy', body)))
    for (const r of more) {
      expect(r.status).toBe(400)
      expect(r.json.error).toBe('PURCHASE_LIMIT_PER_PERIOD')
      expect(r.json.message).toContain('1 time(s) in 30 days')
    }
    const mine = await t.request('GET', '/prop/purchases', { token: customer })
    expect(
      mine.json.rows.filter((p: { program_id: number }) => p.program_id === body.program_id),
    ).toHaveLength(1)
  })
})

describe('accounts with generated passwords', () => {
  test('7, 9: a challenge account must set its own password; the customer can set it; the generated one is hashed fast', async () => {
    const b = await post('/prop/challenge/buy', { program_id: programs['One-Step 10k'], payer_login: 100001 })
    expect(b.status).toBe(200)
    const login = b.json.account.login as number
    const [row] = await t.ctx.db.select().from(accounts).where(eq(accounts.login, login))
    expect(row!.passwordHash).toStartWith('$argon2id$v=19$m=1024,t=1,p=1$')
    expect(row!.mustChangePassword).toBe(1)
    // the temporary password signs in, and nothing but the password change is open to it
    const s = await post('/sign/in', { login, password: b.json.temporary_password }, '')
    expect(s.status).toBe(200)
    expect(s.json.must_change_password).toBe(true)
    const temp = s.json.__token as string
    const refused = await t.request('GET', '/account/me', { token: temp })
    expect(refused.status).toBe(403)
    expect(refused.json.error).toBe('PASSWORD_CHANGE_REQUIRED')
    const trade = await t.request('POST', '/trade/open', {
      token: temp,
      body: { login, cmd: 0, volume: 1, symbol: 'BTCUSD', sl: 0, tp: 0 },
    })
    expect(trade.json.error).toBe('PASSWORD_CHANGE_REQUIRED')
    const wrong = await t.request('PUT', '/account/password', {
      token: temp,
      body: { password: 'not-the-one', new_password: 'mine-pass-1' },
    })
    expect(wrong.json.error).toBe('INCORRECT_PASSWORD')
    const changed = await t.request('PUT', '/account/password', {
      token: temp,
      body: { password: b.json.temporary_password, new_password: 'mine-pass-1' },
    })
    expect(changed.status).toBe(200)
    // every session of the account ended, this one too
    expect((await t.request('GET', '/account/me', { token: temp })).status).toBe(401)
    const mine = await post('/sign/in', { login, password: 'mine-pass-1' }, '')
    expect(mine.json.must_change_password).toBe(false)
    expect((await t.request('GET', '/account/me', { token: mine.json.__token })).status).toBe(200)

    // a lost password: the owner sets a new one, and the account's sessions end
    const reset = await t.request('PUT', `/customer/accounts/${login}/password`, {
      token: customer,
      body: { password: 'reset-pass-1' },
    })
    expect(reset.status).toBe(200)
    expect((await t.request('GET', '/account/me', { token: mine.json.__token })).status).toBe(401)
    expect((await post('/sign/in', { login, password: 'reset-pass-1' }, '')).status).toBe(200)
    // staff forbade the account to change its password: the owner's route obeys it too (a probe: it did not)
    const forbid = (flag: number) =>
      t.request('PATCH', `/manager/accounts/${login}`, {
        token: manager,
        body: { enable_change_password: flag },
      })
    expect((await forbid(0)).status).toBe(200)
    const forbidden = await t.request('PUT', `/customer/accounts/${login}/password`, {
      token: customer,
      body: { password: 'other-pass-1' },
    })
    expect([forbidden.status, forbidden.json.error]).toEqual([403, 'CHANGE_PASSWORD_DISABLED'])
    expect((await post('/sign/in', { login, password: 'reset-pass-1' }, '')).status).toBe(200)
    expect((await forbid(1)).status).toBe(200)
    // not the customer's: 404, whatever exists
    for (const other of [200001, 999999]) {
      const r = await t.request('PUT', `/customer/accounts/${other}/password`, {
        token: customer,
        body: { password: 'reset-pass-1' },
      })
      expect(r.status).toBe(404)
    }
  })
})

describe('validation', () => {
  const register = (extra: Record<string, unknown>) =>
    post(
      '/customer/register',
      { email: `v${Math.random()}@example.com`, password: 'reg-pass-1', name: 'Ada', ...extra },
      '',
    )

  test('10: country codes come from ISO 3166-1; control and bidi-override characters are refused in every free-text field', async () => {
    expect((await register({ country: 'GB' })).status).toBe(200)
    const xx = await register({ country: 'XX' })
    expect(xx.status).toBe(400)
    expect(xx.json.message).toStartWith('country:')
    for (const name of ['Ada\u0000', 'Ada\u202Egnp.exe', 'Ada\u2066x', 'Ada\u0007']) {
      const r = await register({ name })
      expect(r.status).toBe(400)
      expect(r.json.message).toBe('name: control or bidirectional-override characters are not allowed')
    }
    // right-to-left text itself is fine
    expect((await register({ name: 'עדה' })).status).toBe(200)
    // any body: nested fields are named by their path
    const nested = await post(
      '/market/quotes',
      { ticks: [{ symbol: 'EUR\u202EUSD', bid: 1, ask: 1.1 }] },
      dealer,
    )
    expect(nested.json.message).toBe(
      'ticks.0.symbol: control or bidirectional-override characters are not allowed',
    )
  })

  test('10: KYC: nationality XX, a birth date of year 1, and a name with NUL are refused, naming the field', async () => {
    const submit = (answers: Record<string, unknown>) =>
      post('/customer/kyc/steps/personal/submit', { answers: { ...PERSONAL_ANSWERS, ...answers } })
    const cases: [Record<string, unknown>, string][] = [
      [{ nationality: 'XX' }, 'answers.nationality:'],
      [{ country: 'ZZ' }, 'answers.country:'],
      [{ date_of_birth: '0001-01-01' }, 'answers.date_of_birth: more than 120 years ago'],
      [{ first_name: 'A\u0000da' }, 'answers.first_name: control'],
    ]
    for (const [answers, message] of cases) {
      const r = await submit(answers)
      expect(r.status).toBe(400)
      expect(r.json.message).toStartWith(message)
    }
    expect((await submit({})).status).toBe(200)
  })

  test('11: a webhook for a provider that does not exist is 404', async () => {
    for (const provider of ['nosuch', 'PayPal', 'pay-pal', 'x'.repeat(64)]) {
      const r = await t.request('POST', `/cashier/webhook/${provider}`, {
        body: '{"id":"x"}',
        headers: { 'content-type': 'application/json' },
      })
      expect(r.status).toBe(404)
      expect(r.json.error).toBe('PROVIDER_NOT_FOUND')
    }
  })
})
