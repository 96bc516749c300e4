// The simulated payment providers (sandbox, checkout) take no money: their payment page is this app's
// own, so in production a customer could pay there and be credited (a hostile probe, issue 43). They are
// loaded in production only where CASHIER_SANDBOX=1 declares a sandbox deployment.
import { afterAll, describe, expect, test } from 'bun:test'
import { sandboxPayments } from '../../src/modules/cashier/schema'
import { makeTestApp, type TestApp } from '../support/app'

const PRODUCTION = {
  APP_ENV: 'production',
  JWT_SECRET: 'QrmpudQSghN2f3zUKzYZHw4qvKEV/r7NUC1hoRin2FR9FyFDlb0rGLuoU8FHGDJI',
}
const apps: TestApp[] = []
afterAll(async () => {
  for (const a of apps) await a.close()
})
const start = async (env: Record<string, string>) => {
  const a = await makeTestApp({ env: { ...PRODUCTION, ...env } })
  apps.push(a)
  return a
}

describe('production', () => {
  for (const provider of ['checkout', 'sandbox'])
    test(`refuses to start with secrets of the simulated ${provider} provider, naming the setting`, async () => {
      const started = start({
        CASHIER_SECRETS: JSON.stringify({ Demo: { [provider]: ['real-looking-webhook-secret-1234'] } }),
      })
      await expect(started).rejects.toThrow(`CASHIER_SECRETS.Demo.${provider}`)
      await expect(started).rejects.toThrow('CASHIER_SANDBOX=1')
    })

  test('without CASHIER_SANDBOX: no hosted page, no simulated provider, no card method', async () => {
    const t = await start({})
    const now = Date.now()
    const token = 'ab'.repeat(16)
    // a payment the simulated provider would have kept: its page is not served at all
    await t.ctx.db.insert(sandboxPayments).values({
      token,
      brandId: 1,
      provider: 'checkout',
      reference: '1',
      amount: 50000,
      currency: 'USD',
      status: 'created',
      notifyUrl: 'https://localhost/cashier/webhook/checkout',
      returnUrl: 'https://localhost/',
      createdAt: now,
      updatedAt: now,
    })
    const page = await t.request('GET', `/cashier/sandbox/pay/${token}`)
    expect(page.status).toBe(404)
    expect(page.json?.error).not.toBe('PAYMENT_NOT_FOUND')
    const paid = await t.request('POST', `/cashier/sandbox/pay/${token}`, { body: { action: 'pay' } })
    expect(paid.status).toBe(404)
    const manager = await t.staffToken()
    const method = await t.request('PUT', '/manager/cashier/methods/card_x', {
      token: manager,
      body: {
        provider: 'checkout',
        title: 'Card',
        deposit: true,
        withdrawal: false,
        currencies: ['USD'],
        min_amount: 1,
        max_amount: 1000,
        enabled: true,
      },
    })
    expect([method.status, method.json.error]).toEqual([400, 'INVALID_DATA'])
    expect(method.json.message).toBe('provider: one of wire')
    const customer = await t.customerToken()
    const m = await t.request('GET', '/cashier/methods?login=100001', { token: customer })
    expect(m.json.methods.map((x: { code: string }) => x.code)).toEqual(['wire'])
    await expect(t.runJob('cashier.sandbox-deliver')).rejects.toThrow()
  })

  test('with CASHIER_SANDBOX=1 (a sandbox deployment): the simulated providers and their page are there', async () => {
    const t = await start({
      CASHIER_SANDBOX: '1',
      CASHIER_SECRETS: JSON.stringify({ Demo: { checkout: ['sandbox-deployment-secret-1234'] } }),
    })
    const customer = await t.customerToken()
    const d = await t.request('POST', '/cashier/deposit', {
      token: customer,
      body: { login: 100001, method: 'card_checkout', amount: 50 },
    })
    expect(d.status).toBe(200)
    const page = await t.request('GET', new URL(d.json.next.url).pathname)
    expect(page.status).toBe(200)
  })
})
