import { hmacHex } from '../../../kernel/hmac'

/**
 * The largest amount a provider's event may carry, in minor units (a trillion with two decimals): beyond
 * it an event is malformed (400), as no payment is that large and the ledger keeps exact integers.
 */
export const MAX_PROVIDER_MINOR = 100_000_000_000_000

import type { ProviderUpdate } from '../domain/status'

/** A deposit handed to a provider module. Amounts in minor units. */
interface DepositStart {
  transactionId: number
  brandId: number
  amount: number
  currency: string
  /** Where the provider posts its webhooks (this brand's host). */
  notifyUrl: string
  /** Where the customer's browser goes after paying. */
  returnUrl: string
}

/** What the client does next. */
export type NextStep =
  | { type: 'redirect'; url: string }
  | { type: 'instructions'; text: string; details: Record<string, string> }

/** A webhook turned into a lifecycle update of one transaction. */
export interface ParsedWebhook {
  eventId: string
  /** Our transaction id, as the provider echoes it (its `reference`). */
  transactionId: number
  providerRef: string
  update: ProviderUpdate
  amount: number
  currency: string
}

/**
 * The port every payment provider module implements. A module talks to its provider and translates;
 * it never touches balances: the server credits, once, from the lifecycle update.
 */
export interface PaymentProvider {
  id: string
  /** Whether webhooks come in (wire transfers are confirmed by staff instead). */
  webhooks: boolean
  startDeposit(d: DepositStart, secret: string): Promise<{ next: NextStep; providerRef: string | null }>
  /**
   * The next step of a deposit it started (`providerRef`) and not paid yet, again: a deposit asked again
   * with its idempotency key after its first answer was lost. Null when it cannot be given again.
   */
  resumeDeposit?(d: {
    transactionId: number
    amount: number
    currency: string
    notifyUrl: string
    providerRef: string
  }): Promise<NextStep | null>
  /** True only for a body signed with one of the brand's current secrets, within the tolerance. */
  verifyWebhook(headers: Headers, body: string, secrets: string[], nowMs: number): boolean
  /** The update a verified body carries, or a message naming what is wrong with it. */
  parseWebhook(body: string): ParsedWebhook | { error: string }
  /**
   * Sends a withdrawal's payout; the provider's reference. Throws `PayoutRefused` when the provider
   * refused it (nothing was sent); any other throw (a timeout, a lost connection) is an unknown outcome:
   * the money may have left, so the hold is kept for staff. `signal` aborts at the approval's deadline
   * (its send lease less PAYOUT_ANSWER_MARGIN_MS): a module that does I/O passes it on (`fetch`'s
   * `signal`) and asks nothing more of the provider once it aborted; its answer is no longer waited for
   * (the withdrawal goes to manual_review, its outcome unknown).
   */
  startPayout(
    p: {
      transactionId: number
      amount: number
      currency: string
    },
    signal?: AbortSignal,
  ): Promise<{ providerRef: string }>
  /** The provider's side of its scheme, for the hosted sandbox page that stands in for it. */
  simulator?: WebhookSimulator
  /** The provider's own view of a payment (reconciliation), or null when it cannot be asked. */
  fetchStatus?(providerRef: string): Promise<ProviderUpdate | null>
  /**
   * Ends a payment session nobody paid (Stripe's "expire a Checkout Session"): true when the provider
   * ended it, so it can no longer be paid; false when it was paid, is being paid or is already over (ask
   * `fetchStatus`). Without it, a deposit's session is not ended by this app.
   */
  expireSession?(providerRef: string): Promise<boolean>
}

/** The provider's definite refusal of a payout: nothing was sent (its hold may be returned). */
export class PayoutRefused extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'PayoutRefused'
  }
}

/** A payment as the simulated provider keeps it. */
interface SimulatedPayment {
  token: string
  reference: string
  amount: number
  currency: string
}

/** How a provider signs and shapes its webhooks (the sandbox page sends them in the provider's scheme). */
interface WebhookSimulator {
  body(eventId: string, update: 'pending' | 'confirmed' | 'failed' | 'refunded', p: SimulatedPayment): string
  headers(secret: string, body: string, nowMs: number): Record<string, string>
}

/** Payments made on the hosted sandbox page (the provider side, inside this app). */
export interface HostedPayments {
  create(p: {
    brandId: number
    provider: string
    reference: string
    amount: number
    currency: string
    notifyUrl: string
    returnUrl: string
  }): Promise<{ token: string; url: string }>
  /** The hosted page of a payment it created (`create`'s url), on the origin of its `notifyUrl`. */
  pageUrl(token: string, notifyUrl: string): string
  status(token: string): Promise<ProviderUpdate | null>
  /** Ends a payment nobody has paid or started paying; false when it was (or is no longer open). */
  expire(token: string): Promise<boolean>
}

export { hmacHex }

/** Compares two strings in time independent of where they differ. */
export function constantTimeEqual(a: string, b: string) {
  if (a.length !== b.length) return false
  let diff = 0
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i)
  return diff === 0
}
