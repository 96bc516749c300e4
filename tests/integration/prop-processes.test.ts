// Prop purchases on two app instances sharing a real sqld and redis-server (issue 20): 50 concurrent
// identical requests create one purchase and one fee; two different purchases racing for a balance
// that pays only one never take it negative.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type RedisServer, startRedis } from '../support/redis'
import { call, type RealServer, serverDir, signIn, startRealServer } from '../support/server'
import { type SqldServer, startSqld } from '../support/sqld'

let sqld: SqldServer
let redis: RedisServer
const home = serverDir()
let a: RealServer
let b: RealServer
let customer: string
let manager: string

const balance = async () =>
  (await call(a.url, 'GET', '/manager/accounts/100001', { token: manager })).json.balance as number
const fees = async () =>
  (
    (await call(b.url, 'GET', '/manager/accounts/100001/operations?limit=500', { token: manager })).json
      .rows as {
      comment: string
    }[]
  ).filter((o) => o.comment === 'PROP_CHALLENGE_PURCHASE').length

beforeAll(async () => {
  ;[sqld, redis] = await Promise.all([startSqld(), startRedis()])
  const env = { DATABASE_URL: sqld.url, REDIS_URL: redis.url }
  ;[a, b] = await Promise.all([startRealServer(home.dir, env), startRealServer(home.dir, env)])
  customer = await signIn(a.url, '/customer/sign/in', { email: 'demo@example.com', password: 'demo-pass-1' })
  manager = await signIn(a.url, '/manager/sign/in', { login: 1, password: 'manager-pass-1' })
}, 120_000)

afterAll(async () => {
  await Promise.all([a, b].map((s) => s?.stop()))
  await Promise.all([sqld?.stop(), redis?.stop()])
  home.remove()
})

describe('prop purchases on two instances', () => {
  test('50 concurrent identical requests over both instances: one purchase, one fee', async () => {
    const programs = (await call(a.url, 'GET', '/prop/programs', { token: customer })).json.rows
    const id = programs.find((p: { name: string }) => p.name === 'Two-Step 10k').id
    const before = await balance()
    const feesBefore = await fees()
    const body = { program_id: id, payer_login: 100001, idempotency_key: 'race-two-instances-1' }
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        call(i % 2 ? a.url : b.url, 'POST', '/prop/challenge/buy', { token: customer, body }),
      ),
    )
    expect(answers.map((r) => r.status)).toEqual(Array(50).fill(200))
    expect(new Set(answers.map((r) => r.json.purchase.id)).size).toBe(1)
    expect(answers.filter((r) => r.json.idempotent === false)).toHaveLength(1)
    expect(await fees()).toBe(feesBefore + 1)
    expect(await balance()).toBe(before - 99)
  })

  test('two purchases racing for a balance that pays one: one succeeds, the balance never goes negative', async () => {
    const left = await balance()
    const created = await call(a.url, 'POST', '/manager/prop/programs', {
      token: manager,
      body: {
        name: 'Pays once',
        price: Math.floor(left * 0.6),
        currency: 'USD',
        active: true,
        steps: [
          {
            account_group: 'prop\\eval\\USD',
            phase_type: 0,
            rules: { profit_target_pct: 10, daily_loss_pct: 5, total_loss_pct: 10 },
          },
        ],
      },
    })
    expect(created.status).toBe(200)
    const [x, y] = await Promise.all(
      [a.url, b.url].map((base, i) =>
        call(base, 'POST', '/prop/challenge/buy', {
          token: customer,
          body: { program_id: created.json.id, payer_login: 100001, idempotency_key: `pays-once-${i}` },
        }),
      ),
    )
    const statuses = [x!.status, y!.status].sort()
    expect(statuses[0]).toBe(200)
    expect(statuses[1]).not.toBe(200)
    const refused = x!.status === 200 ? y! : x!
    expect(['PAYMENT_FAILED', 'NOT_ENOUGH_FUNDS']).toContain(refused.json.error)
    const after = await balance()
    expect(after).toBeGreaterThanOrEqual(0)
    expect(after).toBe(Math.round((left - created.json.price) * 100) / 100)
  })
})
