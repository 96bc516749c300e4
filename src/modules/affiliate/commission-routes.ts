import { Elysia, t } from 'elysia'
import { doc, errors } from '../../kernel/http/openapi'
import { Id, Int, nameModels, OneOf, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import type { AffiliateCtx } from './context'
import { PLAN_TYPES, REVSHARE_BASES, TIER_METRICS } from './domain/plans'
import { CommissionRowModel, StatementModel } from './report-models'
import {
  approveStatement,
  closePeriod,
  listCommissions,
  listPeriods,
  listStatements,
  payStatement,
  statementWithRows,
} from './service/periods'
import {
  assignPlan,
  createPlan,
  listPlans,
  planHistory,
  previewPlan,
  readPlan,
  revisePlan,
  setRecruiter,
} from './service/plans'

const STAFF = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }
const TAG = 'Affiliate commissions'

const Minor = (description: string) => Int({ minimum: 0, maximum: 1e12, description })
const Bp = (description: string) => Int({ minimum: 0, maximum: 10_000, description })
// a key that is not a currency code is refused, not skipped: `{"usd": …}` would be a map no deposit matches.
// Strict for what is sent only: terms stored before (a lowercase key, an unknown field, never read) still
// answer as they are (`StoredPlanTerms`).
const strictness = (strict: boolean) => (strict ? { additionalProperties: false } : {})
const PerCurrency = (description: string, strict: boolean) =>
  t.Record(t.String({ pattern: '^[A-Z]{3}$' }), Minor('minor units'), { description, ...strictness(strict) })

const planTerms = (strict: boolean) =>
  t.Object(
    {
      type: OneOf(PLAN_TYPES, {
        description:
          'cpa: a fixed amount per qualified first deposit; qualified_cpa: with conditions; revshare: a share of the revenue from the referred customers; tiered_revshare: the share rises with the month; hybrid: CPA + RevShare',
      }),
      cpa: t.Optional(
        PerCurrency('CPA per currency of the first deposit; a currency not named earns no CPA', strict),
      ),
      qualify: t.Optional(
        t.Object(
          {
            min_first_deposit: t.Optional(
              PerCurrency(
                'the smallest first deposit per currency; a currency not named does not qualify',
                strict,
              ),
            ),
            min_centilots: t.Optional(
              Int({ minimum: 0, maximum: 1e9, description: 'hundredths of a lot closed within within_days' }),
            ),
            within_days: t.Optional(
              Int({ minimum: 1, maximum: 3650, description: 'days after the first deposit' }),
            ),
            kyc_approved: t.Optional(t.Boolean({ description: 'the customer must be KYC approved' })),
          },
          // a misspelt condition would otherwise be dropped and the CPA paid without it
          strictness(strict),
        ),
      ),
      revshare_bp: t.Optional(Bp('RevShare rate in basis points (2500 = 25 %); tiered: the base rate')),
      revshare_basis: t.Optional(
        OneOf(REVSHARE_BASES, {
          description:
            'trading_revenue (default): commissions + swaps the customers paid + spread markup - bonuses; net_deposits: deposits less refunds and chargebacks within the hold',
        }),
      ),
      tiers: t.Optional(
        t.Array(
          t.Object(
            {
              from: Int({ minimum: 0, maximum: 1e12, description: 'the metric from which' }),
              bp: Bp('rate'),
            },
            strictness(strict),
          ),
          {
            maxItems: 20,
            description: 'tiered: the month takes the highest tier whose `from` its metric reaches',
          },
        ),
      ),
      tier_metric: t.Optional(
        OneOf(TIER_METRICS, {
          description:
            "volume_lots: hundredths of a lot the month's customers closed; customers: first deposits",
        }),
      ),
      markup_per_lot: t.Optional(
        PerCurrency(
          'trading revenue: the spread markup the broker earns per lot, per account currency',
          strict,
        ),
      ),
      hold_days: Int({
        minimum: 0,
        maximum: 365,
        description:
          'a refund or chargeback within these days of its deposit reverses what the deposit earned',
      }),
      sub_affiliate_bp: Bp(
        'this share of what an affiliate recruited by this one earns in a period (one level)',
      ),
    },
    {
      // an unknown field (a typo of `qualify`) is refused naming it, never stored and ignored
      ...strictness(strict),
      description:
        "A plan's terms: integer minor units, rates in basis points, amounts per currency (no exchange rate is guessed).",
      example: {
        type: 'hybrid',
        cpa: { USD: 20000 },
        qualify: { min_first_deposit: { USD: 10000 }, kyc_approved: true },
        revshare_bp: 2500,
        revshare_basis: 'trading_revenue',
        markup_per_lot: { USD: 500 },
        hold_days: 30,
        sub_affiliate_bp: 1000,
      },
    },
  )
