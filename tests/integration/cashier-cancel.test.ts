// A customer takes back a withdrawal staff have not decided yet: the hold returns once, whatever is sent
// at once or again; once approved, rejected, or of another customer, it is not the customer's to stop.
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

test('a pending withdrawal cancelled by its customer returns its hold once; asked again, it answers the same', async () => {
  const before = await balance()
  const id = await withdraw(100)
  expect(await balance()).toBe(before - 100)
  // two at once, then a retry after a lost answer
  const answers = [...(await Promise.all([cancel(id), cancel(id)])), await cancel(id)]
  for (const a of answers) {
    expect(a.status).toBe(200)
    expect(a.json).toMatchObject({ id, status_name: 'cancelled', reason: 'cancelled by the customer' })
  }
  expect(await balance()).toBe(before)
  const history = answers[0]!.json.history as { actor: string; to_name: string }[]
  expect(history.at(-1)).toMatchObject({ actor: 'customer', to_name: 'cancelled', note: 'cancel' })
  // staff can no longer decide it
  const approve = await t.request('POST', `/manager/cashier/transactions/${id}/approve`, {
    token: manager,
    body: {},
  })
  expect(approve.json.error).toBe('TRANSACTION_STATE_CONFLICT')
})

test("a cancel and a staff rejection at once: one of them returns the hold; one staff rejected is not the customer's", async () => {
  for (let round = 0; round < 5; round++) {
    const before = await balance()
    const id = await withdraw(70)
    const [mine, staff] = await Promise.all([
      cancel(id),
      t.request('POST', `/manager/cashier/transactions/${id}/reject`, {
        token: manager,
        body: { reason: 'no' },
      }),
    ])
    expect([mine.status, staff.status].filter((s) => s === 200)).toHaveLength(1)
    if (mine.status !== 200) {
      expect([mine.status, mine.json.error]).toEqual([409, 'TRANSACTION_STATE_CONFLICT'])
      expect(mine.json.message).toContain('is cancelled')
    }
    expect(await balance()).toBe(before)
  }
})

test('once approved, or of another customer: not the customer to cancel (an unpaid deposit is)', async () => {
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
  // a deposit nobody paid is now the customer's to cancel (it was 404: an abandoned one could never end)
  const unpaid = await cancel(deposit.json.transaction.id)
  expect([unpaid.status, unpaid.json.status_name]).toEqual([200, 'cancelled'])
  // another customer of the brand or of another brand, and a staff session: the customers cannot see it,
  // the staff member is not a customer
  const pending = await withdraw(50)
  const other = await t.customerToken('master@example.com', 'master-pass-1')
  const beta = await t.customerToken('beta@example.com', 'beta-pass-1', 'beta.localhost')
  for (const theirs of [await cancel(pending, other), await cancel(pending, beta, 'beta.localhost')])
    expect([theirs.status, theirs.json.error]).toEqual([404, 'TRANSACTION_NOT_FOUND'])
  const staffSession = await cancel(pending, manager)
  expect(staffSession.status).toBe(403)
  expect(staffSession.json.error).toBe('FORBIDDEN')
  const bad = await t.request('POST', '/cashier/transactions/abc/cancel', { token: customer })
  expect([bad.status, bad.json.error]).toEqual([400, 'INVALID_DATA'])
  expect((await cancel(pending)).json.status_name).toBe('cancelled')
})

test('a disabled account moves no money: its customer can neither withdraw nor deposit until staff enable it', async () => {
  const before = await balance()
  const off = await t.request('PATCH', '/manager/accounts/100001', { token: manager, body: { enable: 0 } })
  expect(off.status).toBe(200)
  const w = await t.request('POST', '/cashier/withdrawal', {
    token: customer,
    body: { login: 100001, method: 'wire', amount: 100 },
  })
  expect([w.status, w.json.error]).toEqual([403, 'ACCOUNT_DISABLED'])
  const d = await t.request('POST', '/cashier/deposit', {
    token: customer,
    body: { login: 100001, method: 'card', amount: 100 },
  })
  expect([d.status, d.json.error]).toEqual([403, 'ACCOUNT_DISABLED'])
  const on = await t.request('PATCH', '/manager/accounts/100001', { token: manager, body: { enable: 1 } })
  expect(on.status).toBe(200)
  expect(await balance()).toBe(before)
  await withdraw(100)
  expect(await balance()).toBe(before - 100)
})
