// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { staffActions } from '../../src/kernel/audit/schema'
import { accounts } from '../../src/modules/accounts/schema'
import { makeTestApp, type TestApp } from '../support/app'
import * as F from '../support/files'
import { serverDir, startRealServer } from '../support/server'
import { addBetaStaff } from '../support/staff'

/**
 * The staff audit trail (kernel/audit, GET /manager/audit): every change a staff session asks for is
 * recorded before it runs, with who, what (secrets redacted) and the outcome; a change is not made when its
 * record cannot be written; admins of a brand read their brand's only.
 */

const rowsOf = async (t: TestApp, admin: string, query = '') => {
  const r = await t.request('GET', `/manager/audit${query}`, { token: admin })
  if (r.status !== 200) throw new Error(`audit answered ${r.status} ${r.text}`)
  return r.json as { rows: any[]; next_cursor: number | null }
}

describe('staff audit trail', () => {
  let t: TestApp
  let manager: string
  let admin: string
  let dealer: string
  beforeAll(async () => {
    t = await makeTestApp()
    manager = await t.staffToken()
    admin = await t.staffToken(2, 'admin-pass-1')
    dealer = await t.staffToken(3, 'dealer-pass-1')
  })
  afterAll(() => t.close())

  test('a change is recorded with the staff member, the route, the body with its secrets redacted, and its outcome', async () => {
    const opened = await t.request('POST', '/manager/accounts', {
      token: manager,
      body: { group: 'demo\\USD', password: 'audit-secret-1', name: 'Audited' },
    })
    expect(opened.status).toBe(200)
    const login = opened.json.login as number
    const deposit = await t.request('POST', `/manager/accounts/${login}/balance`, {
      token: manager,
      body: { type: 'deposit', amount: 125.5, comment: 'wire 42', idempotency_key: 'audit-1' },
    })
    expect(deposit.status).toBe(200)
    await t.ctx.audit.settled()
    const { rows } = await rowsOf(t, admin)
    const [dep, open] = rows
    expect(dep).toMatchObject({
      staff_id: expect.any(Number),
      staff_login: 1,
      role: 'MANAGER',
      method: 'POST',
      route: '/manager/accounts/:login/balance',
      path: `/manager/accounts/${login}/balance`,
      body: { type: 'deposit', amount: 125.5, comment: 'wire 42', idempotency_key: 'audit-1' },
      status: 200,
      code: null,
    })
    expect(dep.request_id).toBe(deposit.headers.get('x-request-id'))
    expect(Math.abs(dep.time - Date.now())).toBeLessThan(60_000)
    expect(open).toMatchObject({ route: '/manager/accounts', status: 200 })
    expect(open.body).toEqual({ group: 'demo\\USD', password: '[redacted]', name: 'Audited' })
    // the password is nowhere in the stored row
    const stored = await t.ctx.db.select().from(staffActions).where(eq(staffActions.id, open.id))
    expect(JSON.stringify(stored)).not.toContain('audit-secret-1')
  })

  test('a refused change is recorded with its status and code; a read is not; a quote batch is, once answered', async () => {
    const before = (await rowsOf(t, admin)).rows[0].id as number
    const refused = await t.request('POST', '/manager/accounts/100001/balance', {
      token: manager,
      body: { type: 'deposit', amount: -5 },
    })
    expect(refused.status).toBe(400)
    expect((await t.request('GET', '/manager/accounts/100001', { token: manager })).status).toBe(200)
    const quotes = await t.request('POST', '/market/quotes', {
      token: dealer,
      body: { ticks: [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }] },
    })
    expect(quotes.status).toBe(200)
    await t.ctx.audit.settled()
    const rows = (await rowsOf(t, admin)).rows.filter((r) => r.id > before)
    expect(rows.map((r) => [r.role, r.method, r.route, r.status, r.code])).toEqual([
      ['DEALER', 'POST', '/market/quotes', 200, null],
      ['MANAGER', 'POST', '/manager/accounts/:login/balance', 400, 'INVALID_DATA'],
    ])
    expect(rows[0].body).toEqual({ ticks: [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }] })
  })

  test('a repeat under one Idempotency-Key is marked a replay; settings about a password are kept, passwords are not', async () => {
    const key = `audit-replay-${Date.now()}`
    const open = () =>
      t.request('POST', '/trade/open', {
        token: dealer,
        headers: { 'idempotency-key': key },
        body: { login: 100001, cmd: 0, volume: 1, symbol: 'EURUSD', sl: 0, tp: 0 },
      })
    const first = await open()
    const again = await open()
    expect([first.status, again.status]).toEqual([200, 200])
    expect(again.json.order).toBe(first.json.order)
    const patched = await t.request('PATCH', '/manager/accounts/100001', {
      token: manager,
      body: { enable_change_password: 1 },
    })
    expect(patched.status).toBe(200)
    await t.ctx.audit.settled()
    const [patch, second, firstRow] = (await rowsOf(t, admin, '?limit=3')).rows
    expect([firstRow.route, firstRow.idempotency_key, firstRow.replayed]).toEqual(['/trade/open', key, false])
    expect([second.route, second.idempotency_key, second.replayed]).toEqual(['/trade/open', key, true])
    expect(patch.body).toEqual({ enable_change_password: 1 })
  })

  test("opening a customer's identity document is recorded", async () => {
    const customer = await t.customerToken()
    const f = new FormData()
    f.append('file', new File([F.PNG as Uint8Array<ArrayBuffer>], 'passport.png'))
    f.append('purpose', 'kyc_document')
    const fileId = (await t.request('POST', '/upload', { token: customer, form: f })).json.file_id
    const doc = await t.request('POST', '/customer/kyc/documents', {
      token: customer,
      body: {
        file_id: fileId,
        step: 'identity',
        document_type: 'passport',
        valid_until: new Date(Date.now() + 400 * 86_400_000).toISOString().slice(0, 10),
      },
    })
    expect(doc.status).toBe(200)
    const id = doc.json.document.id as number
    expect((await t.request('GET', `/manager/kyc/documents/${id}/file`, { token: manager })).status).toBe(200)
    await t.ctx.audit.settled()
    const [row] = (await rowsOf(t, admin, `?route=${encodeURIComponent('/manager/kyc/documents/:id/file')}`))
      .rows
    expect(row).toMatchObject({ method: 'GET', path: `/manager/kyc/documents/${id}/file`, status: 200 })
  })

  test('customers and accounts are not recorded; only admins read the trail, filtered and paged', async () => {
    const before = (await rowsOf(t, admin)).rows[0].id as number
    const user = await t.userToken()
    expect(
      (await t.request('POST', '/market/watch', { token: user, body: { login: 100001, symbol: 'USDCHF' } }))
        .status,
    ).toBe(200)
    expect((await rowsOf(t, admin)).rows[0].id).toBe(before)
    for (const token of [manager, dealer, user])
      expect((await t.request('GET', '/manager/audit', { token })).status).toBe(403)
    // filters: by staff member, by route; pages by cursor; a range that ends before it starts is refused
    const all = (await rowsOf(t, admin)).rows
    const managerId = all.find((r) => r.role === 'MANAGER').staff_id
    expect(
      (await rowsOf(t, admin, `?staff_id=${managerId}`)).rows.every((r) => r.staff_id === managerId),
    ).toBe(true)
    const first = await rowsOf(t, admin, '?limit=1')
    expect(first.rows.length).toBe(1)
    const second = await rowsOf(t, admin, `?limit=1&cursor=${first.next_cursor}`)
    expect(second.rows[0].id).toBeLessThan(first.rows[0].id)
    const bad = await t.request('GET', '/manager/audit?from=200&to=100', { token: admin })
    expect(bad.status).toBe(400)
    expect(bad.json.message).toContain('to')
    expect((await t.request('GET', '/manager/audit?limit=501', { token: admin })).status).toBe(400)
  })

  test("a brand's admins read their brand's actions only", async () => {
    await addBetaStaff(t, [
      ['ADMIN', 2, 'admin-pass-1'],
      ['MANAGER', 1, 'manager-pass-1'],
    ])
    const host = 'beta.localhost'
    const sign = async (login: number, password: string) =>
      (await t.request('POST', '/manager/sign/in', { host, body: { login, password } })).json
        .__token as string
    const betaAdmin = await sign(2, 'admin-pass-1')
    const betaManager = await sign(1, 'manager-pass-1')
    const r = await t.request('POST', '/manager/accounts', {
      host,
      token: betaManager,
      body: { group: 'demo\\USD', password: 'beta-pass-12' },
    })
    await t.ctx.audit.settled()
    const beta = await t.request('GET', '/manager/audit', { host, token: betaAdmin })
    expect(beta.status).toBe(200)
    expect(beta.json.rows.length).toBe(1)
    expect(beta.json.rows[0].status).toBe(r.status)
    const demo = await rowsOf(t, admin)
    expect(demo.rows.some((x) => x.id === beta.json.rows[0].id)).toBe(false)
  })
})

