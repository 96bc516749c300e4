import { Elysia, t } from 'elysia'
import { z } from 'zod'
import { doc, errors } from '../../kernel/http/openapi'
import { EpochSeconds, Id, Int, Login, nameModels, OneOf, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import { MAX_AMOUNT } from '../../kernel/limits'
import {
  approveWithdrawal,
  confirmWire,
  markPaid,
  payoutFailed,
  refund,
  rejectWithdrawal,
  resolveReview,
  retryCredit,
  saveMethod,
  searchTransactions,
  setOverride,
  staffTransaction,
} from './backoffice'
import type { CashierCtx } from './context'
import {
  customerTransaction,
  customerTransactions,
  listMethods,
  requestWithdrawal,
  startDeposit,
} from './customer'
import { STATUS_NAMES, TX_STATUS_NAMES, transitionsText } from './domain/status'
import { CheckoutEvent } from './providers/checkout'
import { SandboxEvent } from './providers/sandbox'
import { receiveWebhook } from './webhooks'

const CUSTOMER = { roles: ['SESSION_CUSTOMER'] as const }
const FINANCE = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }
const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])
const Amount = t.Number({ exclusiveMinimum: 0, maximum: MAX_AMOUNT, description: 'in the account currency' })
const IdemKey = t.String({
  minLength: 8,
  maxLength: 64,
  pattern: '^[A-Za-z0-9_.:-]+$',
  description:
    'repeating it with the same request returns the first transaction; with another request, 409 IDEMPOTENCY_KEY_REUSED',
})
const MethodCode = t.String({
  pattern: '^[a-z][a-z0-9_]{0,31}$',
  description: 'method code from GET /cashier/methods',
  example: 'card',
})
const Note = (description: string) => t.String({ maxLength: 500, description })
const StaffNote = Note('staff-only note kept in the status history')
const Reason = t.String({ minLength: 1, maxLength: 500, description: 'shown to the customer' })

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
      "spec 3.1's name; a withdrawal's are named for what they are: pending_approval (funds held), payout_in_progress (approved), paid, payout_failed, cancelled (rejected)",
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
const Transaction = t.Object(txFields, { title: 'CashierTransaction' })
const StaffTransaction = t.Object(
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
const Next = t.Union([
  t.Object({ type: t.Literal('redirect'), url: t.String() }, { title: 'PaymentRedirect' }),
  t.Object(
    { type: t.Literal('instructions'), text: t.String(), details: t.Record(t.String(), t.String()) },
    { title: 'PaymentInstructions' },
  ),
  t.Null(),
])
const Method = t.Object({
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
const MACHINE = `Deposit transitions: ${transitionsText('deposit')}. Withdrawal transitions: ${transitionsText('withdrawal')}.`
const StatusFilter = t.Optional(OneOf(STATUS_NAMES as [string, ...string[]], { description: 'status name' }))
const SANDBOX_BODY = {
  ...z.toJSONSchema(SandboxEvent, { target: 'openapi-3.0', io: 'input' }),
  description: "The sandbox provider's event, exactly as signed",
}
const CHECKOUT_BODY = {
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
const webhookRoute = (
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
const TxId = { id: Id('cashier transaction id') }
const CONFLICT = { 404: ['TRANSACTION_NOT_FOUND'], 409: ['TRANSACTION_STATE_CONFLICT'] } as const

/** Customer cashier routes (spec 4.11) and the public webhook. */
export const cashierRoutes = (ctx: CashierCtx) =>
  new Elysia({ name: 'cashier-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .get('/cashier/methods', ({ brand, session, query }) => listMethods(ctx, brand, session, query.login), {
      auth: CUSTOMER,
      ...textInput({ query: { login: Login } }),
      response: {
        200: t.Object(
          {
            login: Int(),
            currency: t.String(),
            kyc_status: t.String(),
            deposit_limit_remaining: Nullable(
              t.Number({ description: 'before KYC approval; null: no KYC limit' }),
            ),
            withdrawal_allowed: t.Boolean(),
            methods: t.Array(Method),
          },
          { title: 'CashierMethods' },
        ),
        ...errors({
          400: ['ACCOUNT_NOT_REAL'],
          403: ['DEPOSIT_NOT_ALLOWED'],
          404: ['ACCOUNT_NOT_FOUND', 'CUSTOMER_NOT_FOUND'],
        }),
      },
      detail: doc('Cashier', 'Payment methods for an account', {
        description:
          'deposit_allowed is checked first (403 DEPOSIT_NOT_ALLOWED). Then the methods of the brand, enabled (or ' +
          'enabled for this customer by staff) and not hidden from the customer, whose provider module is loaded and ' +
          "configured for the brand, serving the account currency and the customer's country.",
      }),
    })
    .post(
      '/cashier/deposit',
      ({ brand, session, body, request }) =>
        startDeposit(ctx, brand, session, body, new URL(request.url).origin),
      {
        auth: CUSTOMER,
        body: t.Object(
          {
            login: Login,
            method: MethodCode,
            amount: Amount,
            return_url: t.Optional(
              t.String({
                pattern: '^https?://[^\\s]+$',
                maxLength: 500,
                description: 'where the payment page returns',
              }),
            ),
            idempotency_key: t.Optional(IdemKey),
          },
          { example: { login: 100001, method: 'card', amount: 100, idempotency_key: 'dep-2026-11-23-001' } },
        ),
        response: {
          200: t.Object({ transaction: Transaction, next: Next, idempotent: t.Boolean() }),
          ...errors({
            400: ['ACCOUNT_NOT_REAL', 'METHOD_NOT_AVAILABLE', 'AMOUNT_OUT_OF_RANGE'],
            403: ['DEPOSIT_NOT_ALLOWED', 'KYC_LIMIT_EXCEEDED'],
            404: ['ACCOUNT_NOT_FOUND', 'CUSTOMER_NOT_FOUND'],
            409: ['IDEMPOTENCY_KEY_REUSED'],
            502: ['PROVIDER_UNAVAILABLE'],
          }),
        },
        detail: doc('Cashier', 'Start a deposit', {
          description:
            'Creates the transaction (created), hands it to the provider (pending_payment) and answers what the ' +
            'client does next: open next.url (card) or show next.details (bank wire). The balance is credited by the ' +
            `server once the provider's signed webhook confirms the payment (or staff confirm a wire). ${MACHINE}`,
        }),
      },
    )
    .post('/cashier/withdrawal', ({ brand, session, body }) => requestWithdrawal(ctx, brand, session, body), {
      auth: CUSTOMER,
      body: t.Object(
        { login: Login, method: MethodCode, amount: Amount, idempotency_key: t.Optional(IdemKey) },
        { example: { login: 100001, method: 'wire', amount: 50 } },
      ),
      response: {
        200: t.Object({ transaction: Transaction, idempotent: t.Boolean() }),
        ...errors({
          400: [
            'ACCOUNT_NOT_REAL',
            'METHOD_NOT_AVAILABLE',
            'AMOUNT_OUT_OF_RANGE',
            'NOT_ENOUGH_FREE_MARGIN',
            'NOT_ENOUGH_FUNDS',
            'INVALID_MARGIN_LEVEL',
          ],
          403: ['WITHDRAWAL_NOT_ALLOWED', 'KYC_REQUIRED'],
          404: ['ACCOUNT_NOT_FOUND', 'CUSTOMER_NOT_FOUND'],
          409: ['IDEMPOTENCY_KEY_REUSED'],
        }),
      },
      detail: doc('Cashier', 'Request a withdrawal', {
        description:
          'Checks withdrawal_allowed, the KYC steps the brand requires, the method and free margin (equity minus ' +
          'margin). The amount is held at once (a balance-out) and the request waits for staff: approve (payout), ' +
          'reject (the hold returns), mark paid.',
      }),
    })
    .get(
      '/cashier/transactions',
      ({ brand, session, query }) => customerTransactions(ctx, brand, session, query as never),
      {
        auth: CUSTOMER,
        ...textInput({
          query: {
            login: t.Optional(Login),
            kind: t.Optional(OneOf(['deposit', 'withdrawal'], { description: 'deposit or withdrawal' })),
            status: StatusFilter,
            from: t.Optional(EpochSeconds('created at or after')),
            to: t.Optional(EpochSeconds('created at or before')),
            cursor: t.Optional(Int({ minimum: 1, description: 'next_cursor of the previous page' })),
            limit: t.Optional(Int({ minimum: 1, maximum: 200, description: 'default 50' })),
          },
        }),
        response: { 200: t.Object({ rows: t.Array(Transaction), next_cursor: Nullable(Int()) }) },
        detail: doc('Cashier', "The customer's deposits and withdrawals with their status history"),
      },
    )
    .get(
      '/cashier/transactions/:id',
      ({ brand, session, params }) => customerTransaction(ctx, brand, session, params.id),
      {
        auth: CUSTOMER,
        ...textInput({ params: TxId }),
        response: { 200: Transaction, ...errors({ 404: ['TRANSACTION_NOT_FOUND'] }) },
        detail: doc('Cashier', 'One transaction with its status history'),
      },
    )
    // each provider's webhook is its own operation, with the body it signs and its signature header; the
    // generic path answers 404 PROVIDER_NOT_FOUND for a name the brand has no provider under
    .post(
      '/cashier/webhook/sandbox',
      ({ brand, body, request }) =>
        receiveWebhook(ctx, brand, 'sandbox', request.headers, body as unknown as string),
      webhookRoute('sandbox', SANDBOX_BODY, {
        name: 'Sandbox-Signature',
        description:
          '`t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + body)>`; 300 s tolerance, any secret of the rotation',
        example: 't=1795574400,v1=5d41402abc4b2a76b9719d911017c592ae7e2cc9e0c5c2d1f0d1b1d9c8f1e2a3',
      }),
    )
    .post(
      '/cashier/webhook/checkout',
      ({ brand, body, request }) =>
        receiveWebhook(ctx, brand, 'checkout', request.headers, body as unknown as string),
      webhookRoute('checkout', CHECKOUT_BODY, {
        name: 'Cko-Signature',
        description: 'hex HMAC-SHA256(secret, body) of the exact bytes, any secret of the rotation',
        example: '3b5d3c7d207e37dceeedd301e35e2e58a6d3b6b9e4f5b26a1b4c0d9b8e8a7f61',
      }),
    )
    .post(
      '/cashier/webhook/:provider',
      ({ brand, params, body, request }) =>
        receiveWebhook(ctx, brand, params.provider, request.headers, body as unknown as string),
      {
        brand: true,
        params: t.Object({
          provider: t.String({ minLength: 1, maxLength: 64, description: 'provider name' }),
        }),
        detail: {
          ...doc('Cashier', 'Provider webhook', { secured: false, rawBody: SANDBOX_BODY }),
          hide: true,
        },
      },
    )

/** Back-office cashier routes. */
export const cashierManagerRoutes = (ctx: CashierCtx) =>
  new Elysia({ name: 'cashier-manager-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .get(
      '/manager/cashier/transactions',
      ({ brand, query }) => searchTransactions(ctx, brand.id, query as never),
      {
        auth: FINANCE,
        ...textInput({
          query: {
            status: StatusFilter,
            kind: t.Optional(OneOf(['deposit', 'withdrawal'], { description: 'deposit or withdrawal' })),
            customer: t.Optional(Id('customer id')),
            login: t.Optional(Login),
            flagged: t.Optional(
              Int({ minimum: 0, maximum: 1, description: '1: reconciliation differences' }),
            ),
            cursor: t.Optional(Int({ minimum: 1, description: 'next_cursor of the previous page' })),
            limit: t.Optional(Int({ minimum: 1, maximum: 200, description: 'default 50' })),
          },
        }),
        response: { 200: t.Object({ rows: t.Array(StaffTransaction), next_cursor: Nullable(Int()) }) },
        detail: doc('Cashier back office', 'Search transactions'),
      },
    )
    .get(
      '/manager/cashier/transactions/:id',
      ({ brand, params }) => staffTransaction(ctx, brand.id, params.id),
      {
        auth: FINANCE,
        ...textInput({ params: TxId }),
        response: { 200: StaffTransaction, ...errors({ 404: ['TRANSACTION_NOT_FOUND'] }) },
        detail: doc('Cashier back office', 'One transaction with its history'),
      },
    )
    .post(
      '/manager/cashier/transactions/:id/resolve',
      ({ brand, session, params, body }) => resolveReview(ctx, brand.id, session.staffId!, params.id, body),
      {
        auth: FINANCE,
        ...textInput({ params: TxId }),
        body: t.Object(
          {
            decision: OneOf(['credit', 'fail'], { description: 'credit the deposit, or close it as failed' }),
            note: StaffNote,
            reason: t.Optional(Note('for fail: shown to the customer')),
          },
          { example: { decision: 'credit', note: 'provider confirmed the amount by phone' } },
        ),
        response: { 200: StaffTransaction, ...errors(CONFLICT) },
        detail: doc('Cashier back office', 'Resolve a deposit in manual review'),
      },
    )
    .post(
      '/manager/cashier/transactions/:id/retry-credit',
      ({ brand, session, params, body }) =>
        retryCredit(ctx, brand.id, session.staffId!, params.id, body.note ?? ''),
      {
        auth: FINANCE,
        ...textInput({ params: TxId }),
        body: t.Object(
          { note: t.Optional(StaffNote) },
          { example: { note: 'ledger back after maintenance' } },
        ),
        response: { 200: StaffTransaction, ...errors(CONFLICT) },
        detail: doc('Cashier back office', 'Retry the credit of a credit_failed deposit', {
          optionalBody: true,
        }),
      },
    )
    .post(
      '/manager/cashier/transactions/:id/confirm-wire',
      ({ brand, session, params, body }) =>
        confirmWire(ctx, brand.id, session.staffId!, params.id, body.amount),
      {
        auth: FINANCE,
        ...textInput({ params: TxId }),
        body: t.Object({ amount: Amount }, { example: { amount: 500 } }),
        response: { 200: StaffTransaction, ...errors(CONFLICT) },
        detail: doc('Cashier back office', 'Confirm a received bank wire', {
          description:
            'The amount received equal to the request credits it; any other amount goes to manual_review.',
        }),
      },
    )
    .post(
      '/manager/cashier/transactions/:id/refund',
      ({ brand, session, params, body }) => refund(ctx, brand.id, session.staffId!, params.id, body.note),
      {
        auth: FINANCE,
        ...textInput({ params: TxId }),
        body: t.Object({ note: StaffNote }, { example: { note: 'customer asked; card refund' } }),
        response: { 200: StaffTransaction, ...errors({ ...CONFLICT, 400: ['NOT_ENOUGH_FUNDS'] }) },
        detail: doc('Cashier back office', 'Refund a credited deposit (the balance must cover it)'),
      },
    )
    .post(
      '/manager/cashier/transactions/:id/approve',
      ({ brand, session, params, body }) =>
        approveWithdrawal(ctx, brand.id, session.staffId!, params.id, body.note ?? ''),
      {
        auth: FINANCE,
        ...textInput({ params: TxId }),
        body: t.Object({ note: t.Optional(StaffNote) }, { example: { note: 'checked' } }),
        response: { 200: StaffTransaction, ...errors(CONFLICT) },
        detail: doc('Cashier back office', 'Approve a withdrawal and send its payout', {
          optionalBody: true,
        }),
      },
    )
    .post(
      '/manager/cashier/transactions/:id/reject',
      ({ brand, session, params, body }) =>
        rejectWithdrawal(ctx, brand.id, session.staffId!, params.id, body.reason),
      {
        auth: FINANCE,
        ...textInput({ params: TxId }),
        body: t.Object({ reason: Reason }, { example: { reason: 'The account holder name differs.' } }),
        response: { 200: StaffTransaction, ...errors(CONFLICT) },
        detail: doc('Cashier back office', 'Reject a withdrawal (the held funds return)'),
      },
    )
    .post(
      '/manager/cashier/transactions/:id/mark-paid',
      ({ brand, session, params, body }) =>
        markPaid(ctx, brand.id, session.staffId!, params.id, body.note ?? ''),
      {
        auth: FINANCE,
        ...textInput({ params: TxId }),
        body: t.Object({ note: t.Optional(StaffNote) }, { example: { note: 'checked' } }),
        response: { 200: StaffTransaction, ...errors(CONFLICT) },
        detail: doc('Cashier back office', 'Mark an approved withdrawal paid', { optionalBody: true }),
      },
    )
    .post(
      '/manager/cashier/transactions/:id/payout-failed',
      ({ brand, session, params, body }) =>
        payoutFailed(ctx, brand.id, session.staffId!, params.id, body.reason),
      {
        auth: FINANCE,
        ...textInput({ params: TxId }),
        body: t.Object({ reason: Reason }, { example: { reason: 'The bank returned the transfer.' } }),
        response: { 200: StaffTransaction, ...errors(CONFLICT) },
        detail: doc('Cashier back office', 'Record a failed payout (the held funds return)'),
      },
    )
    .put(
      '/manager/cashier/customers/:customer/methods/:method',
      ({ brand, params, body }) => setOverride(ctx, brand.id, params.customer, params.method, body.enabled),
      {
        auth: FINANCE,
        ...textInput({ params: { customer: Id('customer id'), method: MethodCode } }),
        body: t.Object(
          {
            enabled: t.Union([t.Boolean(), t.Null()], {
              description: 'true show, false hide, null back to the brand setting',
            }),
          },
          // null: the brand's setting again (hiding the demo's card would end the README's deposit walk-through)
          { example: { enabled: null } },
        ),
        response: {
          200: t.Object({
            customer_id: Int(),
            overrides: t.Array(
              t.Object({ method: t.String(), enabled: t.Boolean() }, { title: 'CashierMethodOverride' }),
            ),
          }),
          ...errors({ 404: ['CUSTOMER_NOT_FOUND'] }),
        },
        detail: doc(
          'Cashier back office',
          "Override a method for one customer (the CRM's per-customer setting)",
        ),
      },
    )
    .put(
      '/manager/cashier/methods/:method',
      ({ brand, params, body }) => saveMethod(ctx, brand.id, params.method, body),
      {
        auth: FINANCE,
        params: t.Object({ method: MethodCode }),
        body: t.Object(
          {
            provider: t.String({ pattern: '^[a-z][a-z0-9_]{0,31}$', description: 'sandbox, checkout, wire' }),
            title: t.String({ minLength: 1, maxLength: 100, description: 'shown to customers' }),
            deposit: t.Boolean({ description: 'offered for deposits' }),
            withdrawal: t.Boolean({ description: 'offered for withdrawals' }),
            currencies: t.Array(t.String({ pattern: '^[A-Z]{3}$' }), {
              minItems: 1,
              maxItems: 50,
              description: 'account currencies served',
            }),
            countries: t.Optional(
              t.Array(t.String({ pattern: '^[A-Z]{2}$' }), {
                maxItems: 250,
                description: 'ISO 3166 countries served; empty or absent: all',
              }),
            ),
            min_amount: Int({ minimum: 0, maximum: MAX_AMOUNT, description: 'smallest amount' }),
            max_amount: Int({ minimum: 1, maximum: MAX_AMOUNT, description: 'largest amount' }),
            fee_percent: t.Optional(
              t.Number({ minimum: 0, maximum: 50, description: 'percent of the amount' }),
            ),
            fee_fixed_minor: t.Optional(
              Int({ minimum: 0, maximum: 1_000_000, description: 'fixed fee in minor units' }),
            ),
            enabled: t.Boolean({ description: 'false hides it unless a customer override shows it' }),
          },
          {
            example: {
              provider: 'sandbox',
              title: 'Card',
              deposit: true,
              withdrawal: true,
              currencies: ['USD', 'EUR'],
              min_amount: 10,
              max_amount: 10000,
              enabled: true,
            },
          },
        ),
        response: { 200: t.Record(t.String(), t.Unknown()) },
        detail: doc('Cashier back office', "Create or replace a brand's payment method"),
      },
    )

nameModels({ CashierMethod: Method, CashierStatusChange: History })
