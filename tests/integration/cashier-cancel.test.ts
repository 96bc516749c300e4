// A customer takes back a withdrawal staff have not decided yet: the hold returns once, whatever is sent
// at once or twice; once approved, or of another customer, it is not the customer's to stop.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { makeTestApp, type TestApp } from '../support/app'

let t: TestApp
let customer: string
let manager: string

beforeAll(async () => {
  t = await makeTestApp()
  customer = await t.customerToken()
  manager = await t.staffToken()
  // withdrawals without KYC steps: this is about the request's life, not the gate
  const settings = (await t.request('GET', '/manager/kyc/settings', { token: manager })).json
  const saved = await t.request('PUT', '/manager/kyc/settings', {
    token: manager,
    body: { steps: settings.steps, tiers: { ...settings.tiers, withdrawal_after: [] } },
  })
  expect(saved.status).toBe(200)
})
afterAll(() => t.close())

const balance = async () =>
  (await t.request('GET', '/account/me?login=100001', { token: customer })).json.balance as number
const withdraw = async (amount: number) => {
  const r = await t.request('POST', '/cashier/withdrawal', {
    token: customer,
    body: { login: 100001, method: 'wire', amount },
  })
  expect(r.status).toBe(200)
  return r.json.transaction.id as number
}
const cancel = (id: number, token = customer, host?: string) =>
  t.request('POST', `/cashier/transactions/${id}/cancel`, { token, host })

test('a pending withdrawal cancelled by its customer returns its hold once, two cancels at once included', async () => {
  const before = await balance()
  const id = await withdraw(100)
  expect(await balance()).toBe(before - 100)
  const [a, b] = await Promise.all([cancel(id), cancel(id)])
  expect([a.status, b.status].sort()).toEqual([200, 409])
  const ok = a.status === 200 ? a : b
  const refused = a.status === 200 ? b : a
  expect(ok.json).toMatchObject({ id, status_name: 'cancelled', reason: 'cancelled by the customer' })
  expect(refused.json.error).toBe('TRANSACTION_STATE_CONFLICT')
  expect(refused.json.message).toContain('is cancelled')
  expect(await balance()).toBe(before)
  // staff can no longer decide it
  const approve = await t.request('POST', `/manager/cashier/transactions/${id}/approve`, {
    token: manager,
    body: {},
  })
  expect(approve.json.error).toBe('TRANSACTION_STATE_CONFLICT')
})

test('once approved, a deposit, or of another customer: not the customer to cancel', async () => {
  const id = await withdraw(60)
  const approved = await t.request('POST', `/manager/cashier/transactions/${id}/approve`, {
    token: manager,
    body: {},
  })
  expect(approved.json.status_name).toBe('payout_in_progress')
  const late = await cancel(id)
  expect([late.status, late.json.error]).toEqual([409, 'TRANSACTION_STATE_CONFLICT'])
  expect(late.json.message).toContain('payout_in_progress')
  const deposit = await t.request('POST', '/cashier/deposit', {
    token: customer,
    body: { login: 100001, method: 'card', amount: 30 },
  })
  expect((await cancel(deposit.json.transaction.id)).json.error).toBe('TRANSACTION_NOT_FOUND')
  // another brand's customer, and a staff session: the first cannot see it, the second is not a customer
  const pending = await withdraw(50)
  const beta = await t.customerToken('beta@example.com', 'beta-pass-1', 'beta.localhost')
  const theirs = await cancel(pending, beta, 'beta.localhost')
  expect([theirs.status, theirs.json.error]).toEqual([404, 'TRANSACTION_NOT_FOUND'])
  const staffSession = await cancel(pending, manager)
  expect(staffSession.status).toBe(403)
  expect(staffSession.json.error).toBe('FORBIDDEN')
  const bad = await t.request('POST', '/cashier/transactions/abc/cancel', { token: customer })
  expect([bad.status, bad.json.error]).toEqual([400, 'INVALID_DATA'])
  expect((await cancel(pending)).json.status_name).toBe('cancelled')
})
