// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeTestApp, type TestApp } from '../support/app'

let t: TestApp
let user: string
let customer: string
let staff: string
beforeAll(async () => {
  t = await makeTestApp()
  ;[user, customer, staff] = await Promise.all([t.userToken(), t.customerToken(), t.staffToken()])
})
afterAll(() => t.close())

const PROFILE_INTS = [
  'id',
  'login',
  'enable',
  'enable_read_only',
  'enable_change_password',
  'leverage',
  'regdate',
]
const PROFILE_STRINGS = [
  'currency',
  'group',
  'comment',
  'avatar',
  'email',
  'name',
  'phone',
  'address',
  'city',
  'country',
  'zipcode',
]
const PROFILE_NUMBERS = [
  'prevbalance',
  'prevmonthbalance',
  'balance',
  'storage',
  'commission',
  'credit',
  'margin',
  'margin_free',
  'margin_level',
  'equity',
]

describe('GET /account/me (spec 4.3, 2.1)', () => {
  test('a user session reads its own account with every field and live margin figures', async () => {
    const r = await t.request('GET', '/account/me', { token: user })
    expect(r.status).toBe(200)
    for (const f of PROFILE_INTS) expect(Number.isInteger(r.json[f])).toBe(true)
    for (const f of PROFILE_STRINGS) expect(typeof r.json[f]).toBe('string')
    for (const f of PROFILE_NUMBERS) expect(typeof r.json[f]).toBe('number')
    expect(r.json).toMatchObject({
      login: 100001,
      balance: 10000,
      credit: 0,
      equity: 10000,
      margin: 0,
      margin_free: 10000,
      margin_level: 0,
    })
  })

  test('a user session asking for another login gets 404 (no existence leak)', async () => {
    for (const login of [100002, 200001, 999999]) {
      const r = await t.request('GET', `/account/me?login=${login}`, { token: user })
      expect(r.status).toBe(404)
      expect(r.json.error).toBe('ACCOUNT_NOT_FOUND')
    }
  })

  test('a customer with several accounts must name one; it reads only its own', async () => {
    const none = await t.request('GET', '/account/me', { token: customer })
    expect(none.status).toBe(400)
    expect(none.json).toMatchObject({ error: 'INVALID_DATA', message: expect.stringContaining('login') })
    const own = await t.request('GET', '/account/me?login=100003', { token: customer })
    expect(own.status).toBe(200)
    expect(own.json).toMatchObject({ login: 100003, currency: 'EUR', balance: 5000 })
    const beta = await t.request('GET', '/account/me?login=200001', { token: customer })
    expect(beta.status).toBe(404)
  })

  test('staff read any account of their brand, never another brand', async () => {
    expect((await t.request('GET', '/account/me?login=100002', { token: staff })).status).toBe(200)
    expect((await t.request('GET', '/account/me?login=200001', { token: staff })).status).toBe(404)
    const noLogin = await t.request('GET', '/account/me', { token: staff })
    expect(noLogin.status).toBe(400)
  })

  test('400 INVALID_DATA for a login that is not an int >= 0', async () => {
    for (const q of ['login=abc', 'login=-5', 'login=1.5']) {
      const r = await t.request('GET', `/account/me?${q}`, { token: user })
      expect(r.status).toBe(400)
      expect(r.json.error).toBe('INVALID_DATA')
      expect(r.json.message).toStartWith('query login:')
    }
  })

  test('401 without a token, with garbage, or with a token of another brand', async () => {
    expect((await t.request('GET', '/account/me')).status).toBe(401)
    expect((await t.request('GET', '/account/me', { token: 'garbage' })).status).toBe(401)
    const beta = await t.userToken(200001, 'beta-pass-1', 'beta.localhost')
    const r = await t.request('GET', '/account/me', { token: beta })
    expect(r.status).toBe(401)
    expect((await t.request('GET', '/account/me', { token: beta, host: 'beta.localhost' })).status).toBe(200)
  })
})

