import { z } from 'zod'
import { defineTopic } from '../../kernel/events/topic'
import { upgradeMajorFields } from './domain/money'

/** A trading account was opened (self-service, staff or seed). */
export const AccountCreated = defineTopic(
  'account.created',
  z.object({
    login: z.number().int(),
    group: z.string(),
    group_id: z.number().int(),
    mode: z.enum(['REAL', 'DEMO']),
    customer_id: z.number().int().nullable(),
  }),
)

/** Staff changed an account's group, leverage, flags or comment. */
export const AccountUpdated = defineTopic(
  'account.updated',
  z.object({ login: z.number().int(), changes: z.record(z.string(), z.unknown()) }),
)

/**
 * Staff changed a group's name, leverage, demo deposit, margin call or stop-out level (`changes`: the
 * fields as sent). New levels move every account of the group toward or away from a stop-out without a
 * tick: the trading engine looks again at the group's accounts with positions.
 */
export const GroupUpdated = defineTopic(
  'group.updated',
  z.object({ group_id: z.number().int(), changes: z.record(z.string(), z.unknown()) }),
)

/** A balance or credit operation was posted to the ledger (deposits, withdrawals, credits, demo funding). */
export const BalanceOperation = defineTopic(
  'account.balance_operation',
  // amounts in integer minor units of `currency`, signed (events written before carried major units)
  z.preprocess(
    upgradeMajorFields({
      amount: 'amount_minor',
      balance_after: 'balance_after_minor',
      credit_after: 'credit_after_minor',
    }),
    z.object({
      id: z.number().int(),
      login: z.number().int(),
      op: z.string(),
      ticket: z.number().int().nullable(),
      amount_minor: z.number().int(),
      balance_after_minor: z.number().int(),
      credit_after_minor: z.number().int(),
      currency: z.string(),
      reason: z.string(),
      comment: z.string(),
      api_data: z.record(z.string(), z.unknown()).nullable(),
      idempotency_key: z.string().nullable(),
      created_by: z.string(),
      created_time: z.number().int(),
      // the request the money is held for, on the hold and on its return (ledger.ts: `hold`)
      hold: z.string().nullable().optional(),
    }),
  ),
)

/** A customer registered (attribution will consume it). */
export const CustomerRegistered = defineTopic(
  'customer.registered',
  z.object({ customer_id: z.number().int(), attribution: z.record(z.string(), z.string()).nullable() }),
)

/** Someone registered with an email that exists (the owner can be told out of band). */
export const CustomerRegistrationAttempted = defineTopic(
  'customer.registration_attempted',
  z.object({ email: z.string() }),
)
