// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// A hostile probe: a name or source with a lone UTF-16 surrogate ("\ud800", which JSON carries) was
// answered OK and stored as U+FFFD, so the script read back was not the one accepted.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { makeTestApp, type TestApp } from '../support/app'

let t: TestApp
let user: string

beforeAll(async () => {
  t = await makeTestApp()
  user = await t.userToken()
})
afterAll(() => t.close())

const rows = async () =>
  (await t.request('GET', '/scripts?login=100001', { token: user })).json.rows as {
    id: number
    name: string
    script: string
  }[]

test('a lone surrogate in name or script: 400 INVALID_DATA naming the field, nothing stored', async () => {
  const before = (await rows()).length
  const cases = [
    { name: 'a\ud800b', script: 'ok', field: 'name' },
    { name: 'ok', script: 'c\udfffd', field: 'script' },
    // a low surrogate before its high one is no pair
    { name: 'ok', script: '\udc00\ud800', field: 'script' },
  ]
  for (const c of cases) {
    // JSON.stringify writes a lone surrogate as the escape \ud800, as a hostile client would send it
    const r = await t.request('POST', '/script', {
      token: user,
      body: { login: 100001, name: c.name, script: c.script },
    })
    expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(r.json.message).toStartWith(`${c.field}:`)
  }
  expect(await rows()).toHaveLength(before)
  // a character outside the BMP is a surrogate pair, well formed: stored as sent
  const ok = await t.request('POST', '/script', {
    token: user,
    body: { login: 100001, name: 'rocket 🚀', script: '// 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \u00e9' },
  })
  expect(ok.status).toBe(200)
  const stored = (await rows()).find((s) => s.name === 'rocket 🚀')!
  expect(stored.script).toBe('// 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \u00e9')
  // the same on a replace: the stored script is left as it was
  for (const body of [
    { name: 'x\ud83d', script: 'y' },
    { name: 'x', script: 'y\ude80' },
  ]) {
    const r = await t.request('PUT', '/script', {
      token: user,
      body: { id: stored.id, login: 100001, ...body },
    })
    expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(r.json.message).toStartWith(body.name === 'x' ? 'script:' : 'name:')
  }
  expect((await rows()).find((s) => s.id === stored.id)).toMatchObject({
    name: 'rocket 🚀',
    script: '// 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \u00e9',
  })
})
