import { fromMinor } from '../../accounts'
import type { NextStep, PaymentProvider } from './port'

/** A wire deposit's instructions: the amount and our reference (`W<id>`, its provider_ref). */
function instructions(
  bank: { name: string; iban: string; bic: string; holder: string },
  d: { transactionId: number; amount: number; currency: string },
): NextStep {
  const reference = `W${d.transactionId}`
  return {
    type: 'instructions',
    text: `Transfer ${fromMinor(d.amount, d.currency)} ${d.currency} quoting ${reference}; the balance is credited once the bank transfer arrives.`,
    details: { bank: bank.name, iban: bank.iban, bic: bank.bic, account_holder: bank.holder, reference },
  }
}

/** Bank wire: the customer transfers with our reference; staff confirm the amount received. */
export const wireProvider = (bank: {
  name: string
  iban: string
  bic: string
  holder: string
}): PaymentProvider => ({
  id: 'wire',
  webhooks: false,
  async startDeposit(d) {
    return { next: instructions(bank, d), providerRef: `W${d.transactionId}` }
  },
  async resumeDeposit(d) {
    return instructions(bank, d)
  },
  verifyWebhook: () => false,
  parseWebhook: () => ({ error: 'bank wires have no webhooks' }),
  // no bank API: the payout is a reference staff send by hand from the bank's own portal, so nothing
  // here can refuse it (never `PayoutRefused`); a bank that returns the wire is recorded by staff
  // (payout-failed, which returns the hold)
  async startPayout(p) {
    return { providerRef: `W-PO${p.transactionId}` }
  },
})
