// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeTestApp, type TestApp } from '../support/app'

let t: TestApp
let user: string
let manager: string

beforeAll(async () => {
  t = await makeTestApp()
  user = await t.userToken()
  manager = await t.staffToken(1, 'manager-pass-1')
})
afterAll(() => t.close())

const listByBody = (token: string, login: unknown) =>
  t.request('GET', '/scripts', {
    token,
    body: JSON.stringify({ login }),
    headers: { 'content-type': 'application/json' },
  })
const listByQuery = (token: string, login: number) => t.request('GET', `/scripts?login=${login}`, { token })

describe('scripts (spec 4.6)', () => {
  test('add: data OK, type forced to private, autostart defaults to 0; list by body or by query', async () => {
    const r = await t.request('POST', '/script', {
      token: user,
      body: { login: 100001, name: 'grid', script: 'print("hi")', type: 'public' },
    })
    expect(r.status).toBe(200)
    expect(r.json).toEqual({ data: 'OK' })
    const byBody = await listByBody(user, 100001)
    expect(byBody.status).toBe(200)
    expect(byBody.json.rows).toEqual([
      {
        id: expect.any(Number),
        login: 100001,
        name: 'grid',
        script: 'print("hi")',
        type: 'private',
        autostart: 0,
      },
    ])
    const byQuery = await listByQuery(user, 100001)
    expect(byQuery.json).toEqual(byBody.json)
  })

  test('update keeps autostart when omitted, sets it when sent; type stays private', async () => {
    await t.request('POST', '/script', {
      token: user,
      body: { login: 100001, name: 'auto', script: 'a', autostart: 1 },
    })
    const auto = (await listByQuery(user, 100001)).json.rows.find((s: { name: string }) => s.name === 'auto')
    expect(auto.autostart).toBe(1)
    const keep = await t.request('PUT', '/script', {
      token: user,
      body: { id: auto.id, login: 100001, name: 'auto2', script: 'b', type: 'shared' },
    })
    expect(keep.json).toEqual({ data: 'OK' })
    let now = (await listByQuery(user, 100001)).json.rows.find((s: { id: number }) => s.id === auto.id)
    expect(now).toMatchObject({ name: 'auto2', script: 'b', autostart: 1, type: 'private' })
    await t.request('PUT', '/script', {
      token: user,
      body: { id: auto.id, login: 100001, name: 'auto2', script: 'b', autostart: 0 },
    })
    now = (await listByQuery(user, 100001)).json.rows.find((s: { id: number }) => s.id === auto.id)
    expect(now.autostart).toBe(0)
  })

  test('codes: INVALID_DATA, INVALID_ADD_SCRIPT, INVALID_UPDATE_SCRIPT, SCRIPT_NOT_FOUND', async () => {
    const noLogin = await t.request('GET', '/scripts', { token: user })
    expect([noLogin.status, noLogin.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(noLogin.json.message).toContain('login')
    expect((await listByBody(user, 'x')).status).toBe(400)
    const foreignList = await listByQuery(user, 100002)
    expect([foreignList.status, foreignList.json.error]).toEqual([400, 'INVALID_DATA'])
    const missingName = await t.request('POST', '/script', {
      token: user,
      body: { login: 100001, script: 'x' },
    })
    expect([missingName.status, missingName.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(missingName.json.message).toContain('name')
    const huge = await t.request('POST', '/script', {
      token: user,
      body: { login: 100001, name: 'big', script: 'x'.repeat(65_537) },
    })
    expect([huge.status, huge.json.error]).toEqual([400, 'INVALID_DATA'])
    const foreignAdd = await t.request('POST', '/script', {
      token: user,
      body: { login: 100002, name: 'n', script: 's' },
    })
    expect([foreignAdd.status, foreignAdd.json.error]).toEqual([500, 'INVALID_ADD_SCRIPT'])
    const badAutostart = await t.request('POST', '/script', {
      token: user,
      body: { login: 100001, name: 'n', script: 's', autostart: 2 },
    })
    expect(badAutostart.status).toBe(400)
    const missing = await t.request('PUT', '/script', {
      token: user,
      body: { id: 999_999, login: 100001, name: 'n', script: 's' },
    })
    expect([missing.status, missing.json.error]).toEqual([500, 'INVALID_UPDATE_SCRIPT'])
    const gone = await t.request('DELETE', '/script', { token: user, body: { id: 999_999, login: 100001 } })
    expect([gone.status, gone.json.error]).toEqual([404, 'SCRIPT_NOT_FOUND'])
    // nothing was written by the refused calls
    expect((await listByQuery(user, 100001)).json.rows.map((s: { name: string }) => s.name)).toEqual([
      'grid',
      'auto2',
    ])
  })

  test("staff work on any login of the brand; another user's script cannot be changed or deleted", async () => {
    const add = await t.request('POST', '/script', {
      token: manager,
      body: { login: 100002, name: 'staff-made', script: 's' },
    })
    expect(add.json).toEqual({ data: 'OK' })
    const theirs = (await listByQuery(manager, 100002)).json.rows[0]
    expect(theirs).toMatchObject({ login: 100002, name: 'staff-made' })
    // user 100001 names its own login but another login's script id: not found, unchanged
    const steal = await t.request('PUT', '/script', {
      token: user,
      body: { id: theirs.id, login: 100001, name: 'stolen', script: 'x' },
    })
    expect(steal.json.error).toBe('INVALID_UPDATE_SCRIPT')
    const del = await t.request('DELETE', '/script', { token: user, body: { id: theirs.id, login: 100001 } })
    expect(del.status).toBe(404)
    expect((await listByQuery(manager, 100002)).json.rows[0].name).toBe('staff-made')
    const own = await t.request('DELETE', '/script', {
      token: manager,
      body: { id: theirs.id, login: 100002 },
    })
    expect(own.json).toEqual({ data: 'OK' })
    expect((await listByQuery(manager, 100002)).json.rows).toEqual([])
    const beta = await t.request('GET', '/scripts?login=200001', { token: manager })
    expect(beta.status).toBe(400)
    const customer = await listByQuery(await t.customerToken(), 100002)
    expect(customer.status).toBe(403)
  })
})
