// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeTestApp, type TestApp } from '../support/app'

/**
 * Sessions end everywhere: a caller signs out of every session (a suspected theft of its password or
 * token), and staff end an account's or a customer's sessions. Every token stops at once, the caller's
 * own included; other principals' sessions go on.
 */
let t: TestApp
beforeAll(async () => {
  t = await makeTestApp()
})
afterAll(() => t.close())

const me = (token: string, login = 100001) => t.request('GET', `/account/me?login=${login}`, { token })
const customerMe = (token: string) => t.request('GET', '/customer/me', { token })
const staffMe = (token: string) => t.request('GET', '/manager/accounts/100001', { token })
const outAll = (token: string) => t.request('POST', '/sign/out/all', { token })

describe('POST /sign/out/all', () => {
  test("an account's: every token of the account stops; another account's goes on", async () => {
    const [a, b] = [await t.userToken(), await t.userToken()]
    const other = await t.userToken(100002)
    for (const tok of [a, b]) expect((await me(tok)).status).toBe(200)
    expect((await outAll(a)).json).toEqual({ data: 'OK' })
    for (const tok of [a, b]) expect((await me(tok)).status).toBe(401)
    expect((await me(other, 100002)).status).toBe(200)
    // the password still signs in
    expect((await me(await t.userToken())).status).toBe(200)
  })

  test("a customer's: its tokens and those of its accounts stop", async () => {
    const [c1, c2] = [await t.customerToken(), await t.customerToken()]
    const account = await t.userToken()
    const beta = await t.customerToken('beta@example.com', 'beta-pass-1', 'beta.localhost')
    expect((await customerMe(c1)).status).toBe(200)
    expect((await outAll(c2)).status).toBe(200)
    expect((await customerMe(c1)).status).toBe(401)
    expect((await customerMe(c2)).status).toBe(401)
    expect((await me(account)).status).toBe(401)
    expect((await t.request('GET', '/customer/me', { token: beta, host: 'beta.localhost' })).status).toBe(200)
    expect((await customerMe(await t.customerToken())).status).toBe(200)
  })

  test("a staff member's: its tokens stop; another staff member's go on", async () => {
    const [s1, s2] = [await t.staffToken(), await t.staffToken()]
    const admin = await t.staffToken(2, 'admin-pass-1')
    expect((await staffMe(s1)).status).toBe(200)
    expect((await outAll(s1)).status).toBe(200)
    expect((await staffMe(s1)).status).toBe(401)
    expect((await staffMe(s2)).status).toBe(401)
    expect((await staffMe(admin)).status).toBe(200)
    expect((await staffMe(await t.staffToken())).status).toBe(200)
  })

  test('the session cookie is cleared', async () => {
    const r = await outAll(await t.userToken())
    expect(r.headers.get('set-cookie') ?? '').toMatch(/Max-Age=0/i)
  })
})

describe('staff end the sessions of an account or a customer', () => {
  test('an account: its tokens stop; its customer and the other accounts go on', async () => {
    const manager = await t.staffToken()
    const account = await t.userToken()
    const customer = await t.customerToken()
    const r = await t.request('POST', '/manager/accounts/100001/sessions/end', { token: manager })
    expect(r.json).toEqual({ data: 'OK' })
    expect((await me(account)).status).toBe(401)
    expect((await customerMe(customer)).status).toBe(200)
  })

  test("a customer: its tokens and its accounts' stop", async () => {
    const manager = await t.staffToken()
    const customer = await t.customerToken()
    const account = await t.userToken()
    const id = (await customerMe(customer)).json.id as number
    const r = await t.request('POST', `/manager/customers/${id}/sessions/end`, { token: manager })
    expect(r.json).toEqual({ data: 'OK' })
    expect((await customerMe(customer)).status).toBe(401)
    expect((await me(account)).status).toBe(401)
  })

  test("another brand's, or none: 404; a dealer may not", async () => {
    const manager = await t.staffToken()
    const beta = await t.userToken(200001, 'beta-pass-1', 'beta.localhost')
    const acct = await t.request('POST', '/manager/accounts/200001/sessions/end', { token: manager })
    expect([acct.status, acct.json.error]).toEqual([404, 'ACCOUNT_NOT_FOUND'])
    const cust = await t.request('POST', '/manager/customers/999999/sessions/end', { token: manager })
    expect([cust.status, cust.json.error]).toEqual([404, 'CUSTOMER_NOT_FOUND'])
    // the other brand's account was not touched
    const betaMe = await t.request('GET', '/account/me?login=200001', { token: beta, host: 'beta.localhost' })
    expect(betaMe.status).toBe(200)
    const dealer = await t.staffToken(3, 'dealer-pass-1')
    const refused = await t.request('POST', '/manager/accounts/100001/sessions/end', { token: dealer })
    expect(refused.status).toBe(403)
  })
})
