import { Elysia, t } from 'elysia'
import { doc, errors } from '../../kernel/http/openapi'
import { EpochSeconds, Int, Login, OneOf, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import { publicOrigin } from './config'
import type { CashierCtx } from './context'
import {
  cancelTransaction,
  customerTransaction,
  customerTransactions,
  listMethods,
  requestWithdrawal,
  startDeposit,
} from './customer'
import {
  Amount,
  CHECKOUT_BODY,
  CUSTOMER,
  IdemKey,
  MACHINE,
  Method,
  MethodCode,
  Next,
  Nullable,
  SANDBOX_BODY,
  StatusFilter,
  Transaction,
  TxId,
  webhookRoute,
} from './route-schemas'
import { receiveWebhook } from './webhooks'

/** Customer cashier routes (spec 4.11) and the public webhook. */
export const cashierRoutes = (ctx: CashierCtx) =>
  new Elysia({ name: 'cashier-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .get(
      '/cashier/methods',
      ({ brand, session, query }) => listMethods({ ctx, brand, session, input: query }),
      {
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
            403: ['DEPOSIT_NOT_ALLOWED', 'ACCOUNT_MANAGED', 'ACCOUNT_DISABLED'],
            404: ['ACCOUNT_NOT_FOUND', 'CUSTOMER_NOT_FOUND'],
          }),
        },
        detail: doc('Cashier', 'Payment methods for an account', {
          description:
            'deposit_allowed is checked first (403 DEPOSIT_NOT_ALLOWED). Then the methods of the brand, enabled (or ' +
            'enabled for this customer by staff) and not hidden from the customer, whose provider module is loaded and ' +
            "configured for the brand, serving the account currency and the customer's country.",
        }),
      },
    )
    .post(
      '/cashier/deposit',
      ({ brand, session, body, request }) =>
        startDeposit({
          ctx,
          brand,
          session,
          input: body,
          origin: publicOrigin(ctx.settings, brand.name, request.url),
        }),
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
            403: ['DEPOSIT_NOT_ALLOWED', 'KYC_LIMIT_EXCEEDED', 'ACCOUNT_MANAGED', 'ACCOUNT_DISABLED'],
            404: ['ACCOUNT_NOT_FOUND', 'CUSTOMER_NOT_FOUND'],
            409: ['IDEMPOTENCY_KEY_REUSED'],
            502: ['PROVIDER_UNAVAILABLE'],
          }),
        },
        detail: doc('Cashier', 'Start a deposit', {
          description:
            'Creates the transaction (created), hands it to the provider (pending_payment) and answers what the ' +
            'client does next: open next.url (card) or show next.details (bank wire). The balance is credited by the ' +
            "server once the provider's signed webhook confirms the payment (or staff confirm a wire). Asked again " +
            'with its idempotency_key (a lost answer), the same deposit (idempotent: true) with the same next step ' +
            'while it is pending_payment; next is null once it moved on. 400 AMOUNT_OUT_OF_RANGE outside the ' +
            "method's limits, or when its fee takes the whole amount (the message names the smallest amount that " +
            `credits anything). ${MACHINE}`,
        }),
      },
    )
    .post(
      '/cashier/withdrawal',
      ({ brand, session, body }) => requestWithdrawal({ ctx, brand, session, input: body }),
      {
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
            403: ['WITHDRAWAL_NOT_ALLOWED', 'KYC_REQUIRED', 'ACCOUNT_MANAGED', 'ACCOUNT_DISABLED'],
            404: ['ACCOUNT_NOT_FOUND', 'CUSTOMER_NOT_FOUND'],
            409: ['IDEMPOTENCY_KEY_REUSED'],
            503: ['PRICE_STALE'],
          }),
        },
        detail: doc('Cashier', 'Request a withdrawal', {
          description:
            'Checks withdrawal_allowed, the KYC steps the brand requires, the method and free margin less credit (equity minus ' +
            "margin and the broker's credit, which is never paid out). The amount is held at once (a balance-out) and the request waits for staff: approve (payout), " +
            'reject (the hold returns), mark paid; until staff decide, the customer may cancel it (POST ' +
            "/cashier/transactions/{id}/cancel: the hold returns). 400 AMOUNT_OUT_OF_RANGE outside the method's limits, or " +
            'when its fee takes the whole amount (the message names the smallest amount that pays out anything). With open positions the free margin is taken at current prices ' +
            'only: 503 PRICE_STALE while this instance has none (its price feed is cut off), nothing held, retry.',
        }),
      },
    )
    .get(
      '/cashier/transactions',
      ({ brand, session, query }) => customerTransactions({ ctx, brand, session, input: query as never }),
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
      ({ brand, session, params }) => customerTransaction({ ctx, brand, session, id: params.id }),
      {
        auth: CUSTOMER,
        ...textInput({ params: TxId }),
        response: { 200: Transaction, ...errors({ 404: ['TRANSACTION_NOT_FOUND'] }) },
        detail: doc('Cashier', 'One transaction with its status history'),
      },
    )
    .post(
      '/cashier/transactions/:id/cancel',
      ({ brand, session, params }) => cancelTransaction({ ctx, brand, session, id: params.id }),
      {
        auth: CUSTOMER,
        ...textInput({ params: TxId }),
        response: {
          200: Transaction,
          ...errors({
            404: ['TRANSACTION_NOT_FOUND'],
            409: ['TRANSACTION_STATE_CONFLICT'],
            502: ['PROVIDER_UNAVAILABLE'],
          }),
        },
        detail: doc('Cashier', 'Cancel a withdrawal staff have not decided yet, or a deposit not paid', {
          description:
            "The customer's own withdrawal while it is pending_approval: it ends cancelled and the held amount " +
            'returns to the balance at once. Once approved (payout_in_progress) only staff can stop it: 409 ' +
            "TRANSACTION_STATE_CONFLICT naming its status, as for a rejected or paid one. The customer's own " +
            "deposit while it is pending_payment and nobody paid it: a card payment's session is ended at the " +
            'provider first (then it can no longer be paid), and the deposit ends cancelled and no longer counts ' +
            'toward the KYC deposit limit; one paid or being paid at the provider is 409 TRANSACTION_STATE_CONFLICT ' +
            '(it is credited once confirmed), a provider that cannot be reached 502 PROVIDER_UNAVAILABLE. A deposit ' +
            'left unpaid is ended by the server after 24 hours anyway. Asked again (a retry after a lost answer), ' +
            'one the customer cancelled answers the same. A transaction of another customer or brand: 404 ' +
            'TRANSACTION_NOT_FOUND.',
        }),
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