describe('PUT /account/me (spec 4.4, 2.2)', () => {
  test('updates only the sent fields and returns 2.2; the next read shows them', async () => {
    const r = await t.request('PUT', '/account/me', {
      token: user,
      body: { name: 'Jane Trader', city: 'London', state: 'LDN', user_color: '#ff0000' },
    })
    expect(r.status).toBe(200)
    expect(r.json).toMatchObject({
      login: 100001,
      name: 'Jane Trader',
      city: 'London',
      state: 'LDN',
      user_color: '#ff0000',
    })
    expect(Number.isInteger(r.json.update_time)).toBe(true)
    for (const f of ['avatar', 'phone', 'address', 'country', 'zipcode'])
      expect(typeof r.json[f]).toBe('string')
    const me = await t.request('GET', '/account/me', { token: user })
    expect(me.json).toMatchObject({ name: 'Jane Trader', city: 'London' })
  })

  test('an empty or absent body changes nothing and answers 200', async () => {
    const before = await t.request('GET', '/account/me', { token: user })
    const r = await t.request('PUT', '/account/me', { token: user })
    expect(r.status).toBe(200)
    expect(r.json.name).toBe(before.json.name)
  })

  test.each([
    ['name', 129],
    ['phone', 65],
    ['address', 257],
    ['city', 129],
    ['state', 129],
    ['country', 129],
    ['zipcode', 33],
    ['user_color', 33],
    ['avatar', 4097],
  ])('400 INVALID_DATA when %s exceeds its limit, and nothing is written', async (field, len) => {
    const r = await t.request('PUT', '/account/me', {
      token: user,
      body: { name: 'Should Not Stick', [field]: 'x'.repeat(len) },
    })
    expect(r.status).toBe(400)
    expect(r.json.error).toBe('INVALID_DATA')
    expect(r.json.message).toContain(field)
    const me = await t.request('GET', '/account/me', { token: user })
    expect(me.json.name).not.toBe('Should Not Stick')
  })

  test('at the limits it is accepted', async () => {
    const r = await t.request('PUT', '/account/me', {
      token: user,
      body: { name: 'n'.repeat(128), zipcode: 'z'.repeat(32) },
    })
    expect(r.status).toBe(200)
  })

  test('a customer updates one of its accounts by login; another customer account answers 404 and is unchanged', async () => {
    const r = await t.request('PUT', '/account/me', {
      token: customer,
      body: { login: 100002, phone: '+44 1234' },
    })
    expect(r.status).toBe(200)
    expect(r.json.login).toBe(100002)
    const beta = await t.request('PUT', '/account/me', {
      token: customer,
      body: { login: 200001, phone: 'hacked' },
    })
    expect(beta.status).toBe(404)
    const betaToken = await t.userToken(200001, 'beta-pass-1', 'beta.localhost')
    const betaMe = await t.request('GET', '/account/me', { token: betaToken, host: 'beta.localhost' })
    expect(betaMe.json.phone).not.toBe('hacked')
  })

  test('an avatar must be an account_avatar upload of the same principal', async () => {
    const bad = await t.request('PUT', '/account/me', { token: user, body: { avatar: crypto.randomUUID() } })
    expect(bad.status).toBe(400)
    expect(bad.json.message).toContain('avatar')
  })
})

describe('GET /balance/me (spec 4.3b, 2.3)', () => {
  test('every field of 2.3 with live figures', async () => {
    const r = await t.request('GET', '/balance/me?login=100001', { token: user })
    expect(r.status).toBe(200)
    for (const f of [
      'balance',
      'credit',
      'profit',
      'commission',
      'storage',
      'margin',
      'margin_free',
      'margin_level',
      'equity',
    ])
      expect(typeof r.json[f]).toBe('number')
    expect(r.json).toMatchObject({ balance: 10000, equity: 10000, level_type: 0, leverage: 100 })
  })

  test('login is required; other owners answer 404', async () => {
    const missing = await t.request('GET', '/balance/me', { token: user })
    expect(missing.status).toBe(400)
    expect(missing.json.message).toContain('login')
    expect((await t.request('GET', '/balance/me?login=100002', { token: user })).status).toBe(404)
    expect((await t.request('GET', '/balance/me?login=100002', { token: customer })).status).toBe(200)
    expect((await t.request('GET', '/balance/me?login=200001', { token: customer })).status).toBe(404)
  })

  test('a credit and a deposit show up immediately (read model invalidated on write)', async () => {
    const admin = await t.staffToken(2, 'admin-pass-1')
    await t.request('POST', '/manager/accounts/100003/balance', {
      token: admin,
      body: { type: 'credit_in', amount: 250.5 },
    })
    const r = await t.request('GET', '/balance/me?login=100003', { token: customer })
    expect(r.json).toMatchObject({ balance: 5000, credit: 250.5, equity: 5250.5 })
  })
})
