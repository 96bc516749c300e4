import { z } from 'zod'
import { defineTopic } from '../../kernel/events/topic'

const Money = z.object({
  transaction_id: z.number().int(),
  customer_id: z.number().int(),
  login: z.number().int(),
  method: z.string(),
  provider: z.string(),
  amount: z.number(),
  fee: z.number(),
  currency: z.string(),
})

/** A deposit was credited to the trading account (once per transaction; affiliates consume it). */
export const CashierCredited = defineTopic('cashier.credited', Money)
/** A credited deposit was refunded or charged back (its amount taken back from the balance). */
export const CashierReversed = defineTopic(
  'cashier.reversed',
  // shortfall: what the balance went below zero by (a provider's reversal of money already spent)
  Money.extend({ status: z.string(), shortfall: z.number().optional() }),
)
/** A withdrawal was requested (its funds held). */
export const WithdrawalRequested = defineTopic('cashier.withdrawal_requested', Money)
/** A withdrawal was paid out. */
export const WithdrawalPaid = defineTopic('cashier.withdrawal_paid', Money)
