// Webhooks against real processes (issue 19): two app instances on a real sqld and redis-server; one
// webhook replayed 100 times, 20 at a time, over both; a process killed between the inbox write and the
// credit, and one killed during a flood of webhooks, then restarted: every deposit credited exactly once;
// a real fault in the update's transaction (a trigger) leaves the event stored for the inbox job.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createClient } from '@libsql/client'
import { sandboxEvent, signSandbox } from '../../src/modules/cashier/providers/sandbox'
import { waitFor } from '../support/ports'
import { type RedisServer, startRedis } from '../support/redis'
import { call, type RealServer, serverDir, signIn, startRealServer } from '../support/server'
import { type SqldServer, startSqld } from '../support/sqld'

const SECRET = 'sandbox-demo-secret-dev-only'
const LOGIN = 100001
let sqld: SqldServer
let redis: RedisServer
const home = serverDir()
let a: RealServer
let b: RealServer
let customer: string
let manager: string

const env = () => ({ DATABASE_URL: sqld.url, REDIS_URL: redis.url })

async function newDeposit(amount: number) {
  const r = await call(a.url, 'POST', '/cashier/deposit', {
    token: customer,
    body: { login: LOGIN, method: 'card', amount },
  })
  expect(r.status).toBe(200)
  return { id: r.json.transaction.id as number, minor: amount * 100 }
}

function succeeded(eventId: string, d: { id: number; minor: number }) {
  const body = sandboxEvent(eventId, 'payment.succeeded', {
    token: `tok${d.id}`,
    reference: String(d.id),
    amount: d.minor,
    currency: 'USD',
  })
  return { body, eventId }
}

const send = (base: string, body: string) =>
  call(base, 'POST', '/cashier/webhook/sandbox', {
    raw: body,
    headers: {
      'content-type': 'application/json',
      'sandbox-signature': signSandbox(SECRET, body, Math.floor(Date.now() / 1000)),
    },
  })

const statusOf = async (id: number) =>
  (await call(b.url, 'GET', `/manager/cashier/transactions/${id}`, { token: manager })).json.status_name

async function balance() {
  return (await call(b.url, 'GET', `/account/me?login=${LOGIN}`, { token: customer })).json.balance as number
}

async function ledger() {
  const r = await call(b.url, 'GET', `/manager/accounts/${LOGIN}/operations?limit=500`, { token: manager })
  return r.json.rows as { amount: number; comment: string }[]
}

const creditsOf = (rows: { amount: number; comment: string }[], id: number) =>
  rows.filter((r) => r.amount > 0 && r.comment.startsWith(`deposit #${id} `)).length

async function expectBalanceIsLedger() {
  const rows = await ledger()
  const sum = rows.reduce((s, r) => s + Math.round(r.amount * 100), 0) / 100
  expect(sum).toBe(await balance())
}

beforeAll(async () => {
  ;[sqld, redis] = await Promise.all([startSqld(), startRedis()])
  ;[a, b] = await Promise.all([startRealServer(home.dir, env()), startRealServer(home.dir, env())])
  customer = await signIn(a.url, '/customer/sign/in', { email: 'demo@example.com', password: 'demo-pass-1' })
  manager = await signIn(a.url, '/manager/sign/in', { login: 1, password: 'manager-pass-1' })
}, 120_000)

afterAll(async () => {
  await Promise.all([a, b].map((s) => s?.stop()))
  await Promise.all([sqld?.stop(), redis?.stop()])
  home.remove()
})

describe('webhooks on two instances', () => {
  test('one webhook replayed 100 times, 20 at a time, over both instances: credited once', async () => {
    const before = await balance()
    const d = await newDeposit(100)
    const e = succeeded('evt-replay-1', d)
    const answers: { status: number; json: any }[] = []
    for (let wave = 0; wave < 5; wave++)
      answers.push(
        ...(await Promise.all(
          Array.from({ length: 20 }, (_, i) => send(i % 2 === 0 ? a.url : b.url, e.body)),
        )),
      )
    expect(answers.map((r) => r.status)).toEqual(Array(100).fill(200))
    expect(answers.filter((r) => r.json.duplicate === false)).toHaveLength(1)
    expect(await statusOf(d.id)).toBe('credited')
    expect(await balance()).toBe(before + 100)
    expect(creditsOf(await ledger(), d.id)).toBe(1)
    await expectBalanceIsLedger()
  })

  test('forged variants are refused on both instances: none accepted', async () => {
    const d = await newDeposit(10)
    const e = succeeded('evt-forged-1', d)
    const now = Math.floor(Date.now() / 1000)
    const variants: Record<string, string>[] = [
      {},
      { 'sandbox-signature': signSandbox('not-the-secret-at-all-123', e.body, now) },
      { 'sandbox-signature': signSandbox(SECRET, e.body, now - 301) },
      { 'sandbox-signature': signSandbox(SECRET, e.body.replace('1000', '9000'), now) },
      { 'sandbox-signature': signSandbox('sandbox-beta-secret-dev-only', e.body, now) },
    ]
    for (const base of [a.url, b.url])
      for (const h of variants) {
        const r = await call(base, 'POST', '/cashier/webhook/sandbox', {
          raw: e.body,
          headers: { 'content-type': 'application/json', ...h },
        })
        expect([r.status, r.json.error]).toEqual([401, 'INVALID_SIGNATURE'])
      }
    expect(await statusOf(d.id)).toBe('pending_payment')
  })
})

