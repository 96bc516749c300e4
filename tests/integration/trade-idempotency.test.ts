// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Trading as a service (issue 29): the Idempotency-Key header on open, close, modify and cancel, and the
// write port used by a module that is not in the product (registered from tests/ with one line).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq, sql } from 'drizzle-orm'
import { GroupCommit } from '../../src/kernel/db/group-commit'
import type { Consumer, Topic } from '../../src/kernel/events/topic'
import { defineModule } from '../../src/kernel/module'
import { TradeOpened, TradingPort } from '../../src/modules/trading'
import type { CloseRequest } from '../../src/modules/trading/commit/close-commit'
import { orders } from '../../src/modules/trading/schema'
import { makeTestApp, type TestApp } from '../support/app'

const MIRROR = 100002

/**
 * A module of the tests, not of the product: it mirrors every BUY opened on 100001 onto 100002 through
 * trading's write port, keyed by the event id, so a redelivered event opens nothing more.
 */
const mirrorModule = defineModule({
  name: 'mirror',
  tables: {},
  setup(_k, ports) {
    const trading = ports.get(TradingPort)
    type Opened = typeof TradeOpened extends Topic<infer T> ? T : never
    const consumer: Consumer<Opened> = {
      name: 'mirror.trade-opened',
      topic: TradeOpened,
      handle: async () => {},
      async after(event) {
        const p = event.payload
        if (p.login !== 100001 || p.cmd !== 0) return
        const r = await trading.open({
          brandId: event.brandId,
          actor: 'mirror:test',
          idempotencyKey: `mirror:${event.id}`,
          login: MIRROR,
          cmd: 0,
          volume: p.volume,
          symbol: p.symbol,
          sl: 0,
          tp: 0,
        })
        results.push(r)
      },
    }
    return { consumers: [consumer] }
  },
})
const results: unknown[] = []

let t: TestApp
let user: string
let dealer: string

beforeAll(async () => {
  t = await makeTestApp({ modules: [mirrorModule] })
  user = await t.userToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  const q = await t.request('POST', '/market/quotes', {
    token: dealer,
    body: { ticks: [{ symbol: 'BTCUSD', bid: 43_000, ask: 43_030 }] },
  })
  expect(q.status).toBe(200)
})
afterAll(() => t.close())

const send = (method: string, path: string, body: unknown, key?: string) =>
  t.request(method, path, { token: user, body, headers: key ? { 'idempotency-key': key } : {} })
const OPEN = { login: 100001, cmd: 0, volume: 1, symbol: 'BTCUSD', sl: 0, tp: 0 }
const ordersOf = async (login: number) => t.ctx.db.select().from(orders).where(eq(orders.login, login))

/**
 * Holds the closes of `ticket` until `n` have come, then hands them to the group commit at once, those
 * without a key first (keyed ones in their order of arrival): one batch made on purpose, not by timing.
 * Sent at once, the requests do not always meet in one batch: each reads the account and the quote
 * first, and on sqld those reads are round trips of their own. Returns what undoes the hold.
 */
function holdCloses(ticket: number, n: number) {
  const original = GroupCommit.prototype.submit
  const held: {
    commit: GroupCommit<unknown, unknown>
    input: CloseRequest
    done: (p: Promise<unknown>) => void
  }[] = []
  const release = () => {
    GroupCommit.prototype.submit = original
  }
  GroupCommit.prototype.submit = function (this: GroupCommit<unknown, unknown>, input: unknown) {
    const request = input as CloseRequest
    if (request.input?.order?.ticket !== ticket) return original.call(this, input)
    return new Promise((resolve) => {
      held.push({ commit: this, input: request, done: resolve })
      if (held.length < n) return
      release()
      const inOrder = [...held.filter((h) => !h.input.key), ...held.filter((h) => h.input.key)]
      for (const h of inOrder) h.done(original.call(h.commit, h.input))
    })
  }
  return release
}