/** The terms a request sends: an unknown field or a key that is not a currency code is 400. */
const PlanTerms = planTerms(true)
/** The terms a plan answers with: as stored (terms stored before the strict schema still answer). */
const StoredPlanTerms = planTerms(false)
const Plan = t.Object({
  id: Int(),
  name: t.String(),
  version: Int({ description: 'the version in effect now' }),
  terms: StoredPlanTerms,
  versions: t.Array(
    t.Object({
      version: Int(),
      effective_time: Int({ description: 'epoch seconds' }),
      terms: StoredPlanTerms,
    }),
    { description: 'newest first: each fact is paid under the version in effect at its time' },
  ),
  created_time: Int({ description: 'epoch seconds' }),
})
const Assignment = t.Object({
  affiliate_id: Int({ description: '0: the brand default' }),
  plan_id: t.Union([Int(), t.Null()], { description: 'the plan in effect now; null: none' }),
  history: t.Array(
    t.Object({
      plan_id: t.Union([Int(), t.Null()]),
      effective_time: Int({ description: 'epoch seconds' }),
      assigned_by: Int({ description: 'staff id' }),
    }),
  ),
})
const PlanId = { id: Id('plan id') }
const AffiliateId = { id: Id('affiliate id') }
const StatementId = { id: Id('statement id') }
const Period = t.String({
  pattern: '^\\d{4}-(0[1-9]|1[0-2])$',
  description: 'YYYY-MM (UTC month)',
  example: '2026-10',
})
const Day = (description: string) =>
  t.String({
    pattern: '^\\d{4}-\\d{2}-\\d{2}$',
    description: `${description}, YYYY-MM-DD`,
    example: '2026-10-01',
  })

