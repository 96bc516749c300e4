import { sandboxEvent, signSandbox } from '../../src/modules/cashier/providers/sandbox'
import type { TestApp } from './app'

/** The demo brand's sandbox webhook secret (development only). */
export const SANDBOX_SECRET = 'sandbox-demo-secret-dev-only'

/** A signed sandbox webhook about deposit `tx` (amount in minor units of USD), posted to the app. */
export function sandboxWebhook(
  t: TestApp,
  id: string,
  type: Parameters<typeof sandboxEvent>[1],
  tx: { id: number; amount: number },
) {
  const body = sandboxEvent(id, type, {
    token: `tok${tx.id}`,
    reference: String(tx.id),
    amount: tx.amount,
    currency: 'USD',
  })
  return t.request('POST', '/cashier/webhook/sandbox', {
    body,
    headers: {
      'content-type': 'application/json',
      'sandbox-signature': signSandbox(SANDBOX_SECRET, body, Math.floor(Date.now() / 1000)),
    },
  })
}
