// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, sum } from 'drizzle-orm'
import { outbox } from '../../src/kernel/events/schema'
import { accounts, balanceOperations } from '../../src/modules/accounts/schema'
import { makeTestApp, type TestApp } from '../support/app'

let t: TestApp
let manager: string
let dealer: string
beforeAll(async () => {
  t = await makeTestApp()
  manager = await t.staffToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
})
afterAll(() => t.close())

async function ledgerSum(login: number) {
  const [r] = await t.ctx.db
    .select({ s: sum(balanceOperations.amount) })
    .from(balanceOperations)
    .where(eq(balanceOperations.login, login))
  const [a] = await t.ctx.db
    .select({ balance: accounts.balance })
    .from(accounts)
    .where(eq(accounts.login, login))
  return { ledger: Number(r.s ?? 0), balance: a.balance }
}

describe('manager accounts', () => {
  test('groups of the brand only', async () => {
    const r = await t.request('GET', '/manager/groups', { token: dealer })
    expect(r.status).toBe(200)
    expect(r.json.rows.map((g: any) => g.name).sort()).toEqual([
      'demo\\USD',
      'prop\\eval\\USD',
      'prop\\funded\\USD',
      'real\\EUR',
      'real\\USD',
    ])
  })

  test('create a DEMO account: it gets default_deposit through the ledger', async () => {
    const r = await t.request('POST', '/manager/accounts', {
      token: manager,
      body: { group: 'demo\\USD', password: 'fresh-pass-1', name: 'Fresh', leverage: 200 },
    })
    expect(r.status).toBe(200)
    expect(r.json).toMatchObject({
      group: 'demo\\USD',
      balance: 10000,
      leverage: 200,
      name: 'Fresh',
      customer_id: null,
    })
    expect(await ledgerSum(r.json.login)).toEqual({ ledger: 1_000_000, balance: 1_000_000 })
  })

  test('unknown group 404 GROUP_NOT_FOUND; another brand group too; dealers may not create', async () => {
    for (const group of ['nope', 'beta\\real\\USD']) {
      const r = await t.request('POST', '/manager/accounts', {
        token: manager,
        body: { group, password: 'fresh-pass-1' },
      })
      expect(r.status).toBe(404)
      expect(r.json.error).toBe('GROUP_NOT_FOUND')
    }
    expect(
      (
        await t.request('POST', '/manager/accounts', {
          token: dealer,
          body: { group: 'real\\USD', password: 'fresh-pass-1' },
        })
      ).status,
    ).toBe(403)
  })

  test('change group, leverage and flags; another brand account is 404', async () => {
    const r = await t.request('PATCH', '/manager/accounts/100001', {
      token: manager,
      body: { leverage: 50, enable_read_only: 1, comment: 'watch' },
    })
    expect(r.status).toBe(200)
    expect(r.json).toMatchObject({ leverage: 50, enable_read_only: 1, comment: 'watch' })
    expect(
      (await t.request('PATCH', '/manager/accounts/200001', { token: manager, body: { leverage: 50 } }))
        .status,
    ).toBe(404)
    const empty = await t.request('PATCH', '/manager/accounts/100001', { token: manager, body: {} })
    expect(empty.status).toBe(400)
    const flag = await t.request('PATCH', '/manager/accounts/100001', { token: manager, body: { enable: 2 } })
    expect(flag.status).toBe(400)
    expect(flag.json.message).toContain('enable')
    expect((await t.request('GET', '/manager/accounts/200001', { token: dealer })).status).toBe(404)
  })
})

