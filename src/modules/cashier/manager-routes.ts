import { Elysia, t } from 'elysia'
import { doc, errors } from '../../kernel/http/openapi'
import { Id, Int, Login, OneOf, textInput } from '../../kernel/http/schemas'
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
  Amount,
  CONFLICT,
  FINANCE,
  MethodCode,
  Note,
  Nullable,
  Reason,
  StaffNote,
  StaffTransaction,
  StatusFilter,
  TxId,
} from './route-schemas'

/** A payment method as staff set it (PUT /manager/cashier/methods/{method}). */
const methodFields = {
  provider: t.String({
    pattern: '^[a-z][a-z0-9_]{0,31}$',
    description:
      'a loaded provider: wire; the simulated sandbox and checkout outside production (or with CASHIER_SANDBOX=1)',
  }),
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
    t.Number({
      minimum: 0,
      maximum: 50,
      description: 'percent of the amount, to a basis point (at most 2 decimals; more is 400 INVALID_DATA)',
    }),
  ),
  fee_fixed_minor: t.Optional(
    Int({ minimum: 0, maximum: 1_000_000, description: 'fixed fee in minor units' }),
  ),
  enabled: t.Boolean({ description: 'false hides it unless a customer override shows it' }),
}

/** The method as stored: what was set, with its code, the fee percent as the basis points kept and the fixed fee. */
const SavedMethod = t.Object(
  {
    code: t.String({ description: 'the method code of the path' }),
    ...methodFields,
    fee_percent: t.Number({
      minimum: 0,
      maximum: 50,
      description: 'percent of the amount, as the basis points kept',
    }),
    fee_fixed_minor: Int({
      minimum: 0,
      maximum: 1_000_000,
      description: 'fixed fee in minor units (0: none)',
    }),
  },
  { title: 'CashierMethodSetting' },
)

