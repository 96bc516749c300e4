import { Elysia, t } from 'elysia'
import { doc, errors } from '../../kernel/http/openapi'
import { Id, Int, Login, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import { mergeResponses } from '../../kernel/refusal'
import { buyAnswer } from './buy-answer'
import type { PropCtx } from './context'
import {
  challengeBreaches,
  challengeDetail,
  challengeMetrics,
  listChallenges,
  listPurchases,
  payerAccounts,
  preview,
} from './customer'
import { PROP } from './errors'
import { listPayouts, requestPayout } from './payouts'
import {
  createProgram,
  listPrograms,
  programNotFound,
  programRow,
  programView,
  setProgramActive,
  updateProgram,
} from './programs'
import {
  Account,
  Breach,
  Challenge,
  Day,
  LatestMetric,
  Payout,
  Phase,
  Program,
  ProgramBody,
  Purchase,
} from './route-schemas'

const CUSTOMER = { roles: ['SESSION_CUSTOMER'] as const }
const STAFF = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }
const ProgramId = { id: Id('program id') }
const ChallengeId = { id: Id('challenge id') }
const NOT_FOUND = errors(PROP.responses('CHALLENGE_NOT_FOUND'))
// the refusals each route documents come from prop's table (errors.ts) and the kernel's
const BUY_CODES = mergeResponses(
  PROP.responses(
    'PROGRAM_DISABLED',
    'PAYER_ACCOUNT_NOT_REAL',
    'CURRENCY_CONVERSION_REQUIRED',
    'NOT_ENOUGH_FUNDS',
    'INVALID_DEMO_GROUP',
    'DEMO_GROUP_REQUIRED',
    'PURCHASE_LIMIT_PER_CUSTOMER',
    'PURCHASE_LIMIT_PER_PERIOD',
    'PURCHASE_LIMIT_ACTIVE',
    'PAYMENT_FAILED',
    'INVALID_PAYER_ACCOUNT',
    'PROGRAM_NOT_FOUND',
    'ACCOUNT_CREATION_FAILED',
    'INITIAL_BALANCE_FAILED',
    'CHALLENGE_CREATION_FAILED',
  ),
  { 409: ['IDEMPOTENCY_KEY_REUSED'], 503: ['PRICE_STALE'] },
)

