import { z } from 'zod'
import { defineTopic } from '../../kernel/events/topic'
import { upgradeMajorFields } from '../accounts'

/** Amounts in integer minor units of `currency` (events written before carried major units: read as these). */
const Money = z.object({
  transaction_id: z.number().int(),
  customer_id: z.number().int(),
  login: z.number().int(),
  method: z.string(),
  provider: z.string(),
  amount_minor: z.number().int(),
  fee_minor: z.number().int(),
  currency: z.string(),
})
const legacy = upgradeMajorFields({ amount: 'amount_minor', fee: 'fee_minor', shortfall: 'shortfall_minor' })

/** A deposit was credited to the trading account (once per transaction; affiliates consume it). */
export const CashierCredited = defineTopic('cashier.credited', z.preprocess(legacy, Money))
/** A credited deposit was refunded or charged back (its amount taken back from the balance). */
export const CashierReversed = defineTopic(
  'cashier.reversed',
  // shortfall: what the balance went below zero by (a provider's reversal of money already spent)
  z.preprocess(legacy, Money.extend({ status: z.string(), shortfall_minor: z.number().int().optional() })),
)
/** A withdrawal was requested (its funds held). */
export const WithdrawalRequested = defineTopic('cashier.withdrawal_requested', z.preprocess(legacy, Money))
/** A withdrawal was paid out. */
export const WithdrawalPaid = defineTopic(
  'cashier.withdrawal_paid',
  // hold: the name its held funds carry in the ledger (null: held before migration 0035)
  z.preprocess(legacy, Money.extend({ hold: z.string().nullable().optional() })),
)
