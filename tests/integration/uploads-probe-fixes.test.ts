// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { ManualClock } from '../../src/kernel/clock'
import { makeTestApp, type TestApp } from '../support/app'
import * as F from '../support/files'

// A hostile probe (auth2): POST /upload had no budget per principal, so one session filled the store.

function form(bytes: Uint8Array, name: string, purpose = 'kyc_document') {
  const f = new FormData()
  f.append('file', new File([bytes as Uint8Array<ArrayBuffer>], name))
  f.append('purpose', purpose)
  return f
}

describe('the default budget (UPLOAD_MAX_FILES_PER_DAY 50)', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp()
  })
  afterAll(() => t.close())

  test('one session stores 400 never-attached files in seconds, none refused', async () => {
    const customer = await t.customerToken()
    const statuses: Record<number, number> = {}
    for (let i = 0; i < 400; i++) {
      const f = new FormData()
      f.append('file', new File([F.PNG], `p${i}.png`, { type: 'image/png' }))
      f.append('purpose', 'kyc_document')
      const r = await t.request('POST', '/upload', { token: customer, form: f })
      statuses[r.status] = (statuses[r.status] ?? 0) + 1
    }
    // a budget of uploads per principal answers 429 at some point
    expect(statuses[429] ?? 0).toBeGreaterThan(0)
    expect(statuses[200]).toBe(50)
    // a refused upload leaves no file behind in the store
    expect(readdirSync(t.config.upload.dir).length).toBe(50)
  })
})

describe('a small budget, a moving clock', () => {
  const clock = new ManualClock()
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp({
      clock,
      // the day's bytes at least the per-file limit (a start below it is refused: the test after these)
      env: {
        UPLOAD_MAX_FILES_PER_DAY: '3',
        UPLOAD_MAX_BYTES_PER_DAY: String(3 * 1024),
        UPLOAD_MAX_BYTES: String(3 * 1024),
      },
    })
  })
  afterAll(() => t.close())

  test('past the files: 429 TOO_MANY_REQUESTS with Retry-After; another principal still uploads; the window frees room', async () => {
    const customer = await t.customerToken()
    const up = (token: string) => t.request('POST', '/upload', { token, form: form(F.PNG, 'p.png') })
    expect((await up(customer)).status).toBe(200)
    clock.advance(3_600_000)
    expect((await up(customer)).status).toBe(200)
    expect((await up(customer)).status).toBe(200)
    const r = await up(customer)
    expect(r.status).toBe(429)
    expect(r.json.error).toBe('TOO_MANY_REQUESTS')
    // the first file leaves the 24 hours in 23 hours
    expect(Number(r.headers.get('retry-after'))).toBe(23 * 3600)
    // the budget is the principal's: an account of the same brand has its own
    expect((await up(await t.userToken())).status).toBe(200)
    clock.advance(23 * 3_600_000 + 1000)
    const again = await t.customerToken()
    expect((await up(again)).status).toBe(200)
    expect((await up(again)).status).toBe(429)
  })

  test('past the bytes: a file that would pass the day’s bytes is refused, a smaller one fits', async () => {
    clock.advance(2 * 86_400_000)
    const user = await t.userToken(100002)
    const big = new Uint8Array(2000)
    big.set(F.PNG)
    const send = (bytes: Uint8Array) =>
      t.request('POST', '/upload', { token: user, form: form(bytes, 'p.png', 'attachment') })
    expect((await send(big)).status).toBe(200)
    const r = await send(big)
    expect(r.status).toBe(429)
    expect(r.headers.get('retry-after')).toBeTruthy()
    expect((await send(F.PNG)).status).toBe(200)
  })

  test('a burst sent at once passes the budget by no file', async () => {
    clock.advance(2 * 86_400_000)
    const customer = await t.customerToken()
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        t.request('POST', '/upload', { token: customer, form: form(F.PNG, `b${i}.png`) }),
      ),
    )
    expect(answers.filter((a) => a.status === 200).length).toBe(3)
    expect(answers.filter((a) => a.status === 429).length).toBe(5)
    const list = await t.request('GET', '/upload/list', { token: customer })
    const since = clock.now() - 86_400_000
    expect(list.json.rows.filter((r: any) => r.created_time * 1000 > since).length).toBe(3)
  })
})

test('a day budget of bytes below the per-file limit stops the start (a file between the two would answer 429 for ever)', async () => {
  await expect(
    makeTestApp({ env: { UPLOAD_MAX_BYTES_PER_DAY: '1024', UPLOAD_MAX_BYTES: '2048' } }),
  ).rejects.toThrow('UPLOAD_MAX_BYTES_PER_DAY (1024) must be at least UPLOAD_MAX_BYTES (2048)')
})
