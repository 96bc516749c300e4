import { z } from 'zod'
import type { ProviderUpdate } from '../domain/status'
import {
  constantTimeEqual,
  type HostedPayments,
  hmacHex,
  MAX_PROVIDER_MINOR,
  type PaymentProvider,
  PayoutRefused,
} from './port'

/** Seconds a signed webhook stays acceptable (replays of older ones are refused). */
const SANDBOX_TOLERANCE_S = 300

/** `t=<unix>,v1=<hex HMAC-SHA256(secret, t + "." + body)>` (the scheme Stripe made common). */
export function signSandbox(secret: string, body: string, unixSeconds: number) {
  return `t=${unixSeconds},v1=${hmacHex(secret, `${unixSeconds}.${body}`)}`
}

/** Verifies a sandbox signature against every secret of the rotation (several `v1` may be present). */
export function verifySandbox(header: string | null, body: string, secrets: string[], nowMs: number) {
  if (!header) return false
  let t: number | null = null
  const sigs: string[] = []
  for (const part of header.split(',')) {
    const [k, v] = part.split('=', 2).map((x) => x?.trim())
    if (k === 't' && v && /^\d{1,12}$/.test(v)) t = Number(v)
    else if (k === 'v1' && v && /^[0-9a-f]{64}$/.test(v)) sigs.push(v)
  }
  if (t === null || sigs.length === 0) return false
  if (Math.abs(nowMs / 1000 - t) > SANDBOX_TOLERANCE_S) return false
  return secrets.some((s) => {
    const expected = hmacHex(s, `${t}.${body}`)
    return sigs.some((sig) => constantTimeEqual(sig, expected))
  })
}

/** The event the sandbox posts (also what the webhook route documents as its body). */
export const SandboxEvent = z
  .object({
    id: z.string().min(1).max(100).describe('event id, unique per provider: a repeat is a duplicate'),
    type: z
      .enum([
        'payment.pending',
        'payment.succeeded',
        'payment.failed',
        'payment.canceled',
        'payment.refunded',
        'payment.disputed',
      ])
      .describe('what happened to the payment'),
    data: z
      .object({
        payment_id: z.string().min(1).max(100).describe("the provider's payment id"),
        reference: z
          .string()
          .regex(/^\d{1,15}$/)
          .describe('our transaction id'),
        amount: z.number().int().min(0).max(MAX_PROVIDER_MINOR).describe('in minor units'),
        currency: z
          .string()
          .regex(/^[A-Z]{3}$/)
          .describe('ISO 4217'),
      })
      .describe('the payment'),
  })
  .meta({
    example: {
      id: 'evt_01',
      type: 'payment.succeeded',
      data: {
        payment_id: '0123456789abcdef0123456789abcdef',
        reference: '1',
        amount: 10000,
        currency: 'USD',
      },
    },
  })
const UPDATE: Record<z.infer<typeof SandboxEvent>['type'], ProviderUpdate> = {
  'payment.pending': 'pending',
  'payment.succeeded': 'confirmed',
  'payment.failed': 'failed',
  'payment.canceled': 'cancelled',
  'payment.refunded': 'refunded',
  'payment.disputed': 'chargeback',
}
export type SandboxEventType = keyof typeof UPDATE

/** The webhook body the sandbox sends. */
export const sandboxEvent = (
  id: string,
  type: SandboxEventType,
  p: { token: string; reference: string; amount: number; currency: string },
) =>
  JSON.stringify({
    id,
    type,
    data: { payment_id: p.token, reference: p.reference, amount: p.amount, currency: p.currency },
  })

export function parseJson<T>(schema: z.ZodType<T>, body: string): T | { error: string } {
  let raw: unknown
  try {
    raw = JSON.parse(body)
  } catch {
    return { error: 'body: malformed JSON' }
  }
  const r = schema.safeParse(raw)
  if (r.success) return r.data
  const i = r.error.issues[0]
  return { error: `${i.path.join('.') || 'body'}: ${i.message}` }
}

const SIM_TYPE: Record<'pending' | 'confirmed' | 'failed' | 'refunded', SandboxEventType> = {
  pending: 'payment.pending',
  confirmed: 'payment.succeeded',
  failed: 'payment.failed',
  refunded: 'payment.refunded',
}

/**
 * The test refusal of the simulated providers (sandbox, checkout): a payout whose amount in minor units
 * ends in 1313 (13.13, 113.13 USD) is refused, as a provider refuses a payout to a closed account. The
 * refusal is definite, nothing was sent: `PayoutRefused` (the withdrawal's payout fails and its hold
 * returns). Any other payout is accepted.
 */
export const SANDBOX_REFUSED_PAYOUT_MINOR = 1313

/** A simulated provider's payout: its reference (`<prefix><transaction id>`), or its test refusal. */
export function simulatedPayout(
  prefix: string,
  p: { transactionId: number; amount: number; currency: string },
) {
  if (p.amount % 10_000 === SANDBOX_REFUSED_PAYOUT_MINOR)
    throw new PayoutRefused(
      `payout of ${p.amount} minor ${p.currency} refused: the sandbox refuses payouts whose minor units end in 1313 (its test refusal)`,
    )
  return { providerRef: `${prefix}${p.transactionId}` }
}

/**
 * The sandbox card provider: its hosted payment page runs inside this app (sandbox-page.ts) so a
 * developer deposits with no account anywhere; pay, decline and a 3-D Secure-style challenge.
 */
export const sandboxProvider = (hosted: HostedPayments): PaymentProvider => ({
  id: 'sandbox',
  webhooks: true,
  async startDeposit(d) {
    const { token, url } = await hosted.create({
      brandId: d.brandId,
      provider: 'sandbox',
      reference: String(d.transactionId),
      amount: d.amount,
      currency: d.currency,
      notifyUrl: d.notifyUrl,
      returnUrl: d.returnUrl,
    })
    return { next: { type: 'redirect', url }, providerRef: token }
  },
  async resumeDeposit(d) {
    return { type: 'redirect', url: hosted.pageUrl(d.providerRef, d.notifyUrl) }
  },
  verifyWebhook: (headers, body, secrets, nowMs) =>
    verifySandbox(headers.get('sandbox-signature'), body, secrets, nowMs),
  parseWebhook(body) {
    const e = parseJson(SandboxEvent, body)
    if ('error' in e) return e
    return {
      eventId: e.id,
      transactionId: Number(e.data.reference),
      providerRef: e.data.payment_id,
      update: UPDATE[e.type],
      amount: e.data.amount,
      currency: e.data.currency,
    }
  },
  async startPayout(p) {
    return simulatedPayout('sbx_po_', p)
  },
  simulator: {
    body: (id, update, p) => sandboxEvent(id, SIM_TYPE[update], p),
    headers: (secret, body, nowMs) => ({
      'content-type': 'application/json',
      'sandbox-signature': signSandbox(secret, body, Math.floor(nowMs / 1000)),
    }),
  },
  fetchStatus: (ref) => hosted.status(ref),
  expireSession: (ref) => hosted.expire(ref),
})
