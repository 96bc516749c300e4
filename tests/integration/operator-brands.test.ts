// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Symbols and prices are shared by every brand of a deployment: only staff of its operator brands
// (OPERATOR_BRANDS, or the first brand) change them. A hostile client's probe: a Demo dealer's ticks moved
// the price Beta's customers filled at.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { makeTestApp, type TestApp } from '../support/app'
import { addBetaStaff } from '../support/staff'
import { forexSymbol } from '../support/symbols'

const BETA = 'beta.localhost'
const tick = { ticks: [{ symbol: 'XNGUSD', bid: 2.5, ask: 2.51 }] }
const symbolPatch = { description: 'Natural gas' }

async function betaStaff(t: TestApp) {
  await addBetaStaff(t, [
    ['ADMIN', 2, 'admin-pass-1'],
    ['DEALER', 3, 'dealer-pass-1'],
  ])
  const signIn = async (login: number, password: string) =>
    (await t.request('POST', '/manager/sign/in', { body: { login, password }, host: BETA })).json
      .__token as string
  return { admin: await signIn(2, 'admin-pass-1'), dealer: await signIn(3, 'dealer-pass-1') }
}

describe('operator brands', () => {
  let t: TestApp
  beforeAll(async () => {
    t = await makeTestApp()
  })
  afterAll(() => t.close())

  test("another brand's dealer and admin may not change prices or symbols; the first brand's may", async () => {
    const beta = await betaStaff(t)
    const quotes = await t.request('POST', '/market/quotes', { token: beta.dealer, body: tick, host: BETA })
    expect([quotes.status, quotes.json.error]).toEqual([403, 'NOT_OPERATOR_BRAND'])
    const patch = await t.request('PATCH', '/manager/symbols/XNGUSD', {
      token: beta.admin,
      body: symbolPatch,
      host: BETA,
    })
    expect([patch.status, patch.json.error]).toEqual([403, 'NOT_OPERATOR_BRAND'])
    const create = await t.request('POST', '/manager/symbols', {
      token: beta.admin,
      body: forexSymbol('BETAX'),
      host: BETA,
    })
    expect([create.status, create.json.error]).toEqual([403, 'NOT_OPERATOR_BRAND'])
    // nothing moved
    const demoDealer = await t.staffToken(3, 'dealer-pass-1')
    expect((await t.request('GET', '/manager/symbols', { token: demoDealer })).json.rows).not.toContainEqual(
      expect.objectContaining({ symbol: 'BETAX' }),
    )
    const ok = await t.request('POST', '/market/quotes', { token: demoDealer, body: tick })
    expect([ok.status, ok.json.accepted]).toEqual([200, 1])
    const admin = await t.staffToken(2, 'admin-pass-1')
    expect(
      (await t.request('PATCH', '/manager/symbols/XNGUSD', { token: admin, body: symbolPatch })).status,
    ).toBe(200)
  })

  test('a name that is no brand is logged at start as an error, with the brands there are', async () => {
    const lines: { level: string; msg: string; fields?: Record<string, unknown> }[] = []
    const logger = {
      log: (level: string, msg: string, fields?: Record<string, unknown>) =>
        lines.push({ level, msg, fields }),
    }
    const typo = await makeTestApp({ env: { OPERATOR_BRANDS: 'Demo,Btea' }, logger: logger as never })
    await typo.close()
    expect(lines.filter((l) => l.msg === 'OPERATOR_BRANDS names no brand of this deployment')).toEqual([
      {
        level: 'error',
        msg: 'OPERATOR_BRANDS names no brand of this deployment',
        fields: { unknown: ['Btea'], brands: ['Beta', 'Demo'], operators: ['Demo'] },
      },
    ])
  })

  test('OPERATOR_BRANDS names them', async () => {
    const both = await makeTestApp({ env: { OPERATOR_BRANDS: 'Demo, Beta' } })
    try {
      const beta = await betaStaff(both)
      const r = await both.request('POST', '/market/quotes', { token: beta.dealer, body: tick, host: BETA })
      expect([r.status, r.json.accepted]).toEqual([200, 1])
    } finally {
      await both.close()
    }
  })
})
