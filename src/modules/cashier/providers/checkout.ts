import { z } from 'zod'
import type { ProviderUpdate } from '../domain/status'
import {
  constantTimeEqual,
  type HostedPayments,
  hmacHex,
  MAX_PROVIDER_MINOR,
  type PaymentProvider,
} from './port'
import { parseJson, simulatedPayout } from './sandbox'

/**
 * A simulated hosted-payments provider shaped like Checkout.com's (its payment page is this app's own
 * sandbox page, so it takes no money: loaded only where the cashier's `sandbox` setting allows): the webhook body is signed as a whole,
 * `Cko-Signature: hex(HMAC-SHA256(secret, body))`, with no timestamp, so replays are stopped by the
 * event id alone (the inbox). Events name the payment and echo our `reference`; amounts in minor units.
 */
export const CheckoutEvent = z.object({
  id: z
    .string()
    .regex(/^evt_[A-Za-z0-9]{1,64}$/)
    .describe('event id, unique per provider: a repeat is a duplicate'),
  type: z
    .enum([
      'payment_pending',
      'payment_captured',
      'payment_declined',
      'payment_canceled',
      'payment_refunded',
      'payment_chargeback',
    ])
    .describe('what happened to the payment'),
  data: z
    .object({
      id: z
        .string()
        .regex(/^pay_[A-Za-z0-9-]{1,64}$/)
        .describe("the provider's payment id"),
      reference: z
        .string()
        .regex(/^\d{1,15}$/)
        .describe('our cashier transaction id'),
      amount: z.number().int().min(0).max(MAX_PROVIDER_MINOR).describe('minor units'),
      currency: z
        .string()
        .regex(/^[A-Z]{3}$/)
        .describe('ISO 4217'),
    })
    .describe('the payment'),
})
const UPDATE: Record<z.infer<typeof CheckoutEvent>['type'], ProviderUpdate> = {
  payment_pending: 'pending',
  payment_captured: 'confirmed',
  payment_declined: 'failed',
  payment_canceled: 'cancelled',
  payment_refunded: 'refunded',
  payment_chargeback: 'chargeback',
}
const SIM_TYPE = {
  pending: 'payment_pending',
  confirmed: 'payment_captured',
  failed: 'payment_declined',
  refunded: 'payment_refunded',
} as const

export const signCheckout = (secret: string, body: string) => hmacHex(secret, body)

export const checkoutProvider = (hosted: HostedPayments): PaymentProvider => ({
  id: 'checkout',
  webhooks: true,
  async startDeposit(d) {
    const { token, url } = await hosted.create({
      brandId: d.brandId,
      provider: 'checkout',
      reference: String(d.transactionId),
      amount: d.amount,
      currency: d.currency,
      notifyUrl: d.notifyUrl,
      returnUrl: d.returnUrl,
    })
    return { next: { type: 'redirect', url }, providerRef: `pay_${token}` }
  },
  async resumeDeposit(d) {
    return { type: 'redirect', url: hosted.pageUrl(d.providerRef.replace(/^pay_/, ''), d.notifyUrl) }
  },
  verifyWebhook(headers, body, secrets) {
    const sig = headers.get('cko-signature')
    if (!sig || !/^[0-9a-f]{64}$/.test(sig)) return false
    return secrets.some((s) => constantTimeEqual(sig, signCheckout(s, body)))
  },
  parseWebhook(body) {
    const e = parseJson(CheckoutEvent, body)
    if ('error' in e) return e
    return {
      eventId: e.id,
      transactionId: Number(e.data.reference),
      providerRef: e.data.id,
      update: UPDATE[e.type],
      amount: e.data.amount,
      currency: e.data.currency,
    }
  },
  // simulated like its deposits (no call to Checkout.com is made): the sandbox's test refusal, as
  // `PayoutRefused`, stands for the provider's definite "not accepted" answer
  async startPayout(p) {
    return simulatedPayout('pay_po_', p)
  },
  simulator: {
    body: (id, update, p) =>
      JSON.stringify({
        id: `evt_${id.replace(/[^A-Za-z0-9]/g, '')}`,
        type: SIM_TYPE[update],
        data: { id: `pay_${p.token}`, reference: p.reference, amount: p.amount, currency: p.currency },
      }),
    headers: (secret, body) => ({
      'content-type': 'application/json',
      'cko-signature': signCheckout(secret, body),
    }),
  },
  fetchStatus: (ref) => hosted.status(ref.replace(/^pay_/, '')),
  expireSession: (ref) => hosted.expire(ref.replace(/^pay_/, '')),
})