/** Customer prop routes (spec 4.13–4.15). */
export const propRoutes = (ctx: PropCtx) =>
  new Elysia({ name: 'prop-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .get('/prop/programs', ({ brand }) => listPrograms(ctx, brand.id, true), {
      auth: CUSTOMER,
      response: { 200: t.Object({ rows: t.Array(Program) }) },
      detail: doc('Prop', 'Programs on offer', {
        description: 'Active programs of the brand, cheapest first.',
      }),
    })
    .get(
      '/prop/programs/:id',
      async ({ brand, params }) => {
        const p = await programRow(ctx, brand.id, params.id)
        if (p.active !== 1) throw programNotFound(params.id)
        return programView(p)
      },
      {
        auth: CUSTOMER,
        ...textInput({ params: ProgramId }),
        response: { 200: Program, ...errors(PROP.responses('PROGRAM_NOT_FOUND')) },
        detail: doc('Prop', 'One program with its steps and rules'),
      },
    )
    .get(
      '/prop/programs/:id/payers',
      ({ brand, session, params }) => payerAccounts(ctx, brand, session, params.id),
      {
        auth: CUSTOMER,
        ...textInput({ params: ProgramId }),
        response: {
          200: t.Object({
            program_id: Int(),
            price: t.Number(),
            currency: t.String(),
            rows: t.Array(
              t.Object(
                {
                  login: Int(),
                  group: t.String(),
                  currency: t.String(),
                  balance: t.Number(),
                  can_pay: t.Boolean(),
                  reason: t.String({
                    description: 'the purchase code it would answer; empty when it can pay',
                  }),
                  reason_message: t.String({ description: 'the message the purchase would answer' }),
                },
                { title: 'PropPayer' },
              ),
            ),
          }),
          ...errors(PROP.responses('PROGRAM_NOT_FOUND')),
        },
        detail: doc('Prop', 'Payer accounts for a program', {
          description: "The customer's REAL accounts, each with whether it can pay the program now.",
        }),
      },
    )
    .post(
      '/prop/challenge/buy/preview',
      ({ brand, session, body }) => preview(ctx, brand, session, body.program_id, body.payer_login),
      {
        auth: CUSTOMER,
        body: t.Object(
          { program_id: Id('program id'), payer_login: Login },
          { example: { program_id: 2, payer_login: 100001 } },
        ),
        response: {
          200: t.Object(
            {
              program: Program,
              payer_login: Int(),
              can_buy: t.Boolean(),
              reason: t.String({ description: 'the code the purchase would answer; empty when it can go' }),
              reason_message: t.String({ description: 'the message the purchase would answer' }),
              price: t.Number(),
              currency: t.String(),
              payer_balance_after: t.Union([t.Number(), t.Null()]),
              first_account: t.Union([
                t.Object(
                  { group: t.String(), initial_balance: t.Number(), currency: t.String() },
                  { title: 'PropFirstAccount' },
                ),
                t.Null(),
              ]),
              effects: t.Array(t.String(), {
                description: 'what the purchase will do, in order; empty when it would be refused',
              }),
            },
            { title: 'PropPurchasePreview' },
          ),
          ...errors(PROP.responses('PROGRAM_NOT_FOUND')),
        },
        detail: doc('Prop', 'Purchase preview', { description: 'Changes nothing.' }),
      },
    )
    .post('/prop/challenge/buy', async ({ brand, session, body }) => buyAnswer(ctx, brand, session, body), {
      auth: CUSTOMER,
      body: t.Object(
        {
          program_id: Id('program id'),
          payer_login: Login,
          idempotency_key: t.Optional(
            t.String({
              minLength: 8,
              maxLength: 64,
              pattern: '^[A-Za-z0-9_.:-]+$',
              description: 'repeating it returns the first purchase (idempotent = true)',
            }),
          ),
        },
        { example: { program_id: 2, payer_login: 100001, idempotency_key: 'buy-2026-11-23-0001' } },
      ),
      response: {
        200: t.Object({
          accepted: t.Boolean(),
          idempotent: t.Boolean(),
          purchase: Purchase,
          challenge: t.Union([Challenge, t.Null()]),
          challenges: t.Array(Challenge, { description: 'the purchase’s challenges (a repeat)' }),
          account: t.Union([Account, t.Null()]),
          temporary_password: t.Optional(t.String({ description: 'shown once, in the first answer only' })),
          must_change_password: t.Boolean(),
          payment_order: t.Optional(Int({ description: 'fee ledger row; omitted for a free program' })),
          initial_balance_order: t.Union([Int(), t.Null()]),
        }),
        ...errors(BUY_CODES),
      },
      detail: doc('Prop', 'Buy a challenge', {
        description:
          'Validations 1–7 of spec 4.14 in order. Then: purchase record; fee withdrawal (OP_BALANCE_OUT, ' +
          'TR_REASON_PROP, PROP_CHALLENGE_PURCHASE); a DEMO account in the first step group; its initial balance ' +
          '(PROP_CHALLENGE_INITIAL_BALANCE); the challenge. A failed step answers its 4.19 code after the ' +
          'rollbacks 4.19 names; the purchase keeps failure_reason, can_retry and can_cancel. The fee may not take ' +
          "the payer's free margin less its credit below zero; with positions open it is priced at current quotes " +
          'only: 503 PRICE_STALE before anything is written while this instance has none (retry).',
      }),
    })
    .get('/prop/purchases', ({ brand, session }) => listPurchases(ctx, brand.id, session.customerId!), {
      auth: CUSTOMER,
      response: { 200: t.Object({ rows: t.Array(Purchase) }) },
      detail: doc('Prop', "The customer's purchases, newest first"),
    })
    .get('/prop/challenges', ({ brand, session }) => listChallenges(ctx, brand.id, session.customerId!), {
      auth: CUSTOMER,
      response: { 200: t.Object({ rows: t.Array(Challenge) }) },
      detail: doc('Prop', "The customer's challenges, newest first"),
    })
    .get(
      '/prop/challenges/:id',
      ({ brand, session, params }) => challengeDetail(ctx, brand.id, session.customerId!, params.id),
      {
        auth: CUSTOMER,
        ...textInput({ params: ChallengeId }),
        response: {
          200: t.Object({
            challenge: Challenge,
            purchase: t.Union([Purchase, t.Null()]),
            program: Program,
            phases: t.Array(Phase),
            current_phase: t.Union([Phase, t.Null()]),
            latest_metric: t.Union([LatestMetric, t.Null()], {
              description: "the current phase's latest_metric",
            }),
            latest_breach: t.Union([Breach, t.Null()]),
          }),
          ...NOT_FOUND,
        },
        detail: doc('Prop', 'One challenge with every phase, its metric and progress, and the latest breach'),
      },
    )
    .get(
      '/prop/challenges/:id/metrics',
      ({ brand, session, params }) => challengeMetrics(ctx, brand.id, session.customerId!, params.id),
      {
        auth: CUSTOMER,
        ...textInput({ params: ChallengeId }),
        response: { 200: t.Object({ challenge_id: Int(), rows: t.Array(Day) }), ...NOT_FOUND },
        detail: doc('Prop', 'Daily metrics of every phase, newest day first'),
      },
    )
    .get(
      '/prop/challenges/:id/breaches',
      ({ brand, session, params }) => challengeBreaches(ctx, brand.id, session.customerId!, params.id),
      {
        auth: CUSTOMER,
        ...textInput({ params: ChallengeId }),
        response: { 200: t.Object({ challenge_id: Int(), rows: t.Array(Breach) }), ...NOT_FOUND },
        detail: doc('Prop', 'Breaches of the challenge (at most one per phase)'),
      },
    )
    .post(
      '/prop/challenges/:id/payout',
      ({ brand, session, params }) => requestPayout(ctx, brand.id, session.customerId!, params.id),
      {
        auth: CUSTOMER,
        ...textInput({ params: ChallengeId }),
        body: t.Object(
          { comment: t.Optional(t.String({ maxLength: 200, description: 'kept in the request log only' })) },
          { example: {} },
        ),
        response: {
          200: t.Object({ payout: Payout }),
          ...errors(
            mergeResponses(
              PROP.responses('CHALLENGE_NOT_FOUND', 'NOT_FUNDED', 'NO_PROFIT', 'PAYOUT_IN_PROGRESS'),
              {
                400: ['NOT_ENOUGH_FREE_MARGIN', 'INVALID_MARGIN_LEVEL'],
                503: ['PRICE_STALE'],
              },
            ),
          ),
        },
        detail: doc('Prop', 'Take the profit of the funded phase', {
          optionalBody: true,
          description:
            "The balance over the funded account's initial balance leaves it (PROP_PAYOUT) and the program's " +
            "profit_split of it is paid to the payer account (PROP_PAYOUT_SPLIT), both TR_REASON_PROP. Open positions at a loss count: the profit is the balance or the equity (less credit) over the initial balance, whichever is lower (409 NO_PROFIT when none); 400 NOT_ENOUGH_FREE_MARGIN when taking it would leave the margin of open positions uncovered (close some first); 503 PRICE_STALE while this instance has no current price for them (nothing taken, retry). 409 NOT_FUNDED unless the phase is an active funded one, its challenge active on it and its account not read-only, judged again in the payout's transaction: a breach that commits while the payout is asked ends it, and nothing is paid.",
        }),
      },
    )
    .get(
      '/prop/challenges/:id/payouts',
      ({ brand, session, params }) => listPayouts(ctx, brand.id, session.customerId!, params.id),
      {
        auth: CUSTOMER,
        ...textInput({ params: ChallengeId }),
        response: { 200: t.Object({ challenge_id: Int(), rows: t.Array(Payout) }), ...NOT_FOUND },
        detail: doc('Prop', 'Payouts of the challenge, newest first'),
      },
    )

