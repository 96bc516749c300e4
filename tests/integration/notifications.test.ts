// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ManualClock } from '../../src/kernel/clock'
import { makeTestApp, type TestApp } from '../support/app'
import { quoteIngest } from '../support/quotes'

const clock = new ManualClock(Date.UTC(2026, 0, 5, 12, 0, 0))
let t: TestApp
let user: string
let manager: string
let dealer: string

const ingest = quoteIngest(
  () => t,
  clock,
  () => dealer,
)
/** Notifications arrive through the event relay; settle() waits until it has delivered what is committed. */
const list = async (token: string, q = 'limit=50&offset=0&filter=') => {
  await t.settle()
  return t.request('GET', `/notify/list?${q}`, { token })
}
const send = (login: number, title: string, body = 'details') =>
  t.request('POST', '/manager/notify', { token: manager, body: { login, title, body } })

beforeAll(async () => {
  t = await makeTestApp({ clock })
  manager = await t.staffToken(1, 'manager-pass-1')
  dealer = await t.staffToken(3, 'dealer-pass-1')
  user = await t.userToken()
})
afterAll(() => t.close())

describe('GET /notify/list', () => {
  test("only the login's own rows, in the 2.10 order; broadcasts and other logins never appear", async () => {
    expect((await send(100001, 'Welcome aboard', 'Your account is ready')).status).toBe(200)
    expect((await send(100002, 'For someone else')).status).toBe(200)
    expect((await send(0, 'Broadcast to everyone')).status).toBe(200)
    const r = await list(user)
    expect(r.status).toBe(200)
    expect(r.json.structure).toEqual([
      'id',
      'token',
      'message',
      'create_time',
      'open_time',
      'type',
      'status',
      'level',
      'description',
      'data',
    ])
    expect(r.json.rows).toHaveLength(1)
    const [id, token, message, createTime, openTime, type, status, level, description, data] = r.json.rows[0]
    expect(id).toBeGreaterThan(0)
    expect([token, type, status, level, openTime]).toEqual(['staff.message', 'system', 0, 'info', 0])
    expect(message).toEqual({ title: 'Welcome aboard', body: 'Your account is ready' })
    expect(createTime).toBe(Math.floor(clock.now() / 1000))
    expect([description, data]).toEqual([{}, {}])
  })

  test('limit, offset and filter may be left out: their defaults (50, 0, all)', async () => {
    const all = await list(user)
    const bare = await list(user, '')
    expect([bare.status, bare.json]).toEqual([200, all.json])
    const bad = await list(user, 'limit=0')
    expect([bad.status, bad.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(bad.json.message).toMatch(/limit/)
  })

  test('filter matches the message text literally; limit and offset page newest first', async () => {
    for (let i = 1; i <= 5; i++) await send(100001, `Statement ${i}`, `monthly statement number ${i}`)
    await send(100001, '100% margin', 'literal percent sign')
    const statements = await list(user, 'limit=50&offset=0&filter=statement')
    expect(statements.json.rows.map((r: any[]) => r[2].title)).toEqual([
      'Statement 5',
      'Statement 4',
      'Statement 3',
      'Statement 2',
      'Statement 1',
    ])
    const page = await list(user, 'limit=2&offset=1&filter=Statement')
    expect(page.json.rows.map((r: any[]) => r[2].title)).toEqual(['Statement 4', 'Statement 3'])
    // % and _ are not wildcards
    const percent = await list(user, 'limit=50&offset=0&filter=100%25')
    expect(percent.json.rows.map((r: any[]) => r[2].title)).toEqual(['100% margin'])
    const underscore = await list(user, 'limit=50&offset=0&filter=_')
    expect(underscore.json.rows).toEqual([])
  })

  test('filter looks at the title and the body as they read, not at how they are stored', async () => {
    await send(100001, 'Quote of the day', 'He said "buy low" and left\\early')
    const titles = async (filter: string) =>
      (await list(user, `limit=50&offset=0&filter=${encodeURIComponent(filter)}`)).json.rows.map(
        (r: any[]) => r[2].title,
      )
    // the stored JSON's keys and punctuation are no text of any notification
    for (const filter of ['title', 'body', '{"', '":"'])
      expect([filter, await titles(filter)]).toEqual([filter, []])
    // a quote and a backslash match as written (stored escaped)
    expect(await titles('"buy low"')).toEqual(['Quote of the day'])
    expect(await titles('left\\early')).toEqual(['Quote of the day'])
  })

  test('validation and access: SESSION_USER only', async () => {
    const long = await list(user, `limit=10&offset=0&filter=${'x'.repeat(129)}`)
    expect([long.status, long.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(long.json.message).toContain('filter')
    const badLimit = await list(user, 'limit=0&offset=0&filter=')
    expect(badLimit.status).toBe(400)
    expect((await t.request('GET', '/notify/list?limit=1&offset=0&filter=')).status).toBe(401)
    expect((await list(manager)).status).toBe(403)
    expect((await list(await t.customerToken())).status).toBe(403)
    // the other login sees its own row only
    const other = await list(await t.userToken(100002))
    expect(other.json.rows.map((r: any[]) => r[2].title)).toEqual(['For someone else'])
  })
})

describe('PUT /notify/read and POST /manager/notify', () => {
  test("marks the given ids, or all, of the session's login only", async () => {
    const rows = (await list(user)).json.rows as any[][]
    const first = rows[0][0]
    const r = await t.request('PUT', '/notify/read', { token: user, body: { ids: [first] } })
    expect(r.json).toEqual({ data: 'OK', updated: 1 })
    const after = (await list(user)).json.rows as any[][]
    const marked = after.find((x) => x[0] === first)!
    expect([marked[6], marked[4]]).toEqual([1, Math.floor(clock.now() / 1000)])
    // another login's id is not touched
    const otherId = ((await list(await t.userToken(100002))).json.rows as any[][])[0][0]
    const foreign = await t.request('PUT', '/notify/read', { token: user, body: { ids: [otherId] } })
    expect(foreign.json.updated).toBe(0)
    const all = await t.request('PUT', '/notify/read', { token: user, body: { all: true } })
    expect(all.json.updated).toBe(after.length - 1)
    expect(((await list(user)).json.rows as any[][]).every((x) => x[6] === 1)).toBe(true)
    const empty = await t.request('PUT', '/notify/read', { token: user, body: {} })
    expect([empty.status, empty.json.error]).toEqual([400, 'INVALID_DATA'])
  })

  test('staff send: validation, brand scope, roles', async () => {
    const beta = await send(200001, 'cross brand')
    expect([beta.status, beta.json.error]).toEqual([404, 'ACCOUNT_NOT_FOUND'])
    const noTitle = await t.request('POST', '/manager/notify', {
      token: manager,
      body: { login: 100001, title: '', body: 'x' },
    })
    expect(noTitle.status).toBe(400)
    const asUser = await t.request('POST', '/manager/notify', {
      token: user,
      body: { login: 100001, title: 'x', body: 'x' },
    })
    expect(asUser.status).toBe(403)
    const asDealer = await t.request('POST', '/manager/notify', {
      token: dealer,
      body: { login: 100001, title: 'x', body: 'x' },
    })
    expect(asDealer.status).toBe(403)
  })
})

describe('the trading back end notifies', () => {
  const open = (body: Record<string, unknown>, token = user) =>
    t.request('POST', '/trade/open', { token, body: { login: 100001, sl: 0, tp: 0, ...body } })
  const byToken = async (token: string) =>
    ((await list(user, 'limit=100&offset=0&filter=')).json.rows as any[][]).filter((r) => r[1] === token)

  test('SL hit, pending activation and expiry, with the ticket, symbol and price in data', async () => {
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
    const pos = await open({ cmd: 0, volume: 10, symbol: 'EURUSD', sl: 1.095 })
    const limit = await open({ cmd: 2, volume: 10, symbol: 'EURUSD', open_price: 1.098 })
    const stop = await open({
      cmd: 4,
      volume: 10,
      symbol: 'EURUSD',
      open_price: 1.2,
      expiration: Math.floor(clock.now() / 1000) + 60,
    })
    expect([pos.status, limit.status, stop.status]).toEqual([200, 200, 200])
    await ingest([{ symbol: 'EURUSD', bid: 1.0979, ask: 1.098 }])
    await ingest([{ symbol: 'EURUSD', bid: 1.0949, ask: 1.095 }])
    clock.advance(120_000)
    await ingest([{ symbol: 'EURUSD', bid: 1.095, ask: 1.0951 }])
    const [sl] = await byToken('order.sl')
    expect(sl[2].title).toBe('Stop loss hit on EURUSD')
    expect(sl[2].body).toContain(`#${pos.json.order}`)
    expect(sl[5]).toBe('trade')
    expect(sl[9]).toMatchObject({ ticket: pos.json.order, symbol: 'EURUSD', price: 1.0949 })
    const [act] = await byToken('order.activated')
    expect(act[2].body).toContain('BUY LIMIT')
    expect(act[9]).toMatchObject({ ticket: limit.json.order, price: 1.098 })
    const [exp] = await byToken('order.expired')
    expect(exp[9]).toMatchObject({ ticket: stop.json.order })
  })

  test('a pending order that reaches its price without the margin is cancelled, under a token of its own', async () => {
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
    // 50 lots of EURUSD at 1.09 and leverage 1:100 need about 54,500 USD of margin; the account has 10,000
    const limit = await open({ cmd: 2, volume: 5000, symbol: 'EURUSD', open_price: 1.09 })
    expect(limit.status).toBe(200)
    const activatedBefore = (await byToken('order.activated')).length
    await ingest([{ symbol: 'EURUSD', bid: 1.0899, ask: 1.09 }])
    const [cancelled] = await byToken('order.cancelled')
    expect(cancelled[5]).toBe('trade')
    expect(cancelled[7]).toBe('warning')
    expect(cancelled[2].title).toBe('Pending order on EURUSD cancelled')
    expect(cancelled[9]).toMatchObject({ ticket: limit.json.order, reason: 'no_money' })
    expect(await byToken('order.activated')).toHaveLength(activatedBefore)
  })

  test('a pending order reached on a read-only account is cancelled with a notice saying why', async () => {
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1001 }])
    const limit = await open({ cmd: 2, volume: 10, symbol: 'EURUSD', open_price: 1.085 })
    expect(limit.status).toBe(200)
    const readOnly = (flag: number) =>
      t.request('PATCH', '/manager/accounts/100001', { token: manager, body: { enable_read_only: flag } })
    expect((await readOnly(1)).status).toBe(200)
    try {
      await ingest([{ symbol: 'EURUSD', bid: 1.0849, ask: 1.085 }])
      const mine = (await byToken('order.cancelled')).filter((r) => r[9].ticket === limit.json.order)
      expect(mine).toHaveLength(1)
      expect(mine[0]![2].body).toContain('disabled or read-only')
      expect(mine[0]![9]).toMatchObject({ reason: 'trade_disabled', price: 1.085 })
    } finally {
      expect((await readOnly(0)).status).toBe(200)
    }
  })

  test('margin call once per episode, then stop-out, on the account that reached them', async () => {
    const demo = await t.userToken(100002)
    await ingest([
      { symbol: 'EURUSD', bid: 1.1, ask: 1.1001 },
      { symbol: 'EURGBP', bid: 0.86, ask: 0.8602 },
      // EURGBP results convert to USD through GBPUSD
      { symbol: 'GBPUSD', bid: 1.27, ask: 1.2702 },
    ])
    const a = await open({ login: 100002, cmd: 0, volume: 500, symbol: 'EURUSD' }, demo)
    const b = await open({ login: 100002, cmd: 1, volume: 300, symbol: 'EURGBP' }, demo)
    expect([a.status, b.status]).toEqual([200, 200])
    await ingest([{ symbol: 'EURUSD', bid: 1.086, ask: 1.0861 }])
    await ingest([{ symbol: 'EURUSD', bid: 1.0859, ask: 1.086 }])
    const rows = (await list(demo, 'limit=100&offset=0&filter=')).json.rows as any[][]
    const calls = rows.filter((r) => r[1] === 'margin.call')
    expect(calls).toHaveLength(1)
    expect(calls[0][7]).toBe('critical')
    expect(calls[0][2].body).toMatch(/Margin level is \d+\.\d\d%/)
    const stops = rows.filter((r) => r[1] === 'margin.stop_out')
    expect(stops).toHaveLength(1)
    expect(stops[0][9]).toMatchObject({ ticket: a.json.order, symbol: 'EURUSD' })
    // nothing of this reached the other login
    const mine = (await list(user, 'limit=100&offset=0&filter=')).json.rows as any[][]
    expect(mine.filter((r) => r[1].startsWith('margin.'))).toEqual([])
  })
})