describe('balance operations', () => {
  test('deposit, withdrawal, credit in/out: one ledger row each, balance = sum of the ledger, events in the outbox', async () => {
    const events0 = (await t.ctx.db.select().from(outbox)).length
    const post = (body: object) =>
      t.request('POST', '/manager/accounts/100002/balance', { token: manager, body })
    const dep = await post({ type: 'deposit', amount: 123.45, comment: 'wire', api_data: { ref: 'W-1' } })
    expect(dep.status).toBe(200)
    expect(dep.json.operation).toMatchObject({
      op: 'OP_BALANCE_IN',
      amount: 123.45,
      balance_after: 10123.45,
      reason: 'TR_REASON_DEPOSIT',
      api_data: { ref: 'W-1' },
    })
    const wd = await post({ type: 'withdrawal', amount: 23.45, reason: 'TR_REASON_MANUAL' })
    expect(wd.json.operation).toMatchObject({
      op: 'OP_BALANCE_OUT',
      amount: -23.45,
      balance_after: 10100,
      reason: 'TR_REASON_MANUAL',
    })
    expect((await post({ type: 'credit_in', amount: 50 })).json.operation.credit_after).toBe(50)
    expect((await post({ type: 'credit_out', amount: 50 })).json.operation.credit_after).toBe(0)
    expect(await ledgerSum(100002)).toEqual({ ledger: 1_010_000, balance: 1_010_000 })
    expect((await t.ctx.db.select().from(outbox)).length).toBe(events0 + 4)
  })

  test('a withdrawal that would make the balance negative is refused and writes nothing', async () => {
    const before = await ledgerSum(100002)
    const r = await t.request('POST', '/manager/accounts/100002/balance', {
      token: manager,
      body: { type: 'withdrawal', amount: 1_000_000 },
    })
    expect(r.status).toBe(400)
    expect(r.json.error).toBe('NOT_ENOUGH_FUNDS')
    expect(await ledgerSum(100002)).toEqual(before)
  })

  test('concurrent withdrawals never overdraw', async () => {
    const created = await t.request('POST', '/manager/accounts', {
      token: manager,
      body: { group: 'demo\\USD', password: 'race-pass-1' },
    })
    const login = created.json.login
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        t.request('POST', `/manager/accounts/${login}/balance`, {
          token: manager,
          body: { type: 'withdrawal', amount: 3000 },
        }),
      ),
    )
    expect(results.filter((r) => r.status === 200).length).toBe(3)
    expect(results.filter((r) => r.status === 400).length).toBe(5)
    expect(await ledgerSum(login)).toEqual({ ledger: 100_000, balance: 100_000 })
  })

  test('an idempotency key makes a repeat return the first operation', async () => {
    const body = { type: 'deposit', amount: 10, idempotency_key: 'dep-42' }
    const [a, b] = await Promise.all([
      t.request('POST', '/manager/accounts/100001/balance', { token: manager, body }),
      t.request('POST', '/manager/accounts/100001/balance', { token: manager, body }),
    ])
    expect(a.status).toBe(200)
    expect(b.status).toBe(200)
    expect(a.json.operation.id).toBe(b.json.operation.id)
    expect([a.json.idempotent, b.json.idempotent].sort()).toEqual([false, true])
    const s = await ledgerSum(100001)
    expect(s.ledger).toBe(s.balance)
  })

  test('the Idempotency-Key header (as trading takes it) makes a repeat return the first operation; differing from the body key is 400', async () => {
    const post = (headers: Record<string, string>, body: object = { type: 'deposit', amount: 3 }) =>
      t.request('POST', '/manager/accounts/100001/balance', { token: manager, body, headers })
    const a = await post({ 'idempotency-key': 'hdr-wire-0001' })
    const b = await post({ 'idempotency-key': 'hdr-wire-0001' })
    expect([a.status, b.status]).toEqual([200, 200])
    expect(b.json.operation.id).toBe(a.json.operation.id)
    expect([a.json.idempotent, b.json.idempotent]).toEqual([false, true])
    // said in a header too, as trading's repeats are (the audit trail records the repeat as replayed)
    expect([a.headers.get('idempotent-replayed'), b.headers.get('idempotent-replayed')]).toEqual([
      null,
      'true',
    ])
    // the same key in the body is the same operation
    const c = await post({}, { type: 'deposit', amount: 3, idempotency_key: 'hdr-wire-0001' })
    expect([c.status, c.json.operation.id, c.json.idempotent]).toEqual([200, a.json.operation.id, true])
    const both = await post(
      { 'idempotency-key': 'hdr-wire-0002' },
      { type: 'deposit', amount: 3, idempotency_key: 'other-0002' },
    )
    expect([both.status, both.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(both.json.message).toContain('idempotency_key')
    const bad = await post({ 'idempotency-key': 'short' })
    expect([bad.status, bad.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(bad.json.message).toContain('Idempotency-Key')
    const s = await ledgerSum(100001)
    expect(s.ledger).toBe(s.balance)
  })

  test("a staff key cannot take a platform operation's key; a key repeated with another request answers 409", async () => {
    const post = (body: object) =>
      t.request('POST', '/manager/accounts/100001/balance', { token: manager, body })
    // the platform's keys are a name, a colon and a number (copy-reward:<accrual>, prop:<purchase>:…,
    // cashier-hold:<request>): a staff operation under one would make the platform's own a no-op repeat
    for (const key of [
      'copy-reward:1',
      'prop:12:fee',
      'cashier-hold:7',
      'CASHIER:7',
      'prop-payout:3:out',
      'crm:1',
    ]) {
      const r = await post({ type: 'withdrawal', amount: 1, idempotency_key: key })
      expect(r.status).toBe(400)
      expect(r.json.error).toBe('INVALID_DATA')
      expect(r.json.message).toContain('idempotency_key')
    }
    for (const key of ['wire-2026-002', 'crm:ab-12', 'ref-2026:7']) {
      const r = await post({ type: 'deposit', amount: 1, idempotency_key: key })
      expect(r.status).toBe(200)
    }
    const again = await post({ type: 'deposit', amount: 2, idempotency_key: 'wire-2026-002' })
    expect(again.status).toBe(409)
    expect(again.json.error).toBe('IDEMPOTENCY_KEY_REUSED')
    const s = await ledgerSum(100001)
    expect(s.ledger).toBe(s.balance)
  })

  test('validation: amount > 0 with the currency decimals, known type, reason pattern; dealers may not post', async () => {
    const post = (body: object, token = manager) =>
      t.request('POST', '/manager/accounts/100001/balance', { token, body })
    for (const [body, field] of [
      [{ type: 'deposit', amount: 0 }, 'amount'],
      [{ type: 'deposit', amount: -5 }, 'amount'],
      [{ type: 'deposit', amount: 1.234 }, 'amount'],
      [{ type: 'bonus', amount: 5 }, 'type'],
      [{ type: 'deposit', amount: 5, reason: 'free money' }, 'reason'],
    ] as const) {
      const r = await post(body)
      expect(r.status).toBe(400)
      expect(r.json.error).toBe('INVALID_DATA')
      expect(r.json.message).toContain(field)
    }
    expect((await post({ type: 'deposit', amount: 5 }, dealer)).status).toBe(403)
    expect(
      (
        await t.request('POST', '/manager/accounts/200001/balance', {
          token: manager,
          body: { type: 'deposit', amount: 5 },
        })
      ).status,
    ).toBe(404)
  })

  test('the ledger pages newest first with a cursor', async () => {
    const p1 = await t.request('GET', '/manager/accounts/100002/operations?limit=2', { token: dealer })
    expect(p1.status).toBe(200)
    expect(p1.json.rows.length).toBe(2)
    expect(p1.json.has_more).toBe(true)
    const p2 = await t.request(
      'GET',
      `/manager/accounts/100002/operations?limit=2&cursor=${p1.json.next_cursor}`,
      { token: dealer },
    )
    expect(p2.json.rows[0].id).toBeLessThan(p1.json.rows[1].id)
  })

  test('path and query integers arrive as text: integer text passes, anything else is 400 naming the field', async () => {
    for (const [path, field] of [
      ['/manager/accounts/abc/operations', 'params login'],
      ['/manager/accounts/1e3/operations', 'params login'],
      ['/manager/accounts/100002/operations?limit=2x', 'query limit'],
      ['/manager/accounts/100002/operations?limit=0', 'query limit'],
      ['/manager/accounts/100002/operations?cursor=', 'query cursor'],
    ]) {
      const r = await t.request('GET', path, { token: dealer })
      expect([r.status, r.json.error], path).toEqual([400, 'INVALID_DATA'])
      expect(r.json.message, path).toStartWith(`${field}:`)
    }
    expect(
      (await t.request('GET', '/manager/accounts/0100002/operations?limit=02', { token: dealer })).status,
    ).toBe(200)
  })
})