/** Back-office cashier routes. */
export const cashierManagerRoutes = (ctx: CashierCtx) =>
  new Elysia({ name: 'cashier-manager-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .get(
      '/manager/cashier/transactions',
      ({ brand, query }) => searchTransactions({ ctx, brandId: brand.id, input: query as never }),
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
      ({ brand, params }) => staffTransaction({ ctx, brandId: brand.id, id: params.id }),
      {
        auth: FINANCE,
        ...textInput({ params: TxId }),
        response: { 200: StaffTransaction, ...errors({ 404: ['TRANSACTION_NOT_FOUND'] }) },
        detail: doc('Cashier back office', 'One transaction with its history'),
      },
    )
    .post(
      '/manager/cashier/transactions/:id/resolve',
      ({ brand, session, params, body }) =>
        resolveReview({ ctx, brandId: brand.id, staffId: session.staffId!, id: params.id, input: body }),
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
        detail: doc('Cashier back office', 'Resolve a deposit in manual review', {
          description:
            "credit credits the amount the provider or the bank confirmed (provider_amount), with the fee in proportion, and the transaction then shows that amount; 409 TRANSACTION_STATE_CONFLICT when it was confirmed in another currency (close it as failed and book the money by hand), or the transaction is not in manual review. The note is added to staff_note (a line each): what the provider's flags noted before stays.",
        }),
      },
    )
    .post(
      '/manager/cashier/transactions/:id/retry-credit',
      ({ brand, session, params, body }) =>
        retryCredit({ ctx, brandId: brand.id, staffId: session.staffId!, id: params.id, input: body }),
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
        confirmWire({ ctx, brandId: brand.id, staffId: session.staffId!, id: params.id, input: body }),
      {
        auth: FINANCE,
        ...textInput({ params: TxId }),
        body: t.Object({ amount: Amount }, { example: { amount: 500 } }),
        response: { 200: StaffTransaction, ...errors(CONFLICT) },
        detail: doc('Cashier back office', 'Confirm a received bank wire', {
          description:
            'The amount received equal to the request credits it; any other amount goes to manual_review, and so ' +
            'does a wire for a deposit the customer cancelled (answered 200 with the deposit in review).',
        }),
      },
    )
    .post(
      '/manager/cashier/transactions/:id/refund',
      ({ brand, session, params, body }) =>
        refund({ ctx, brandId: brand.id, staffId: session.staffId!, id: params.id, input: body }),
      {
        auth: FINANCE,
        ...textInput({ params: TxId }),
        body: t.Object({ note: StaffNote }, { example: { note: 'customer asked; card refund' } }),
        response: {
          200: StaffTransaction,
          ...errors({
            ...CONFLICT,
            400: ['NOT_ENOUGH_FUNDS', 'NOT_ENOUGH_FREE_MARGIN'],
            503: ['PRICE_STALE'],
          }),
        },
        detail: doc('Cashier back office', 'Refund a credited deposit (the balance must cover it)', {
          description:
            'Money leaving as a withdrawal does: 400 NOT_ENOUGH_FUNDS when the balance does not cover it, 400 ' +
            'NOT_ENOUGH_FREE_MARGIN when it would take the free margin less credit below zero (open positions stay ' +
            'covered: close some first), 503 PRICE_STALE with positions open while this instance has no current ' +
            "price. A provider's refund or chargeback (webhooks) is recorded whatever the balance, flagged with the " +
            'shortfall: what the balance, or with positions open the equity less credit, is below zero.',
        }),
      },
    )
    .post(
      '/manager/cashier/transactions/:id/approve',
      ({ brand, session, params, body }) =>
        approveWithdrawal({ ctx, brandId: brand.id, staffId: session.staffId!, id: params.id, input: body }),
      {
        auth: FINANCE,
        ...textInput({ params: TxId }),
        body: t.Object({ note: t.Optional(StaffNote) }, { example: { note: 'checked' } }),
        response: {
          200: StaffTransaction,
          ...errors({
            ...CONFLICT,
            409: [...CONFLICT[409], 'ACCOUNT_DISABLED', 'WITHDRAWAL_NOT_ALLOWED'],
            403: ['KYC_REQUIRED'],
            503: ['PROVIDER_NOT_CONFIGURED'],
          }),
        },
        detail: doc('Cashier back office', 'Approve a withdrawal and send its payout', {
          optionalBody: true,
          description:
            "The customer's KYC is checked again: 403 KYC_REQUIRED when it no longer allows withdrawals (a step " +
            'rejected or expired since the request); 409 ACCOUNT_DISABLED when staff disabled the account since, ' +
            "409 WITHDRAWAL_NOT_ALLOWED when the customer's withdrawals were closed since, 409 " +
            'TRANSACTION_STATE_CONFLICT when the account owes money, 503 PROVIDER_NOT_CONFIGURED when its payout ' +
            'provider is no longer configured (nothing is sent); the withdrawal stays pending (reject it, or ' +
            "approve it later). The provider's refusal of the payout answers it payout_failed (the hold returns; " +
            'the simulated providers refuse a payout whose minor units, net of the fee, end in 1313 (13.13 USD), their test refusal); ' +
            'sending it with no answer (a timeout: it may have been sent) answers it manual_review, flagged, with ' +
            'the hold kept: check with the provider, then mark it paid or its payout failed. While the payout is ' +
            'being sent, mark-paid and payout-failed answer 409 PAYOUT_BEING_SENT. The call to the provider is ' +
            'aborted after 4.5 minutes (its send lease of 5 less 30 s) and answered manual_review, flagged, as a send ' +
            'with no answer; a send this instance stopped answering (it died) is moved there after 5 minutes by the ' +
            "reconcile job, and the provider's late answer is added to the staff note. The note is added to staff_note " +
            '(a line each).',
        }),
      },
    )
    .post(
      '/manager/cashier/transactions/:id/reject',
      ({ brand, session, params, body }) =>
        rejectWithdrawal({ ctx, brandId: brand.id, staffId: session.staffId!, id: params.id, input: body }),
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
        markPaid({ ctx, brandId: brand.id, staffId: session.staffId!, id: params.id, input: body }),
      {
        auth: FINANCE,
        ...textInput({ params: TxId }),
        body: t.Object({ note: t.Optional(StaffNote) }, { example: { note: 'checked' } }),
        response: {
          200: StaffTransaction,
          ...errors({ ...CONFLICT, 409: [...CONFLICT[409], 'PAYOUT_BEING_SENT'] }),
        },
        detail: doc('Cashier back office', 'Mark an approved withdrawal paid', {
          optionalBody: true,
          description:
            'From payout_in_progress, or manual_review (a payout sent with no answer). 409 PAYOUT_BEING_SENT while ' +
            "its approval still waits on the provider's answer to the payout (it may yet refuse it): try again once " +
            'it answered; a send that never answers is moved to manual_review after 5 minutes. 409 ' +
            "TRANSACTION_STATE_CONFLICT, naming its state, when it changed while this was asked (the provider's " +
            'answer written meanwhile): nothing is recorded.',
        }),
      },
    )
    .post(
      '/manager/cashier/transactions/:id/payout-failed',
      ({ brand, session, params, body }) =>
        payoutFailed({ ctx, brandId: brand.id, staffId: session.staffId!, id: params.id, input: body }),
      {
        auth: FINANCE,
        ...textInput({ params: TxId }),
        body: t.Object({ reason: Reason }, { example: { reason: 'The bank returned the transfer.' } }),
        response: {
          200: StaffTransaction,
          ...errors({ ...CONFLICT, 409: [...CONFLICT[409], 'PAYOUT_BEING_SENT'] }),
        },
        detail: doc('Cashier back office', 'Record a failed payout (the held funds return)', {
          description:
            'From payout_in_progress, or manual_review (a payout sent with no answer). 409 PAYOUT_BEING_SENT while ' +
            "its approval still waits on the provider's answer to the payout (the provider may be sending it): try " +
            'again once it answered; a send that never answers is moved to manual_review after 5 minutes. 409 ' +
            "TRANSACTION_STATE_CONFLICT, naming its state, when it changed while this was asked (the provider's " +
            'acceptance written meanwhile): nothing is recorded, the hold is kept.',
        }),
      },
    )
    .put(
      '/manager/cashier/customers/:customer/methods/:method',
      ({ brand, params, body }) =>
        setOverride({
          ctx,
          brandId: brand.id,
          customerId: params.customer,
          method: params.method,
          input: body,
        }),
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
      ({ brand, params, body }) => saveMethod({ ctx, brandId: brand.id, code: params.method, input: body }),
      {
        auth: FINANCE,
        params: t.Object({ method: MethodCode }),
        body: t.Object(methodFields, {
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
        }),
        response: { 200: SavedMethod },
        detail: doc('Cashier back office', "Create or replace a brand's payment method", {
          description: 'Answers the method as stored (fee_percent as the basis points kept).',
        }),
      },
    )
