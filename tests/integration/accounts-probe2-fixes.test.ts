// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { CHALLENGE } from '../../src/modules/prop/domain/purchase'
import { propChallenges } from '../../src/modules/prop/schema'
import { makeTestApp, type TestApp } from '../support/app'

/**
 * Findings of the second hostile probe of the staff routes (.tmp/probe-staff): a group renamed under the
 * prop programs that name it (every purchase answered 400 INVALID_DEMO_GROUP, every pass into a renamed
 * funded group failed and was retried without end).
 */

let t: TestApp
let customer: string
let manager: string
beforeAll(async () => {
  t = await makeTestApp()
  customer = await t.customerToken()
  manager = await t.staffToken()
})
afterAll(() => t.close())

const groupsByName = async () =>
  new Map(
    ((await t.request('GET', '/manager/groups', { token: manager })).json.rows as any[]).map((g) => [
      g.name,
      g,
    ]),
  )
const rename = (id: number, name: string) =>
  t.request('PATCH', `/manager/groups/${id}`, { token: manager, body: { name } })
const newGroup = async (name: string, account_mode: 'REAL' | 'DEMO') => {
  const r = await t.request('POST', '/manager/groups', {
    token: manager,
    body: { name, account_mode, currency: 'USD', leverage: 100, default_deposit: 10000 },
  })
  expect(r.status).toBe(200)
  return r.json.id as number
}
const rules = { profit_target_pct: 10, daily_loss_pct: 5, total_loss_pct: 10 }
const program = (name: string, evalGroup: string, fundedGroup: string) => ({
  name,
  price: 0,
  currency: 'USD',
  active: true,
  limits: {},
  steps: [
    { account_group: evalGroup, phase_type: 0, rules },
    {
      account_group: fundedGroup,
      phase_type: 1,
      profit_split: 0.8,
      rules: { ...rules, profit_target_pct: 0 },
    },
  ],
})

describe('PATCH /manager/groups/:id name of a prop step group', () => {
  test('is refused (409) while a program names the group, or the program follows the rename: purchases keep working', async () => {
    const groups = (await t.request('GET', '/manager/groups', { token: manager })).json.rows as any[]
    const evalGroup = groups.find((g) => g.name === 'prop\\eval\\USD')
    const programs = (await t.request('GET', '/prop/programs', { token: customer })).json.rows as any[]
    const twoStep = programs.find((p) => p.name === 'Two-Step 10k')
    const renamed = await rename(evalGroup.id, 'prop-eval-USD-2026')
    const buy = await t.request('POST', '/prop/challenge/buy', {
      token: customer,
      body: { program_id: twoStep.id, payer_login: 100001, idempotency_key: 'rename-probe-1' },
    })
    expect([200, 409]).toContain(renamed.status)
    expect(buy.status).toBe(200)
    // refused, naming the program; nothing changed
    expect(renamed.status).toBe(409)
    expect(renamed.json.error).toBe('GROUP_IN_USE')
    expect(renamed.json.message).toContain('prop program')
    expect((await groupsByName()).has('prop\\eval\\USD')).toBe(true)
  })

  test('a funded step group is refused too; other changes of a named group, and a rename of a group nothing names, pass', async () => {
    const before = await groupsByName()
    const funded = before.get('prop\\funded\\USD')
    const r = await rename(funded.id, 'prop-funded-USD-2026')
    expect({ status: r.status, error: r.json.error }).toEqual({ status: 409, error: 'GROUP_IN_USE' })
    // the same name, or another field, is no rename
    const same = await t.request('PATCH', `/manager/groups/${funded.id}`, {
      token: manager,
      body: { name: funded.name, leverage: funded.leverage },
    })
    expect(same.status).toBe(200)
    const free = await newGroup('probe2\\free\\USD', 'DEMO')
    const ok = await rename(free, 'probe2\\free-renamed\\USD')
    expect({ status: ok.status, name: ok.json.name }).toEqual({
      status: 200,
      name: 'probe2\\free-renamed\\USD',
    })
  })

  test('a running challenge keeps its groups after its program stops naming them; a program named elsewhere frees them', async () => {
    const evalId = await newGroup('probe2\\eval\\USD', 'DEMO')
    const fundedId = await newGroup('probe2\\funded\\USD', 'REAL')
    const created = await t.request('POST', '/manager/prop/programs', {
      token: manager,
      body: program('Probe2 rename', 'probe2\\eval\\USD', 'probe2\\funded\\USD'),
    })
    expect(created.status).toBe(200)
    const buy = await t.request('POST', '/prop/challenge/buy', {
      token: customer,
      body: { program_id: created.json.id, payer_login: 100001, idempotency_key: 'rename-probe-2' },
    })
    expect(buy.status).toBe(200)
    // the program now names the brand's own prop groups: the challenge bought still passes into the old ones
    const edited = await t.request('PUT', `/manager/prop/programs/${created.json.id}`, {
      token: manager,
      body: program('Probe2 rename', 'prop\\eval\\USD', 'prop\\funded\\USD'),
    })
    expect(edited.status).toBe(200)
    const r = await rename(fundedId, 'probe2\\funded-renamed\\USD')
    expect({ status: r.status, error: r.json.error }).toEqual({ status: 409, error: 'GROUP_IN_USE' })
    expect(r.json.message).toContain(`purchase ${buy.json.purchase.id}`)
    // its challenge ended (cancelled): nothing will open an account in the group again
    await t.ctx.db
      .update(propChallenges)
      .set({ status: CHALLENGE.cancelled })
      .where(eq(propChallenges.purchaseId, buy.json.purchase.id))
    const ok = await rename(evalId, 'probe2\\eval-renamed\\USD')
    expect(ok.status).toBe(200)
  })
})

// module-contract round: a group in a currency nothing converts held balances no symbol could value
describe('POST /manager/groups currency', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp()
  })
  afterAll(() => t.close())

  test('a currency no symbol converts (no <CCY>USD nor USD<CCY>): 400 INVALID_DATA naming currency, nothing written', async () => {
    const admin = await t.staffToken(2, 'admin-pass-1')
    const before = (await t.request('GET', '/manager/groups', { token: admin })).json.rows.length
    const r = await t.request('POST', '/manager/groups', {
      token: admin,
      body: { name: 'real\\XYZ', account_mode: 'REAL', currency: 'XYZ', leverage: 100 },
    })
    expect([r.status, r.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(r.json.message).toStartWith('currency: no symbol converts XYZ')
    expect((await t.request('GET', '/manager/groups', { token: admin })).json.rows).toHaveLength(before)
    // a currency paired with USD (USDJPY), and USD itself, are taken
    for (const currency of ['JPY', 'USD']) {
      const ok = await t.request('POST', '/manager/groups', {
        token: admin,
        body: { name: `real\\${currency}2`, account_mode: 'REAL', currency, leverage: 100 },
      })
      expect(ok.status).toBe(200)
    }
  })
})