describe('applying fails', () => {
  test('the update rolls back, the event is stored alone, and the inbox job credits it once the fault is gone', async () => {
    const d = await newDeposit(15)
    const e = succeeded('evt-fault-1', d)
    // a real fault inside the update's transaction: the database refuses its history row
    const db = createClient({ url: sqld.url })
    await db.execute(`create trigger fail_history before insert on cashier_history
      when new.transaction_id = ${d.id} and new.to_status <> 0
      begin select raise(abort, 'injected fault'); end`)
    try {
      const r = await send(a.url, e.body)
      // acknowledged: the event is durable (stored for the job), the provider need not send it again
      expect([r.status, r.json.received, r.json.duplicate]).toEqual([200, true, false])
      const [row] = (
        await db.execute({
          sql: 'select state, attempts, result from cashier_inbox where event_id = ?',
          args: [e.eventId],
        })
      ).rows
      expect([row?.state, row?.attempts]).toEqual(['received', 1])
      expect(String(row?.result)).toContain('injected fault')
      // nothing of the update was kept
      expect(await statusOf(d.id)).toBe('pending_payment')
      expect(creditsOf(await ledger(), d.id)).toBe(0)
      // a repeat while the row waits: a duplicate, nothing more
      expect((await send(b.url, e.body)).json.duplicate).toBe(true)
    } finally {
      await db.execute('drop trigger if exists fail_history')
      db.close()
    }
    await waitFor(async () => (await statusOf(d.id)) === 'credited', 20_000, 'the inbox job credits it')
    expect(creditsOf(await ledger(), d.id)).toBe(1)
    await expectBalanceIsLedger()
  }, 60_000)
})

describe('a process dies', () => {
  test('killed after the inbox write, before the credit: after the restart the credit happens once', async () => {
    const d = await newDeposit(20)
    const e = succeeded('evt-crash-1', d)
    // what the webhook route had made durable when the process died: the verified event in the inbox,
    // claimed by the dying process (its claim lapses), and no credit
    await Promise.all([a.kill(), b.kill()])
    const db = createClient({ url: sqld.url })
    await db.execute({
      sql: `insert into cashier_inbox (brand_id, provider, event_id, body, state, claimed_until, received_at)
            values (1, 'sandbox', ?, ?, 'processing', ?, ?)`,
      args: [e.eventId, e.body, Date.now() - 1, Date.now()],
    })
    db.close()
    ;[a, b] = await Promise.all([startRealServer(home.dir, env()), startRealServer(home.dir, env())])
    await waitFor(async () => (await statusOf(d.id)) === 'credited', 20_000, 'the inbox job credits it')
    // the provider, never acknowledged, sends it again to each instance: a duplicate, nothing more
    for (const base of [a.url, b.url]) expect((await send(base, e.body)).json.duplicate).toBe(true)
    expect(creditsOf(await ledger(), d.id)).toBe(1)
    await expectBalanceIsLedger()
  }, 90_000)

  test('SIGKILL during a flood of webhooks, provider retries after the restart: each credited once', async () => {
    const deposits: { id: number; minor: number }[] = []
    for (let i = 0; i < 30; i++) deposits.push(await newDeposit(10))
    const events = deposits.map((d, i) => succeeded(`evt-flood-${i}`, d))
    const acked = new Set<string>()
    const flood = Promise.all(
      events.map(async (e, i) => {
        await Bun.sleep(i * 3)
        const r = await send(a.url, e.body).catch(() => null)
        if (r?.status === 200) acked.add(e.eventId)
      }),
    )
    await Bun.sleep(40)
    await a.kill()
    await flood
    // the flood's later events start after the kill: the process died in the middle of it
    expect(acked.size).toBeLessThan(events.length)
    a = await startRealServer(home.dir, env())
    // the provider retries every event it has no 2xx for, on either instance
    for (const [i, e] of events.entries())
      if (!acked.has(e.eventId)) expect((await send(i % 2 ? a.url : b.url, e.body)).status).toBe(200)
    await waitFor(
      async () => {
        for (const d of deposits) if ((await statusOf(d.id)) !== 'credited') return false
        return true
      },
      60_000,
      'every deposit credited',
    )
    const rows = await ledger()
    for (const d of deposits) expect(creditsOf(rows, d.id)).toBe(1)
    await expectBalanceIsLedger()
  }, 120_000)
})