describe('the Idempotency-Key header', () => {
  test('an open repeated with its key answers the first order and opens nothing; at once too', async () => {
    const first = await send('POST', '/trade/open', OPEN, 'open-key-0001')
    expect(first.status).toBe(200)
    expect(first.json.idempotent).toBeUndefined()
    const before = (await ordersOf(100001)).length
    const again = await send('POST', '/trade/open', OPEN, 'open-key-0001')
    expect(again.status).toBe(200)
    expect(again.json).toMatchObject({ order: first.json.order, idempotent: true })
    expect(again.headers.get('idempotent-replayed')).toBe('true')
    // ten at once with a new key: one order
    const burst = await Promise.all(
      Array.from({ length: 10 }, () => send('POST', '/trade/open', OPEN, 'open-key-burst')),
    )
    expect(new Set(burst.map((r) => r.json.order)).size).toBe(1)
    expect(burst.filter((r) => r.json.idempotent === true)).toHaveLength(9)
    expect((await ordersOf(100001)).length).toBe(before + 1)
    // the same key for another request: 409, nothing opened
    const other = await send('POST', '/trade/open', { ...OPEN, volume: 2 }, 'open-key-0001')
    expect([other.status, other.json.error]).toEqual([409, 'IDEMPOTENCY_KEY_REUSED'])
    for (const bad of ['short', 'has space in it', 'x'.repeat(65)]) {
      const r = await send('POST', '/trade/open', OPEN, bad)
      expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
      expect(r.json.message).toStartWith('Idempotency-Key:')
    }
    const [row] = await t.ctx.db.select().from(orders).where(eq(orders.ticket, first.json.order))
    expect(row!.actor).toBe('client')
  })

  test('close, modify and cancel repeated with their keys take effect once, though the order changed since', async () => {
    const o = await send('POST', '/trade/open', { ...OPEN, volume: 4 }, 'open-for-close-1')
    const ticket = o.json.order as number
    const modify = { order: ticket, sl: 40_000, tp: 0 }
    expect((await send('PUT', '/trade/modify', modify, 'modify-key-0001')).status).toBe(200)
    const m2 = await send('PUT', '/trade/modify', modify, 'modify-key-0001')
    expect(m2.json.idempotent).toBe(true)
    // a partial close, then its retry: one close of 2, 2 left open
    const part = { order: ticket, volume: 2 }
    expect((await send('DELETE', '/trade/close', part, 'close-key-0001')).json).toEqual({ data: 'OK' })
    expect((await send('DELETE', '/trade/close', part, 'close-key-0001')).json).toEqual({
      data: 'OK',
      idempotent: true,
    })
    const [left] = await t.ctx.db.select().from(orders).where(eq(orders.ticket, ticket))
    expect([left!.state, left!.volume]).toEqual(['open', 2])
    // the whole close and its retry after the position is gone
    expect((await send('DELETE', '/trade/close', { order: ticket }, 'close-key-0002')).status).toBe(200)
    const late = await send('DELETE', '/trade/close', { order: ticket }, 'close-key-0002')
    expect([late.status, late.json.idempotent]).toEqual([200, true])
    // without a key, a second close is the error it always was
    expect((await send('DELETE', '/trade/close', { order: ticket })).status).toBe(404)
    // cancel
    const p = await send('POST', '/trade/open', { ...OPEN, cmd: 2, open_price: 40_000 }, 'pending-key-01')
    expect((await send('DELETE', '/trade/cancel', { order: p.json.order }, 'cancel-key-0001')).json).toEqual({
      data: 'ok',
    })
    const c2 = await send('DELETE', '/trade/cancel', { order: p.json.order }, 'cancel-key-0001')
    expect(c2.json).toEqual({ data: 'ok', idempotent: true })
  })

  test("a repeat in the same batch answers what its first request came to: not 'closed' when the first closed nothing", async () => {
    // a SELL: the mirror module of this file copies BUYs
    const o = await send('POST', '/trade/open', { ...OPEN, cmd: 1, volume: 2 }, 'open-for-batch-1')
    const ticket = o.json.order as number
    // a close without a key, then the keyed close and its repeat, in one batch of the close commit, the
    // plain one first: it takes the position and the keyed one closes nothing
    const release = holdCloses(ticket, 3)
    const [plain, keyed, repeat] = await Promise.all([
      send('DELETE', '/trade/close', { order: ticket }),
      send('DELETE', '/trade/close', { order: ticket }, 'close-key-batch'),
      send('DELETE', '/trade/close', { order: ticket }, 'close-key-batch'),
    ]).finally(release)
    const closedBy = [plain, keyed, repeat].filter((r) => r.status === 200 && r.json.idempotent !== true)
    expect(closedBy).toEqual([plain])
    expect(keyed.status).not.toBe(200)
    expect([repeat.status, repeat.json]).toEqual([keyed.status, keyed.json])
    // the key was never taken: asked again, it is not a replay of a close that did not happen
    const later = await send('DELETE', '/trade/close', { order: ticket }, 'close-key-batch')
    expect([later.status, later.json.idempotent]).toEqual([404, undefined])
  })
})

