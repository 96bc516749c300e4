import { expect } from 'bun:test'
import type { TestApp } from './app'

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