/** Staff routes: programs. */
export const propManagerRoutes = (ctx: PropCtx) =>
  new Elysia({ name: 'prop-manager-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .get('/manager/prop/programs', ({ brand }) => listPrograms(ctx, brand.id, false), {
      auth: STAFF,
      response: { 200: t.Object({ rows: t.Array(Program) }) },
      detail: doc('Prop back office', 'Every program of the brand'),
    })
    .post('/manager/prop/programs', ({ brand, body }) => createProgram(ctx, brand.id, body), {
      auth: STAFF,
      body: ProgramBody,
      response: { 200: Program, ...errors(PROP.responses('PROGRAM_NAME_TAKEN')) },
      detail: doc('Prop back office', 'Create a program', {
        description:
          'Refused (400 naming the field) unless: the zone is an IANA zone; evaluation steps use DEMO groups of ' +
          'the program currency with a profit target; at most one funded step, the last, in a REAL group, with ' +
          'its profit_split.',
      }),
    })
    .put(
      '/manager/prop/programs/:id',
      ({ brand, params, body }) => updateProgram(ctx, brand.id, params.id, body),
      {
        auth: STAFF,
        ...textInput({ params: ProgramId }),
        // its own example: the create example's name is taken once that example has run
        body: { ...ProgramBody, example: { ...ProgramBody.example, name: 'Classic 10k, second edition' } },
        response: { 200: Program, ...errors(PROP.responses('PROGRAM_NOT_FOUND', 'PROGRAM_NAME_TAKEN')) },
        detail: doc('Prop back office', 'Replace a program (a new version; running challenges keep theirs)'),
      },
    )
    .put(
      '/manager/prop/programs/:id/active',
      ({ brand, params, body }) => setProgramActive(ctx, brand.id, params.id, body.active),
      {
        auth: STAFF,
        ...textInput({ params: ProgramId }),
        body: t.Object(
          { active: t.Boolean({ description: 'offered to customers' }) },
          { example: { active: true } },
        ),
        response: { 200: Program, ...errors(PROP.responses('PROGRAM_NOT_FOUND')) },
        detail: doc('Prop back office', 'Activate or deactivate a program'),
      },
    )