describe('the write port, from a module of the tests registered with one line', () => {
  test('a trade.opened redelivered three times and across a relay restart opens one mirror, with its actor', async () => {
    const before = (await ordersOf(MIRROR)).length
    const o = await send('POST', '/trade/open', { ...OPEN, volume: 3 })
    expect(o.status).toBe(200)
    await t.settle()
    const mirrored = async () =>
      (await ordersOf(MIRROR)).filter((r) => r.actor === 'mirror:test' && r.volume === 3)
    expect(await mirrored()).toHaveLength(1)
    // redeliver: forget the consumer's delivery of that event and run the relay again
    const [ev] = await t.ctx.db.all<{ id: number }>(
      sql`select id from outbox where topic = 'trade.opened' and json_extract(payload, '$.login') = 100001
          and json_extract(payload, '$.volume') = 3 order by id desc limit 1`,
    )
    const redeliver = async () => {
      await t.ctx.db.run(
        sql`delete from event_deliveries where event_id = ${ev!.id} and consumer = 'mirror.trade-opened'`,
      )
      await t.ctx.db.run(
        sql`update outbox set dispatched_at = null, next_at = 0, lease_owner = null, lease_until = null where id = ${ev!.id}`,
      )
      await t.settle()
    }
    for (let i = 0; i < 3; i++) await redeliver()
    await t.app.lifecycle.stop()
    await t.app.lifecycle.start()
    await redeliver()
    expect(await mirrored()).toHaveLength(1)
    expect((await ordersOf(MIRROR)).length).toBe(before + 1)
    // every delivery after the first was answered as a repeat
    const last = results.slice(-5) as { ok: boolean; idempotent?: boolean }[]
    expect(last.map((r) => [r.ok, r.idempotent])).toEqual([
      [true, false],
      [true, true],
      [true, true],
      [true, true],
      [true, true],
    ])
  })

  test('a refusal comes back as data with its code, not as a thrown HTTP error', async () => {
    const trading = t.ports.get(TradingPort)
    const r = await trading.open({
      brandId: 1,
      actor: 'mirror:test',
      idempotencyKey: 'refused-0001',
      login: MIRROR,
      cmd: 0,
      volume: 99_999,
      symbol: 'BTCUSD',
      sl: 0,
      tp: 0,
    })
    expect(r).toMatchObject({ ok: false, code: 'OPEN_ORDER_ERROR' })
    const foreign = await trading.open({
      brandId: 2,
      actor: 'mirror:test',
      idempotencyKey: 'refused-0002',
      ...OPEN,
    })
    expect(foreign).toMatchObject({ ok: false, code: 'USER_NOT_FOUND' })
  })
})
