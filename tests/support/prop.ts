import { afterAll, beforeAll, expect } from 'bun:test'
import type { ManualClock } from '../../src/kernel/clock'
import { makeTestApp, type TestApp } from './app'
import { quoteIngest } from './quotes'

const PASSWORD = 'challenge-pass-1'

/**
 * Buys a challenge of `programId` for the demo customer (paid from 100001), replaces the account's
 * temporary password (it must be changed before the account trades) and signs the account in.
 */
export async function buyChallenge(t: TestApp, customer: string, programId: number) {
  const r = await t.request('POST', '/prop/challenge/buy', {
    token: customer,
    body: { program_id: programId, payer_login: 100001 },
  })
  expect(r.status).toBe(200)
  const login = r.json.account.login as number
  const set = await t.request('PUT', `/customer/accounts/${login}/password`, {
    token: customer,
    body: { password: PASSWORD },
  })
  expect(set.status).toBe(200)
  const token = (await t.request('POST', '/sign/in', { body: { login, password: PASSWORD } })).json
    .__token as string
  return { challenge: r.json.challenge.id as number, login, token }
}

/**
 * The body of a one-step evaluation program in Prague's zone, paid in USD, trading in `prop\eval\USD`,
 * with these rules; `over` replaces any top-level field (`name`, `price`, `steps`…).
 */
export const evaluationProgram = (rules: Record<string, unknown>, over: Record<string, unknown> = {}) => ({
  name: 'Evaluation',
  price: 10,
  currency: 'USD',
  active: true,
  time_zone: 'Europe/Prague',
  steps: [{ account_group: 'prop\\eval\\USD', phase_type: 0, rules }],
  ...over,
})

/**
 * A test app on `clock` for a prop test file, made before its tests and closed after them: the demo
 * customer's, the manager's and the dealer's sessions, and EURUSD quoted at 1.1 / 1.1002.
 */
export function propTestApp(clock: ManualClock) {
  const s = {} as { t: TestApp; customer: string; manager: string; dealer: string }
  const ingest = quoteIngest(
    () => s.t,
    clock,
    () => s.dealer,
  )
  beforeAll(async () => {
    s.t = await makeTestApp({ clock })
    s.customer = await s.t.customerToken()
    s.manager = await s.t.staffToken()
    s.dealer = await s.t.staffToken(3, 'dealer-pass-1')
    await ingest([{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }])
  })
  afterAll(() => s.t.close())
  return Object.assign(s, { ingest })
}
