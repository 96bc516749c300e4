// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// cashier, final review: the simulated providers' payout refusal reaches payout_failed (the hold
// returned); the staff note's bound keeps the earliest text's start and the new note whole.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { PayoutRefused } from '../../src/modules/cashier/providers/port'
import { sandboxProvider } from '../../src/modules/cashier/providers/sandbox'
import { cashierTransactions } from '../../src/modules/cashier/schema'
import { noteAfter, STAFF_NOTE_MAX, withNote } from '../../src/modules/cashier/transactions'
import { makeTestApp, type TestApp } from '../support/app'

const LOGIN = 100001
let t: TestApp
let customer: string
let manager: string

beforeAll(async () => {
  t = await makeTestApp()
  customer = await t.customerToken()
  manager = await t.staffToken()
  const settings = (await t.request('GET', '/manager/kyc/settings', { token: manager })).json
  const saved = await t.request('PUT', '/manager/kyc/settings', {
    token: manager,
    body: {
      steps: settings.steps,
      tiers: { ...settings.tiers, withdrawal_after: [], deposit_unlimited_after: [] },
    },
  })
  expect([saved.status, saved.text]).toEqual([200, saved.text])
})
afterAll(() => t.close())

const balance = async () =>
  (await t.request('GET', `/account/me?login=${LOGIN}`, { token: customer })).json.balance as number
const cardWithdrawal = async (amount: number) => {
  const w = await t.request('POST', '/cashier/withdrawal', {
    token: customer,
    body: { login: LOGIN, method: 'card', amount },
  })
  expect([w.status, w.text]).toEqual([200, w.text])
  return w.json.transaction.id as number
}
const approve = (id: number) =>
  t.request('POST', `/manager/cashier/transactions/${id}/approve`, { token: manager, body: {} })

describe("the sandbox provider's payout refusal", () => {
  test('a payout the sandbox refuses (an amount ending in 13.13) ends payout_failed, its hold returned', async () => {
    const before = await balance()
    const id = await cardWithdrawal(13.13)
    expect(Math.round(((await balance()) - before) * 100)).toBe(-1313)
    const r = await approve(id)
    expect([r.status, r.json?.status_name, r.json?.flagged]).toEqual([200, 'payout_failed', false])
    expect(await balance()).toBe(before)
    const s = (await t.request('GET', `/manager/cashier/transactions/${id}`, { token: manager })).json
    expect(s.status_name).toBe('payout_failed')
  })

  test('any other payout is sent (payout_in_progress), its hold kept', async () => {
    const before = await balance()
    const id = await cardWithdrawal(13.14)
    const r = await approve(id)
    expect([r.status, r.json?.status_name, r.json?.provider_ref]).toEqual([
      200,
      'payout_in_progress',
      `sbx_po_${id}`,
    ])
    expect(Math.round(((await balance()) - before) * 100)).toBe(-1314)
  })

  test('startPayout throws PayoutRefused (the definite refusal), not another error', async () => {
    const p = sandboxProvider({} as never)
    await expect(p.startPayout({ transactionId: 1, amount: 11_313, currency: 'USD' })).rejects.toBeInstanceOf(
      PayoutRefused,
    )
    expect(await p.startPayout({ transactionId: 2, amount: 11_300, currency: 'USD' })).toEqual({
      providerRef: 'sbx_po_2',
    })
  })
})

describe('the staff note keeps the earliest text and the new note whole, within the bound', () => {
  test('noteAfter: the earlier text is cut at its end (marked …), the new note kept whole', () => {
    const n = noteAfter('first note; '.repeat(200), 'the new note')
    expect(n.length).toBe(STAFF_NOTE_MAX)
    expect(n.startsWith('first note; first note;')).toBe(true)
    expect(n.endsWith('…\nthe new note')).toBe(true)
    expect(noteAfter('', 'alone')).toBe('alone')
    expect(noteAfter('short', 'new')).toBe('short\nnew')
  })

  test('a new note that alone fills the bound: the whole stays within it', () => {
    const n = noteAfter('earlier', 'y'.repeat(STAFF_NOTE_MAX))
    expect(n.length).toBeLessThanOrEqual(STAFF_NOTE_MAX)
    expect(n.startsWith('…\nyyy')).toBe(true)
    expect(noteAfter('', 'y'.repeat(STAFF_NOTE_MAX + 5)).length).toBe(STAFF_NOTE_MAX)
  })

  test('withNote (the statement) writes what noteAfter computes', async () => {
    const cases: [string, string][] = [
      ['', 'alone'],
      ['short', 'new'],
      ['first note; '.repeat(200), 'the new note'],
      ['earlier', 'y'.repeat(STAFF_NOTE_MAX)],
    ]
    const row = { id: await cardWithdrawal(10) }
    for (const [earlier, note] of cases) {
      await t.ctx.db.run(sql`update cashier_transactions set staff_note = ${earlier} where id = ${row.id}`)
      const [done] = await t.ctx.db
        .update(cashierTransactions)
        .set({ staffNote: withNote(note) })
        .where(eq(cashierTransactions.id, row.id))
        .returning({ staffNote: cashierTransactions.staffNote })
      expect(done.staffNote).toBe(noteAfter(earlier, note))
      expect(done.staffNote.length).toBeLessThanOrEqual(STAFF_NOTE_MAX)
    }
  })
})
