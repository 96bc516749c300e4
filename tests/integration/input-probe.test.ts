// Findings of a hostile sweep of every route's inputs (2026-11-27): each test failed before its fix.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { makeTestApp, type TestApp } from '../support/app'

let t: TestApp
let staff: string
let user: string
let customer: string
beforeAll(async () => {
  t = await makeTestApp()
  staff = await t.staffToken()
  user = await t.userToken()
  customer = await t.customerToken()
})
afterAll(() => t.close())

test('a "__proto__" key of a JSON body is an unknown field, refused: it never becomes the body\'s prototype', async () => {
  const balance = async () => (await t.request('GET', '/balance/me?login=100003', { token: staff })).json
  const before = await balance()
  const r = await t.request('POST', '/manager/accounts/100003/balance', {
    token: staff,
    body: '{"__proto__":{"comment":"from-proto","idempotency_key":"proto-key-1"},"type":"deposit","amount":1}',
  })
  expect([r.status, r.json]).toEqual([400, { error: 'INVALID_DATA', message: '__proto__: not allowed' }])
  expect(await balance()).toEqual(before)
  const notify = await t.request('POST', '/manager/notify', {
    token: staff,
    body: '{"__proto__":{"anything":1},"login":100001,"title":"t","body":"b","level":"info"}',
  })
  expect([notify.status, notify.json.message]).toEqual([400, '__proto__: not allowed'])
})

test('a query parameter given twice is refused, whichever of them is valid', async () => {
  for (const q of ['login=abc&login=100001', 'login=100001&login=100002', 'login=100001&login=100001']) {
    const r = await t.request('GET', `/balance/me?${q}`, { token: user })
    expect([q, r.status, r.json]).toEqual([
      q,
      400,
      { error: 'INVALID_DATA', message: 'query login: given more than once' },
    ])
  }
  const encoded = await t.request('GET', '/trade/history?login=100001&li%6Dit=5&limit=10', { token: user })
  expect([encoded.status, encoded.json.message]).toEqual([400, 'query limit: given more than once'])
  // one of each, and parameters the route does not declare (a cache buster), stay fine
  const ok = await t.request('GET', '/trade/history?login=100001&limit=10&_=1&_=2', { token: user })
  expect(ok.status).toBe(200)
})

test('an upload needs a file name, and one without control or bidi-override characters', async () => {
  const boundary = 'probe-boundary'
  const multipart = (filename: string) =>
    t.request('POST', '/upload', {
      token: user,
      headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      body: [
        `--${boundary}`,
        'Content-Disposition: form-data; name="purpose"',
        '',
        'attachment',
        `--${boundary}`,
        `Content-Disposition: form-data; name="file"; filename="${filename}"`,
        'Content-Type: text/plain',
        '',
        'hello',
        `--${boundary}--`,
        '',
      ].join('\r\n'),
    })
  const unnamed = await multipart('')
  expect([unnamed.status, unnamed.json.error]).toEqual([400, 'INVALID_DATA'])
  expect(unnamed.json.message).toMatch(/^file: a file name is required/)
  for (const name of ['invoice\u202Efdp.txt', 'a\u0085b.txt']) {
    const form = new FormData()
    form.append('purpose', 'attachment')
    form.append('file', new File(['hello'], name))
    const r = await t.request('POST', '/upload', { token: user, form })
    expect([r.status, r.json]).toEqual([
      400,
      {
        error: 'INVALID_DATA',
        message: 'file: the file name has control or bidirectional-override characters',
      },
    ])
  }
  expect((await multipart('notes.txt')).status).toBe(200)
})

test('public pages and tracking links take a repeated parameter; an install takes keys its parser knows', async () => {
  // an ad platform may add a parameter the URL already has: these never answer an error
  expect((await t.request('GET', '/?utm_source=fb&utm_source=fb')).status).toBe(200)
  const link = await t.request('GET', '/go/no-such-code?utm_source=a&utm_source=a')
  expect(link.status).toBe(302)
  const install = await t.request('POST', '/app', {
    body: { installation_id: 'probe-install-1', platform: 'ios', attribution: { UTM_Source: 'fb' } },
  })
  expect(install.status).toBe(200)
})

test('a multipart part named "__proto__" is refused, not made the form\'s prototype', async () => {
  const form = new FormData()
  form.append('purpose', 'attachment')
  form.append('__proto__', new File(['hello'], 'x.txt'))
  form.append('file', new File(['hello'], 'notes.txt'))
  const r = await t.request('POST', '/upload', { token: user, form })
  expect([r.status, r.json]).toEqual([400, { error: 'INVALID_DATA', message: '__proto__: not allowed' }])
})

test("an unknown key inside a follower profile's defaults is named in the refusal", async () => {
  const r = await t.request('POST', '/copytrade/follower', {
    token: customer,
    body: { login: 100001, defaults: { a: 1 } },
  })
  expect([r.status, r.json]).toEqual([400, { error: 'INVALID_DATA', message: 'defaults.a: not allowed' }])
})

test('a lone UTF-16 surrogate in any body is refused, naming the field: nothing stored, nothing echoed', async () => {
  const list = async () =>
    (await t.request('GET', '/notify/list?login=100001&limit=500&offset=0', { token: user })).json
  const before = await list()
  // JSON.stringify writes the lone surrogate as the escape "\ud800", as a hostile client would send it
  const r = await t.request('POST', '/manager/notify', {
    token: staff,
    body: { login: 100001, title: 'Margin \ud800 call', body: 'b', level: 'info' },
  })
  expect([r.status, r.json]).toEqual([
    400,
    {
      error: 'INVALID_DATA',
      message: 'title: not well-formed text (a lone UTF-16 surrogate such as \\ud800)',
    },
  ])
  expect(await list()).toEqual(before)
  // a pair is a character: taken
  const ok = await t.request('POST', '/manager/notify', {
    token: staff,
    body: { login: 100001, title: 'Margin 🚨 call', body: 'b', level: 'info' },
  })
  expect(ok.status).toBe(200)
})
