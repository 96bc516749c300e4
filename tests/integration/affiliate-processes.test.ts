// Affiliate conversions on two instances sharing a real sqld and redis-server (issue 30): a referred
// customer registers through one, its deposit's signed webhook reaches both at once, and both relays
// deliver: one Deposit row and one first deposit, whichever instance handled what.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createClient } from '@libsql/client'
import { sandboxEvent, signSandbox } from '../../src/modules/cashier/providers/sandbox'
import { type RedisServer, startRedis } from '../support/redis'
import { call, type RealServer, serverDir, signIn, startRealServer } from '../support/server'
import { type SqldServer, startSqld } from '../support/sqld'

let sqld: SqldServer
let redis: RedisServer
const home = serverDir()
const servers: RealServer[] = []
let db: ReturnType<typeof createClient>

beforeAll(async () => {
  ;[sqld, redis] = await Promise.all([startSqld(), startRedis()])
  const env = {
    DATABASE_URL: sqld.url,
    REDIS_URL: redis.url,
    QUOTE_SIMULATOR: '0',
    AFFILIATE_API_RATE_PER_MINUTE: '6',
  }
  servers.push(await startRealServer(home.dir, env))
  servers.push(await startRealServer(home.dir, env))
  db = createClient({ url: sqld.url, intMode: 'number' })
}, 120_000)

afterAll(async () => {
  db?.close()
  await Promise.all(servers.map((s) => s.stop()))
  await Promise.all([sqld?.stop(), redis?.stop()])
  home.remove()
})

test('a deposit credited through both instances at once gives one Deposit row and one first deposit', async () => {
  const [a, b] = servers.map((s) => s.url)
  // the click on one instance, the registration on the other: the touch is shared through the database
  const click = await fetch(`${a}/go/demo-spring`, {
    redirect: 'manual',
    headers: { 'user-agent': 'Mozilla/5.0 Chrome/131' },
  })
  expect(click.status).toBe(302)
  const vid = /tcs_vid=([^;]+)/.exec(click.headers.get('set-cookie') ?? '')![1]
  // the click instance writes its touches every 20 ms (ADR 0017); a person registers later than that
  await Bun.sleep(200)
  const email = 'two-instances@example.com'
  const reg = await call(b, 'POST', '/customer/register', {
    body: { email, password: 'two-pass-1', name: 'Two' },
    headers: { cookie: `tcs_vid=${vid}`, 'user-agent': 'Mozilla/5.0 Chrome/131' },
  })
  expect(reg.status).toBe(200)
  const customer = await signIn(a, '/customer/sign/in', { email, password: 'two-pass-1' })
  const opened = await call(a, 'POST', '/customer/accounts', {
    token: customer,
    body: { group: 'real\\USD', password: 'two-pass-1' },
  })
  expect(opened.status).toBe(200)
  const dep = await call(b, 'POST', '/cashier/deposit', {
    token: customer,
    body: { login: opened.json.login, method: 'card', amount: 150 },
  })
  expect(dep.status).toBe(200)
  const txId = dep.json.transaction.id as number
  const body = sandboxEvent('evt-two-1', 'payment.succeeded', {
    token: `tok${txId}`,
    reference: String(txId),
    amount: 15_000,
    currency: 'USD',
  })
  const headers = {
    'content-type': 'application/json',
    'sandbox-signature': signSandbox('sandbox-demo-secret-dev-only', body, Math.floor(Date.now() / 1000)),
  }
  const hooks = await Promise.all(
    [a, b, a, b].map((base) => fetch(`${base}/cashier/webhook/sandbox`, { method: 'POST', headers, body })),
  )
  for (const h of hooks) expect(h.status).toBe(200)

  const customerId = Number(
    (await db.execute({ sql: 'select id from customers where email = ?', args: [email] })).rows[0]![0],
  )
  const rows = async () =>
    (
      await db.execute({
        sql: 'select kind, reference_id, value_minor from affiliate_conversions where customer_id = ? order by kind',
        args: [customerId],
      })
    ).rows.map((r) => [r[0], r[1], r[2]])
  const deadline = Date.now() + 20_000
  while (Date.now() < deadline && (await rows()).length < 3) await Bun.sleep(100)
  // a little longer: a second delivery, were there one, would land now
  await Bun.sleep(1_500)
  expect(await rows()).toEqual([
    ['deposit', String(txId), 15_000],
    ['first_deposit', String(txId), 15_000],
    ['registration', String(customerId), null],
  ])
  const facts = await db.execute({
    sql: "select count(*) from affiliate_facts where customer_id = ? and kind = 'deposit'",
    args: [customerId],
  })
  expect(Number(facts.rows[0]![0])).toBe(1)
}, 60_000)

test('an integration token: revoked or its affiliate suspended on one instance, refused on the other at once; one rate limit across both', async () => {
  const [a, b] = servers.map((s) => s.url)
  const host = { host: 'affiliates.localhost' }
  const manager = await signIn(a, '/manager/sign/in', { login: 1, password: 'manager-pass-1' })
  const issue = async () =>
    (
      await call(a, 'POST', '/manager/affiliates/1/tokens', {
        token: manager,
        body: { scopes: ['customers:read'], expires_in_days: 1 },
      })
    ).json as { id: string; token: string }
  const read = (base: string, token: string) =>
    call(base, 'GET', '/api/affiliate/v1/customers?page_size=1', { token, headers: host })
  // the limit (6 a minute here) is counted in Redis: both instances spend the same budget
  const limited = await issue()
  // a minute's window: not across its end
  const intoMinute = Date.now() % 60_000
  if (intoMinute > 55_000) await Bun.sleep(60_100 - intoMinute)
  const answers: number[] = []
  for (let i = 0; i < 8; i++) answers.push((await read(i % 2 ? b : a, limited.token)).status)
  expect(answers).toEqual([200, 200, 200, 200, 200, 200, 429, 429])

  const t1 = await issue()
  expect((await read(b, t1.token)).status).toBe(200)
  expect(
    (await call(a, 'POST', `/manager/affiliate-tokens/${t1.id}/revoke`, { token: manager })).status,
  ).toBe(200)
  expect((await read(b, t1.token)).json.error).toBe('TOKEN_REVOKED')

  const t2 = await issue()
  expect((await read(b, t2.token)).status).toBe(200)
  await call(a, 'PATCH', '/manager/affiliates/1', { token: manager, body: { status: 'suspended' } })
  expect((await read(b, t2.token)).json.error).toBe('AFFILIATE_SUSPENDED')
  await call(a, 'PATCH', '/manager/affiliates/1', { token: manager, body: { status: 'active' } })
  expect((await read(b, t2.token)).status).toBe(200)
}, 60_000)
