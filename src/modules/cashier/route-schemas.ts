import { t } from 'elysia'
import { z } from 'zod'
import { doc, errors } from '../../kernel/http/openapi'
import { Id, Int, nameModels, OneOf } from '../../kernel/http/schemas'
import { MAX_AMOUNT } from '../../kernel/limits'
import { TX_STATUS_NAMES, transitionsText } from './domain/status'
import { CheckoutEvent } from './providers/checkout'
import { SandboxEvent } from './providers/sandbox'

/** The cashier's route schemas: bodies, answers and the webhook route's shape (routes.ts, manager-routes.ts). */
export const CUSTOMER = { roles: ['SESSION_CUSTOMER'] as const }
export const FINANCE = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }
export const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])
export const Amount = t.Number({
  exclusiveMinimum: 0,
  maximum: MAX_AMOUNT,
  description: 'in the account currency',
})
export const IdemKey = t.String({
  minLength: 8,
  maxLength: 64,
  pattern: '^[A-Za-z0-9_.:-]+$',
  description:
    'repeating it with the same request returns the first transaction; with another request, 409 IDEMPOTENCY_KEY_REUSED',
})
export const MethodCode = t.String({
  pattern: '^[a-z][a-z0-9_]{0,31}$',
  description: 'method code from GET /cashier/methods',
  example: 'card',
})
export const Note = (description: string) => t.String({ maxLength: 500, description })
export const StaffNote = Note('staff-only note kept in the status history')
export const Reason = t.String({
  minLength: 1,
  maxLength: 500,
  pattern: '\\S',
  description: 'shown to the customer; not blank',
})

const History = t.Object({
  from: Nullable(Int()),
  to: Int(),
  to_name: t.String(),
  actor: t.String({ description: 'customer, provider:<id>, system, staff' }),
  note: t.String({ description: 'the customer sees notes of the customer and the provider only' }),
  time: Int(),
})
const txFields = {
  id: Int(),
  kind: t.UnionEnum(['deposit', 'withdrawal']),
  login: Int(),
  method: t.String(),
  provider: t.String(),
  status: Int({ description: 'spec 3.1: 0 created … 9 manual_review' }),
  status_name: t.UnionEnum(TX_STATUS_NAMES as [string, ...string[]], {
    description:
      "spec 3.1's name; a withdrawal's are named for what they are: pending_approval (funds held), payout_in_progress (approved), paid, payout_failed, cancelled (rejected, or cancelled by the customer), manual_review (a payout sent with no answer from the provider: staff are checking it, the funds stay held)",
  }),
  amount: t.Number(),
  fee: t.Number(),
  net_amount: t.Number({ description: 'credited (deposit) or paid out (withdrawal)' }),
  currency: t.String(),
  provider_ref: Nullable(t.String()),
  reason: t.String({ description: 'why it failed, was rejected or is reviewed' }),
  created_time: Int(),
  updated_time: Int(),
  history: t.Array(History),
}
export const Transaction = t.Object(txFields, { title: 'CashierTransaction' })
export const StaffTransaction = t.Object(
  {
    ...txFields,
    customer_id: Int(),
    staff_note: t.String(),
    provider_amount: Nullable(t.Number()),
    provider_currency: Nullable(t.String()),
    credit_attempts: Int(),
    flagged: t.Boolean({ description: 'reconciliation found a difference with the provider' }),
  },
  { title: 'CashierTransactionStaff' },
)
export const Next = t.Union([
  t.Object({ type: t.Literal('redirect'), url: t.String() }, { title: 'PaymentRedirect' }),
  t.Object(
    { type: t.Literal('instructions'), text: t.String(), details: t.Record(t.String(), t.String()) },
    { title: 'PaymentInstructions' },
  ),
  t.Null(),
])
export const Method = t.Object({
  code: t.String(),
  provider: t.String(),
  title: t.String(),
  type: t.UnionEnum(['card', 'bank_wire']),
  purposes: t.Array(t.String(), { description: 'deposit, withdrawal' }),
  currencies: t.Array(t.String()),
  min_amount: t.Number(),
  max_amount: t.Number(),
  fee_percent: t.Number(),
  fee_fixed: t.Number(),
})
export const MACHINE = `Deposit transitions: ${transitionsText('deposit')}. Withdrawal transitions: ${transitionsText('withdrawal')}.`
export const StatusFilter = t.Optional(
  OneOf([...new Set(TX_STATUS_NAMES)] as [string, ...string[]], {
    description:
      "status name: the spec's, or a withdrawal's as status_name shows it (pending_approval, paid, …)",
  }),
)
export const SANDBOX_BODY = {
  ...z.toJSONSchema(SandboxEvent, { target: 'openapi-3.0', io: 'input' }),
  description: "The sandbox provider's event, exactly as signed",
}
export const CHECKOUT_BODY = {
  ...z.toJSONSchema(CheckoutEvent, { target: 'openapi-3.0', io: 'input' }),
  description:
    "The checkout provider's event (Checkout.com's shape), exactly as signed; amounts in minor units",
  example: {
    id: 'evt_4f1c2d3e',
    type: 'payment_captured',
    data: { id: 'pay_8a7b6c5d', reference: '1', amount: 10000, currency: 'USD' },
  },
}

/** A provider's webhook: public, signed (its header declared), the event stored once per event id. */
export const webhookRoute = (
  provider: string,
  body: Record<string, unknown>,
  header: { name: string; description: string; example: string },
) => ({
  brand: true as const,
  response: {
    200: t.Object({
      received: t.Boolean(),
      duplicate: t.Boolean({ description: 'this event id was received before' }),
    }),
    ...errors({ 401: ['INVALID_SIGNATURE'], 404: ['PROVIDER_NOT_FOUND'] }),
  },
  detail: {
    ...doc('Cashier', `Webhook of the ${provider} provider`, {
      secured: false,
      rawBody: body,
      description:
        `Public; the ${header.name} signature is checked over the exact body first (401 INVALID_SIGNATURE), ` +
        'then the event is stored once per provider event id before the 200; a repeat answers 200 with ' +
        'duplicate=true and changes nothing. 404 PROVIDER_NOT_FOUND when the brand has no such provider.',
    }),
    parameters: [
      {
        name: header.name,
        in: 'header' as const,
        required: true,
        description: header.description,
        schema: { type: 'string', description: header.description },
        example: header.example,
      },
    ] as never,
  },
})
export const TxId = { id: Id('cashier transaction id') }
export const CONFLICT = { 404: ['TRANSACTION_NOT_FOUND'], 409: ['TRANSACTION_STATE_CONFLICT'] } as const

nameModels({ CashierMethod: Method, CashierStatusChange: History })