describe('a change whose record cannot be written is not made', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp()
  })
  afterAll(() => t.close())

  test('the audit table refusing its row (any error, not only a busy one): 503 and no money moved', async () => {
    const manager = await t.staffToken()
    const [before] = await t.ctx.db.select().from(accounts).where(eq(accounts.login, 100001))
    // a trigger refusing every row: the record's write fails as a database away would make it fail
    await t.ctx.db.run(
      "CREATE TRIGGER audit_down BEFORE INSERT ON staff_actions BEGIN SELECT RAISE(ABORT, 'constraint failed'); END" as never,
    )
    const r = await t.request('POST', '/manager/accounts/100001/balance', {
      token: manager,
      body: { type: 'deposit', amount: 10 },
    })
    expect(r.status).toBe(503)
    const [after] = await t.ctx.db.select().from(accounts).where(eq(accounts.login, 100001))
    expect(after!.balance).toBe(before!.balance)
  })
})

describe('over a socket', () => {
  test('a staff change through the real server is recorded with its outcome', async () => {
    const dir = serverDir()
    const server = await startRealServer(dir.dir)
    try {
      const call = async (method: string, path: string, body?: unknown, token?: string) => {
        const r = await fetch(`${server.url}${path}`, {
          method,
          headers: { 'content-type': 'application/json', ...(token ? { authorization: token } : {}) },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
        return { status: r.status, json: (await r.json()) as any, id: r.headers.get('x-request-id') }
      }
      const manager = (await call('POST', '/manager/sign/in', { login: 1, password: 'manager-pass-1' })).json
        .__token
      const admin = (await call('POST', '/manager/sign/in', { login: 2, password: 'admin-pass-1' })).json
        .__token
      const dep = await call(
        'POST',
        '/manager/accounts/100001/balance',
        { type: 'deposit', amount: 3 },
        manager,
      )
      expect(dep.status).toBe(200)
      // the outcome is written right after the answer
      let row: any
      for (let i = 0; i < 50 && row?.status !== 200; i++) {
        row = (await call('GET', '/manager/audit?limit=1', undefined, admin)).json.rows[0]
        if (row?.status !== 200) await Bun.sleep(20)
      }
      expect(row).toMatchObject({ request_id: dep.id, status: 200, body: { type: 'deposit', amount: 3 } })
    } finally {
      await server.stop()
      dir.remove()
    }
  })
})