export const commissionStaffRoutes = (ctx: AffiliateCtx) =>
  new Elysia({ name: 'affiliate-commissions-staff', seed: ctx.instanceId })
    .use(security(ctx))
    .get('/manager/affiliate-plans', ({ brand }) => listPlans(ctx, brand.id), {
      auth: STAFF,
      response: {
        200: t.Object({
          default_plan_id: t.Union([Int(), t.Null()], { description: "the brand's default plan now" }),
          rows: t.Array(Plan),
        }),
        ...errors(),
      },
      detail: doc(TAG, "The brand's commission plans"),
    })
    .post(
      '/manager/affiliate-plans',
      ({ brand, session, body }) => createPlan(ctx, brand.id, session.staffId!, body),
      {
        auth: STAFF,
        body: t.Object(
          {
            name: t.String({ minLength: 1, maxLength: 64, description: 'unique on the brand' }),
            terms: PlanTerms,
          },
          { example: { name: 'Hybrid 200 + 25 %', terms: PlanTerms.example } },
        ),
        response: { 200: Plan, ...errors({ 409: ['PLAN_EXISTS'] }) },
        detail: doc(TAG, 'Create a commission plan', {
          description: 'Version 1 of its terms is in effect from now. Amounts in integer minor units.',
        }),
      },
    )
    .get('/manager/affiliate-plans/:id', ({ brand, params }) => readPlan(ctx, brand.id, params.id), {
      auth: STAFF,
      ...textInput({ params: PlanId }),
      response: { 200: Plan, ...errors({ 404: ['PLAN_NOT_FOUND'] }) },
      detail: doc(TAG, 'A commission plan with its versions'),
    })
    .put(
      '/manager/affiliate-plans/:id',
      ({ brand, session, params, body }) => revisePlan(ctx, brand.id, session.staffId!, params.id, body),
      {
        auth: STAFF,
        ...textInput({ params: PlanId }),
        body: t.Object({ terms: PlanTerms }, { example: { terms: PlanTerms.example } }),
        response: { 200: Plan, ...errors({ 404: ['PLAN_NOT_FOUND'] }) },
        detail: doc(TAG, "Revise a plan's terms", {
          description:
            'A new version, in effect from now: facts before now stay paid under the version of their time.',
        }),
      },
    )
    .post('/manager/affiliate-plans/preview', ({ brand, body }) => previewPlan(ctx, brand.id, body), {
      auth: STAFF,
      body: t.Object(
        {
          affiliate_id: Id('whose customers'),
          terms: PlanTerms,
          from: Day('first day'),
          to: Day('last day (at most 366 days after from)'),
        },
        { example: { affiliate_id: 1, terms: PlanTerms.example, from: '2026-10-01', to: '2026-10-31' } },
      ),
      response: {
        200: t.Object({
          affiliate_id: Int(),
          from: t.String(),
          to: t.String(),
          customers: Int({ description: 'referred customers considered' }),
          lines: t.Array(
            t.Object({
              currency: t.String(),
              kind: OneOf(['cpa', 'cpa_reversal', 'revshare', 'revshare_reversal', 'tier_adjustment'], {
                description: 'what earned it',
              }),
              amount_minor: Int(),
              rows: Int(),
            }),
          ),
          totals: t.Array(t.Object({ currency: t.String(), amount_minor: Int() })),
        }),
        ...errors({ 404: ['AFFILIATE_NOT_FOUND'] }),
      },
      detail: doc(TAG, 'Preview a plan on past data', {
        description:
          "What these terms would have paid the affiliate for its customers' facts in the range (with a tiered plan's monthly adjustment). Nothing is written.",
      }),
    })
    .get('/manager/affiliates/:id/plan', ({ brand, params }) => planHistory(ctx, brand.id, params.id), {
      auth: STAFF,
      ...textInput({ params: AffiliateId }),
      response: { 200: Assignment, ...errors({ 404: ['AFFILIATE_NOT_FOUND'] }) },
      detail: doc(TAG, "An affiliate's plan and its history"),
    })
    .put(
      '/manager/affiliates/:id/plan',
      ({ brand, session, params, body }) =>
        assignPlan(ctx, brand.id, session.staffId!, params.id, body.plan_id),
      {
        auth: STAFF,
        ...textInput({ params: AffiliateId }),
        body: t.Object(
          { plan_id: t.Union([Id('plan id'), t.Null()], { description: 'null: no plan from now' }) },
          { example: { plan_id: 1 } },
        ),
        response: { 200: Assignment, ...errors({ 404: ['AFFILIATE_NOT_FOUND', 'PLAN_NOT_FOUND'] }) },
        detail: doc(TAG, 'Assign a plan to an affiliate', {
          description: "In effect from now on; until an affiliate has one, the brand's default plan pays it.",
        }),
      },
    )
    .put(
      '/manager/affiliate-default-plan',
      ({ brand, session, body }) => assignPlan(ctx, brand.id, session.staffId!, 0, body.plan_id),
      {
        auth: STAFF,
        body: t.Object(
          { plan_id: t.Union([Id('plan id'), t.Null()], { description: 'null: no default' }) },
          { example: { plan_id: 1 } },
        ),
        response: { 200: Assignment, ...errors({ 404: ['PLAN_NOT_FOUND'] }) },
        detail: doc(TAG, "Set the brand's default plan", {
          description: 'It pays affiliates without a plan of their own, from now on.',
        }),
      },
    )
    .put(
      '/manager/affiliates/:id/recruiter',
      ({ brand, params, body }) => setRecruiter(ctx, brand.id, params.id, body.recruiter_id),
      {
        auth: STAFF,
        ...textInput({ params: AffiliateId }),
        body: t.Object(
          {
            recruiter_id: t.Union([Id('the recruiting affiliate'), t.Null()], { description: 'null: none' }),
          },
          { example: { recruiter_id: null } },
        ),
        response: {
          200: t.Object({ affiliate_id: Int(), recruiter_id: t.Union([Int(), t.Null()]) }),
          ...errors({ 404: ['AFFILIATE_NOT_FOUND'] }),
        },
        detail: doc(TAG, "Set an affiliate's recruiter (sub-affiliate)", {
          description:
            "The recruiter earns its plan's sub_affiliate_bp of what this affiliate earns in each period closed from now (one level). 400 INVALID_DATA when the recruiter is this affiliate, or is recruited by it, directly or through others.",
        }),
      },
    )
    .get('/manager/affiliate-periods', ({ brand }) => listPeriods(ctx, brand.id), {
      auth: STAFF,
      response: {
        200: t.Object({
          closed_through: t.Union([t.String(), t.Null()], { description: 'the last closed period' }),
          rows: t.Array(
            t.Object({
              period: t.String(),
              closed_time: Int(),
              closed_by: Int({ description: '0: the job' }),
            }),
          ),
        }),
        ...errors(),
      },
      detail: doc(TAG, "The brand's closed periods"),
    })
    .post(
      '/manager/affiliate-periods/:period/close',
      ({ brand, session, params }) => closePeriod(ctx, brand.id, session.staffId!, params.period),
      {
        auth: STAFF,
        ...textInput({ params: { period: Period } }),
        response: {
          200: t.Object({
            period: t.String(),
            closed_time: Int(),
            statements: Int({ description: 'statements made' }),
            rows_added: Int({ description: 'tier adjustments and sub-affiliate overrides written' }),
          }),
          ...errors({ 409: ['PERIOD_NOT_ENDED', 'PERIOD_CLOSED'] }),
        },
        detail: doc(TAG, 'Close a period', {
          description:
            'Once a month has ended (the job affiliate.period-close does it after the grace days): rows of earlier open months join it, tier adjustments and overrides are written, each affiliate with rows gets a pending statement. A closed period never changes; later corrections go to the next one.',
        }),
      },
    )
    .get('/manager/affiliate-statements', ({ brand, query }) => listStatements(ctx, brand.id, query), {
      auth: STAFF,
      ...textInput({
        query: {
          affiliate_id: t.Optional(Id('affiliate id')),
          period: t.Optional(Period),
          status: t.Optional(OneOf(['pending', 'approved', 'paid'], { description: 'filter' })),
          before: t.Optional(Id('next_before of the previous page')),
          limit: t.Optional(Int({ minimum: 1, maximum: 500, description: 'rows per page (default 500)' })),
        },
      }),
      response: {
        200: t.Object({
          rows: t.Array(StatementModel),
          next_before: Int({ description: 'the next page: before=this; 0 for the last page' }),
        }),
        ...errors(),
      },
      detail: doc(TAG, 'Statements, newest first'),
    })
    .get(
      '/manager/affiliate-statements/:id',
      ({ brand, params }) => statementWithRows(ctx, brand.id, params.id),
      {
        auth: STAFF,
        ...textInput({ params: StatementId }),
        response: {
          200: t.Object({ statement: StatementModel, rows: t.Array(CommissionRowModel) }),
          ...errors({ 404: ['STATEMENT_NOT_FOUND'] }),
        },
        detail: doc(TAG, 'A statement with the rows it totals'),
      },
    )
    .post(
      '/manager/affiliate-statements/:id/approve',
      ({ brand, session, params }) => approveStatement(ctx, brand.id, session.staffId!, params.id),
      {
        auth: STAFF,
        ...textInput({ params: StatementId }),
        response: {
          200: StatementModel,
          ...errors({ 404: ['STATEMENT_NOT_FOUND'], 409: ['STATEMENT_STATE'] }),
        },
        detail: doc(TAG, 'Approve a pending statement'),
      },
    )
    .post(
      '/manager/affiliate-statements/:id/pay',
      ({ brand, session, params, body }) =>
        payStatement(ctx, brand.id, session.staffId!, params.id, body.reference),
      {
        auth: STAFF,
        ...textInput({ params: StatementId }),
        body: t.Object(
          { reference: t.String({ minLength: 1, maxLength: 128, description: 'the payment reference' }) },
          { example: { reference: 'WIRE-2026-11-0042' } },
        ),
        response: {
          200: StatementModel,
          ...errors({ 404: ['STATEMENT_NOT_FOUND'], 409: ['STATEMENT_STATE', 'STATEMENT_NEGATIVE'] }),
        },
        detail: doc(TAG, 'Mark an approved statement paid', {
          description:
            'A statement whose net is negative in a currency (late chargebacks took back more than the period earned) is owed by the affiliate, not paid: 409 STATEMENT_NEGATIVE.',
        }),
      },
    )
    .get('/manager/affiliate-commissions', ({ brand, query }) => listCommissions(ctx, brand.id, query), {
      auth: STAFF,
      ...textInput({
        query: {
          affiliate_id: t.Optional(Id('affiliate id')),
          customer_id: t.Optional(Id('customer id')),
          period: t.Optional(Period),
          before: t.Optional(Id('next_before of the previous page')),
          limit: t.Optional(Int({ minimum: 1, maximum: 500, description: 'rows per page (default 100)' })),
        },
      }),
      response: { 200: t.Object({ rows: t.Array(CommissionRowModel), next_before: Int() }), ...errors() },
      detail: doc(TAG, 'Commission rows, newest first'),
    })

nameModels({
  CommissionPlan: Plan,
  CommissionPlanTerms: PlanTerms,
  CommissionStoredPlanTerms: StoredPlanTerms,
})
