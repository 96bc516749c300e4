// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// review of the password changes (0b5bb95): a registration refused for its password writes no attribution;
// a new password equal to the current one in other code points is the same one
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { makeTestApp, type TestApp } from '../support/app'
import { evaluationProgram } from '../support/prop'

let t: TestApp
beforeAll(async () => {
  t = await makeTestApp()
})
afterAll(() => t.close())

const count = async (table: string) =>
  ((await t.ctx.db.all(sql.raw(`select count(*) as n from ${table}`))) as { n: number }[])[0]!.n

test('a registration refused for its normalized password length leaves no attribution decision or touch', async () => {
  const d0 = await count('attribution_decisions')
  const t0 = await count('attribution_touches')
  const reg = await t.request('POST', '/customer/register', {
    body: {
      email: 'short.nfd2@example.com',
      password: 'abcde\u0301',
      name: 'S',
      attribution: { utm_source: 'x', utm_campaign: 'y' },
    },
  })
  expect(reg.status).toBe(400)
  expect(await count('attribution_decisions')).toBe(d0)
  expect(await count('attribution_touches')).toBe(t0)
}, 60_000)

// full-width form of an ASCII text: NFKC maps it back to the ASCII
const wide = (s: string) =>
  [...s].map((c) => (c >= '!' && c <= '~' ? String.fromCodePoint(c.codePointAt(0)! + 0xfee0) : c)).join('')

test('a generated password cannot be "changed" to itself typed in full-width letters', async () => {
  const manager = await t.staffToken()
  const customer = await t.customerToken()
  const created = await t.request('POST', '/manager/prop/programs', {
    token: manager,
    body: evaluationProgram({ profit_target_pct: 10, daily_loss_pct: 5, total_loss_pct: 10 }),
  })
  const buy = await t.request('POST', '/prop/challenge/buy', {
    token: customer,
    body: { program_id: created.json.id, payer_login: 100001 },
  })
  expect(buy.status).toBe(200)
  const login = buy.json.account.login as number
  const gen = buy.json.temporary_password as string
  const s = await t.request('POST', '/sign/in', { body: { login, password: gen } })
  expect(s.json.must_change_password).toBe(true)
  const change = await t.request('PUT', '/account/password', {
    token: s.json.__token,
    body: { password: gen, new_password: wide(gen) },
  })
  // expected: 400 new_password must differ (it is the same password once normalized)
  expect(change.status).toBe(400)
}, 60_000)
