import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  fuzzClient,
  invalidCases,
  type Operation,
  operations,
  setsPasswords,
  validCases,
} from '../support/fuzz-cases'
import { call, demoTokens, type RealServer, serverDir, startRealServer } from '../support/server'

/**
 * Schema-driven fuzzing of every operation of the OpenAPI document against a real server (issue 16): at
 * least 100 invalid and 50 valid requests each. Invariants: no INTERNAL_ERROR and no 5xx the route does
 * not document; every answer's status and code are the ones the document lists for the route; every
 * refusal of an invalid input is 400 INVALID_DATA naming the field (or 413 for an oversized body); the
 * server starts again on the same database afterwards.
 */

const FEED_TOKEN = 'c41f0e9a7b2d58e6f3a1c907be4d2f86e1b0'

let home: ReturnType<typeof serverDir>
let server: RealServer
let ops: Operation[] = []
const tokens: Record<string, string> = {}
const counts: { id: string; invalid: number; valid: number; ignored: number; ms: number }[] = []
let fuzz: ReturnType<typeof fuzzClient>

const env = {
  FEED_TOKEN,
  // every request comes from 127.0.0.1 and many valid ones sign in with random credentials
  SIGNIN_MAX_FAILURES: '1000000',
  SIGNIN_MAX_FAILURES_PER_IP: '1000000',
  REGISTER_MAX_PER_HOUR: '1000000',
  ACCOUNT_OPEN_MAX_PER_DAY: '1000000',
  LOG_LEVEL: 'warn',
}

/** Operations that end every session of a principal, not only the token they carry. */
const endsSessions = (o: Operation) =>
  o.path === '/sign/out/all' || o.path === '/api/affiliate/logout/all' || o.path.endsWith('/sessions/end')

async function signInAll() {
  Object.assign(tokens, await demoTokens(server.url))
}

/** Undoes what valid requests of staff routes may have done to the accounts the other routes use. */
async function restoreAccounts() {
  for (const login of [100001, 100002]) {
    await call(server.url, 'PATCH', `/manager/accounts/${login}`, {
      token: tokens.SESSION_ADMIN,
      body: { enable: 1, enable_read_only: 0, group: login === 100001 ? 'real\\USD' : 'demo\\USD' },
    })
    await call(server.url, 'PUT', '/password', {
      token: tokens.SESSION_ADMIN,
      body: { login, password: 'demo-pass-1' },
    })
  }
  await signInAll()
}

beforeAll(async () => {
  home = serverDir()
  server = await startRealServer(home.dir, env)
  await signInAll()
  await call(server.url, 'POST', '/market/quotes', {
    token: tokens.SESSION_DEALER,
    body: {
      ticks: [
        { symbol: 'EURUSD', bid: 1.1, ask: 1.1002 },
        { symbol: 'XAUUSD', bid: 2300, ask: 2300.5 },
        { symbol: 'USDJPY', bid: 150, ask: 150.02 },
      ],
    },
  })
  const doc = await call(server.url, 'GET', '/swagger/json')
  ops = operations(doc.json)
  fuzz = fuzzClient({ base: server.url, tokens, feedToken: FEED_TOKEN })
})

afterAll(async () => {
  await server?.stop()
  home?.remove()
})

describe('fuzzing every operation of the OpenAPI document against a real server', () => {
  test('no 5xx beyond what a route documents, every refusal names its field, every answer is documented', async () => {
    expect(ops.length).toBeGreaterThan(50)
    for (const o of ops) {
      const started = performance.now()
      const invalid = invalidCases(o)
      const valid = validCases(o)
      for (const c of [...invalid, ...valid]) {
        if (o.path === '/sign/out') {
          // each sign-out revokes the token it carries: use a fresh one
          tokens.SESSION_USER = (
            await call(server.url, 'POST', '/sign/in', { body: { login: 100001, password: 'demo-pass-1' } })
          ).json.__token
        }
        fuzz.check(o, c, await fuzz.send(o, c))
        // a valid one may have ended every session of the demo users it names: all sign in again
        if (endsSessions(o) && valid.includes(c)) await signInAll()
      }
      counts.push({
        id: o.id,
        invalid: invalid.filter((c) => c.expect.kind !== 'ignored').length,
        ignored: invalid.filter((c) => c.expect.kind === 'ignored').length,
        valid: valid.length,
        ms: Math.round(performance.now() - started),
      })
      if (o.path.startsWith('/manager') || setsPasswords(o)) await restoreAccounts()
    }
    const width = Math.max(...counts.map((c) => c.id.length))
    console.log(
      `fuzz cases per operation (invalid refused / junk ignored / valid):\n${counts
        .map((c) => `  ${c.id.padEnd(width)}  ${c.invalid} / ${c.ignored} / ${c.valid}  (${c.ms} ms)`)
        .join('\n')}\n  total: ${counts.reduce((n, c) => n + c.invalid + c.ignored + c.valid, 0)} requests`,
    )
    expect(fuzz.failures.slice(0, 40)).toEqual([])
    for (const c of counts) expect(c.invalid + c.ignored).toBeGreaterThanOrEqual(100)
  }, 600_000)

  test('the server starts again on the same database after the run', async () => {
    await server.stop()
    server = await startRealServer(home.dir, env)
    const health = await call(server.url, 'GET', '/health')
    expect([health.status, health.json.db]).toEqual([200, 'ok'])
    const me = await call(server.url, 'POST', '/sign/in', {
      body: { login: 100001, password: 'demo-pass-1' },
    })
    expect(me.status).toBe(200)
  })
})
