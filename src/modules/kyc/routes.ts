import { Elysia, t } from 'elysia'
import { doc, errors } from '../../kernel/http/openapi'
import { Id, Int, nameModels, OneOf, textInput } from '../../kernel/http/schemas'
import { security } from '../../kernel/http/security'
import { DOWNLOAD_MEDIA } from '../uploads'
import type { KycCtx } from './context'
import { DEFAULT_SETTINGS } from './domain/settings'
import { DOCUMENT_STATUSES, PROFILE_STATUSES, RISK_LEVELS, STEP_STATUSES } from './domain/status'
import { Answers, AnswersInput, Settings, SettingsInput } from './route-schemas'
import {
  attachDocument,
  customerDocuments,
  customerProfile,
  customerStep,
  decideDocument,
  decideStep,
  documentFile,
  listProfiles,
  readSettings,
  saveSettings,
  setRisk,
  staffProfile,
  submitStep,
} from './service'

const CUSTOMER = { roles: ['SESSION_CUSTOMER'] as const }
const COMPLIANCE = { roles: ['SESSION_MANAGER', 'SESSION_ADMIN'] as const }
const Code = t.String({
  pattern: '^[a-z][a-z_]{0,31}$',
  description: 'step code, e.g. identity',
  example: 'identity',
})
const Reason = t.String({ minLength: 1, maxLength: 500, description: 'shown to the customer' })
const Comment = t.String({ maxLength: 2000, description: 'staff only, never shown to the customer' })
const Nullable = <T extends Parameters<typeof t.Union>[0][number]>(s: T) => t.Union([s, t.Null()])

const Document = t.Object(
  {
    id: Int(),
    step: t.String(),
    file_id: t.String({ description: 'the upload (POST /upload file_id)' }),
    document_type: t.String(),
    status: t.UnionEnum([...DOCUMENT_STATUSES]),
    valid_until: Nullable(t.String({ description: 'last valid day, YYYY-MM-DD' })),
    rejection_reason: t.String({ description: 'why it was rejected, for the customer' }),
    staff_comment: t.Optional(t.String({ description: 'staff routes only' })),
    reviewed_by: t.Optional(Nullable(Int())),
    reviewed_time: Nullable(Int()),
    created_time: Int(),
  },
  { title: 'KycDocument' },
)
const Question = t.Object({
  key: t.String(),
  label: t.String(),
  type: t.UnionEnum(['text', 'date', 'choice', 'number', 'boolean', 'country']),
  required: t.Boolean(),
  options: t.Optional(t.Array(t.String())),
  min: t.Optional(t.Number()),
  max: t.Optional(t.Number()),
  max_length: t.Optional(Int()),
  min_age: t.Optional(Int()),
  max_age: t.Optional(Int({ description: 'date of birth: the oldest age accepted (default 120)' })),
  must_be_true: t.Optional(t.Boolean()),
})
const Step = t.Object(
  {
    id: t.String({ description: 'step code' }),
    title: t.String(),
    required: t.Boolean(),
    status: t.UnionEnum([...STEP_STATUSES]),
    questions: t.Array(Question),
    documents_required: Nullable(
      t.Object({ types: t.Array(t.String()), min: Int(), valid_until_required: t.Boolean() }),
    ),
    answers: Nullable(Answers),
    rejection_reason: t.String(),
    staff_comment: t.Optional(t.String()),
    reviewed_by: t.Optional(Nullable(Int())),
    submitted_time: Nullable(Int()),
    reviewed_time: Nullable(Int()),
    documents: t.Array(Document),
  },
  { title: 'KycStep' },
)
const Gates = t.Object(
  {
    deposit_limit: Nullable(
      t.Record(t.String(), t.Number(), {
        description:
          'total deposits allowed per currency before approval (a currency not listed: 0); null: no KYC limit. ' +
          'A rejected profile (final) has 0 in every currency: no new money from a customer the broker turned down',
      }),
    ),
    withdrawal_allowed: t.Boolean({
      description:
        'once the withdrawal_after steps are approved, also for a rejected profile (its money goes out)',
    }),
    withdrawal_requires: t.Array(t.String(), { description: 'steps still to be approved for withdrawals' }),
    deposit_unlimited_requires: t.Array(t.String()),
  },
  {
    description:
      'What KYC allows the customer now. Deposits: up to deposit_limit until the deposit_unlimited_after steps ' +
      'are approved; a rejected profile deposits nothing (the cashier answers 403 KYC_LIMIT_EXCEEDED). ' +
      'Withdrawals: once the withdrawal_after steps are approved, whatever the profile status.',
  },
)
const Profile = t.Object(
  {
    customer_id: Int(),
    status: t.UnionEnum([...PROFILE_STATUSES]),
    risk_level: t.Optional(t.UnionEnum([...RISK_LEVELS], { description: 'staff only' })),
    risk_comment: t.Optional(t.String({ description: 'staff only' })),
    submitted_time: Nullable(Int()),
    reviewed_time: Nullable(Int()),
    updated_time: Int(),
    steps: t.Array(Step),
    gates: Gates,
  },
  { title: 'KycProfile' },
)
const STATES =
  'Profile: not_started, in_progress, submitted (every required step submitted), in_review, approved (every ' +
  'required step approved), resubmission_requested, rejected (final), expired (a document ran out). Steps: the ' +
  'same; documents: pending, approved, rejected, expired.'
const StepParam = { id: Code }
const CustomerParam = { customer: Id('customer id') }

/** Customer KYC (spec 4.10) and the staff review (back office). */
export const kycRoutes = (ctx: KycCtx) =>
  new Elysia({ name: 'kyc-routes', seed: ctx.instanceId })
    .use(security(ctx))
    .get(
      '/customer/kyc',
      ({ brand, session }) => customerProfile({ ctx, brandId: brand.id, customerId: session.customerId! }),
      {
        auth: CUSTOMER,
        response: { 200: Profile },
        detail: doc('KYC', 'Current KYC profile, steps and documents', {
          description: `Created on first read with the brand's steps. ${STATES} gates: what the customer may do now.`,
        }),
      },
    )
    .get(
      '/customer/kyc/steps/:id',
      ({ brand, session, params }) =>
        customerStep({ ctx, brandId: brand.id, customerId: session.customerId!, code: params.id }),
      {
        auth: CUSTOMER,
        params: t.Object(StepParam),
        response: { 200: Step, ...errors({ 404: ['KYC_STEP_NOT_FOUND'] }) },
        detail: doc('KYC', 'One step with its questions, answers and documents'),
      },
    )
    .post(
      '/customer/kyc/steps/:id/submit',
      ({ brand, session, params, body }) =>
        submitStep({ ctx, brandId: brand.id, customerId: session.customerId!, code: params.id, input: body }),
      {
        auth: CUSTOMER,
        // the example submits the personal step with answers that pass its checks
        params: t.Object({ id: t.String({ ...Code, example: 'personal' }) }),
        body: t.Object(
          {
            answers: t.Optional(AnswersInput),
          },
          {
            example: {
              answers: {
                first_name: 'Ada',
                last_name: 'Lovelace',
                date_of_birth: '1990-12-10',
                nationality: 'GB',
                address_line: '1 Main St',
                city: 'London',
                postal_code: 'N1 1AA',
                country: 'GB',
              },
            },
          },
        ),
        response: {
          200: Step,
          ...errors({
            400: ['KYC_DOCUMENTS_MISSING'],
            404: ['KYC_STEP_NOT_FOUND'],
            409: ['KYC_STATE_CONFLICT'],
          }),
        },
        detail: doc('KYC', 'Submit a step', {
          description:
            "Answers are checked against the step's questions (400 INVALID_DATA naming answers.<key>); a document " +
            'step needs its minimum of pending or approved documents (400 KYC_DOCUMENTS_MISSING). Allowed from ' +
            'not_started, in_progress, resubmission_requested and expired; otherwise 409 KYC_STATE_CONFLICT.',
        }),
      },
    )
    .get(
      '/customer/kyc/documents',
      ({ brand, session }) => customerDocuments({ ctx, brandId: brand.id, customerId: session.customerId! }),
      {
        auth: CUSTOMER,
        response: { 200: t.Object({ rows: t.Array(Document) }) },
        detail: doc('KYC', "The customer's KYC documents, newest first"),
      },
    )
    .post(
      '/customer/kyc/documents',
      ({ brand, session, body }) =>
        attachDocument({ ctx, brandId: brand.id, customerId: session.customerId!, input: body }),
      {
        auth: CUSTOMER,
        body: t.Object(
          {
            file_id: t.String({
              format: 'uuid',
              description: 'file_id from POST /upload (purpose kyc_document)',
            }),
            step: Code,
            document_type: t.String({
              pattern: '^[a-z][a-z_]{0,31}$',
              description: "one of the step's types",
            }),
            valid_until: t.Optional(
              t.String({
                pattern: '^\\d{4}-\\d{2}-\\d{2}$',
                description: 'last valid day (identity papers)',
              }),
            ),
          },
          {
            example: {
              file_id: '7f1c8a52-3d8e-4d7e-9a51-0f7c2b1e9d10',
              step: 'identity',
              document_type: 'passport',
              valid_until: '2031-05-31',
            },
          },
        ),
        response: {
          200: t.Object({ document: Document }),
          ...errors({ 404: ['KYC_STEP_NOT_FOUND', 'FILE_NOT_FOUND'], 409: ['KYC_STATE_CONFLICT'] }),
        },
        detail: doc('KYC', 'Attach an uploaded file to a KYC step', {
          description:
            "The file must be the customer's own upload in this brand (another's answers 404 FILE_NOT_FOUND); a " +
            'file is attached once (409). A rejected or approved step takes no new documents (409).',
        }),
      },
    )
    // ---- staff ----
    .get(
      '/manager/kyc/profiles',
      ({ brand, query }) => listProfiles({ ctx, brandId: brand.id, input: query }),
      {
        auth: COMPLIANCE,
        ...textInput({
          query: {
            status: t.Optional(OneOf(PROFILE_STATUSES, { description: 'only profiles in this status' })),
            cursor: t.Optional(Int({ minimum: 1, description: 'next_cursor of the previous page' })),
            limit: t.Optional(Int({ minimum: 1, maximum: 200, description: 'default 50' })),
          },
        }),
        response: {
          200: t.Object({
            rows: t.Array(
              t.Object(
                {
                  customer_id: Int(),
                  status: t.String(),
                  risk_level: t.String(),
                  submitted_time: Nullable(Int()),
                  updated_time: Int(),
                },
                { title: 'KycProfileSummary' },
              ),
            ),
            next_cursor: Nullable(Int()),
          }),
        },
        detail: doc('KYC review', 'List KYC profiles (e.g. status=submitted to review)'),
      },
    )
    .get(
      '/manager/kyc/profiles/:customer',
      ({ brand, params }) => staffProfile({ ctx, brandId: brand.id, customerId: params.customer }),
      {
        auth: COMPLIANCE,
        ...textInput({ params: CustomerParam }),
        response: { 200: Profile, ...errors({ 404: ['KYC_PROFILE_NOT_FOUND'] }) },
        detail: doc('KYC review', 'One profile with answers, documents and staff comments'),
      },
    )
    .post(
      '/manager/kyc/profiles/:customer/steps/:id/decision',
      ({ brand, session, params, body }) =>
        decideStep({
          ctx,
          brandId: brand.id,
          staffId: session.staffId!,
          customerId: params.customer,
          code: params.id,
          input: body,
        }),
      {
        auth: COMPLIANCE,
        ...textInput({ params: { ...CustomerParam, ...StepParam } }),
        body: t.Object(
          {
            decision: OneOf(['review', 'approve', 'reject', 'resubmit'], {
              description: 'review (take it), approve, reject (final), resubmit (ask the customer again)',
            }),
            reason: t.Optional(Reason),
            comment: t.Optional(Comment),
          },
          { example: { decision: 'resubmit', reason: 'The photo is blurred', comment: 'glare on the MRZ' } },
        ),
        response: {
          200: Profile,
          ...errors({
            400: ['KYC_DOCUMENTS_MISSING'],
            404: ['KYC_PROFILE_NOT_FOUND', 'KYC_STEP_NOT_FOUND'],
            409: ['KYC_STATE_CONFLICT'],
          }),
        },
        detail: doc('KYC review', 'Decide a step', {
          description:
            'review from submitted; approve from submitted or in_review (its pending documents are approved too; ' +
            '400 KYC_DOCUMENTS_MISSING when fewer than the step needs are left not rejected); ' +
            'reject and resubmit from submitted, in_review or approved, with a reason. Events: kyc.approved, ' +
            'kyc.rejected when the profile gets there.',
        }),
      },
    )
    .post(
      '/manager/kyc/documents/:id/decision',
      ({ brand, session, params, body }) =>
        decideDocument({
          ctx,
          brandId: brand.id,
          staffId: session.staffId!,
          documentId: params.id,
          input: body,
        }),
      {
        auth: COMPLIANCE,
        ...textInput({ params: { id: Id('KYC document id') } }),
        body: t.Object(
          {
            decision: OneOf(['approve', 'reject'], { description: 'a pending document only' }),
            reason: t.Optional(Reason),
            comment: t.Optional(Comment),
          },
          { example: { decision: 'approve' } },
        ),
        response: {
          200: t.Object({ document: Document }),
          ...errors({ 404: ['KYC_DOCUMENT_NOT_FOUND'], 409: ['KYC_STATE_CONFLICT'] }),
        },
        detail: doc('KYC review', 'Approve or reject a document'),
      },
    )
    .get(
      '/manager/kyc/documents/:id/file',
      ({ brand, session, params }) =>
        documentFile({ ctx, brandId: brand.id, staffId: session.staffId!, documentId: params.id }),
      {
        // each opening of a customer's identity document is in the staff audit trail
        auth: { ...COMPLIANCE, audit: 'read' },
        ...textInput({ params: { id: Id('KYC document id') } }),
        // a file, not JSON: the document takes its 200 from the media (kernel/http/openapi-finish.ts)
        response: errors({ 404: ['KYC_DOCUMENT_NOT_FOUND', 'FILE_NOT_FOUND'] }),
        detail: doc('KYC review', 'Open the file of a KYC document', {
          media: DOWNLOAD_MEDIA,
          description:
            'The uploaded file the document was attached with, for the staff who review it, served as GET ' +
            '/upload/{uuid} serves it: its stored content type, a restrictive CSP, nosniff, no-store, images ' +
            'inline and SVG and documents as attachments. Each opening is logged and recorded in the staff audit trail (GET /manager/audit) with the staff member and the ' +
            'document. A document of another brand answers 404 KYC_DOCUMENT_NOT_FOUND; one whose file is no ' +
            'longer stored, 404 FILE_NOT_FOUND.',
        }),
      },
    )
    .put(
      '/manager/kyc/profiles/:customer/risk',
      ({ brand, params, body }) =>
        setRisk({ ctx, brandId: brand.id, customerId: params.customer, input: body }),
      {
        auth: COMPLIANCE,
        ...textInput({ params: CustomerParam }),
        body: t.Object(
          { risk_level: OneOf(RISK_LEVELS, { description: 'risk level' }), comment: t.Optional(Comment) },
          { example: { risk_level: 'low' } },
        ),
        response: { 200: Profile, ...errors({ 404: ['KYC_PROFILE_NOT_FOUND'] }) },
        detail: doc('KYC review', 'Set the risk level'),
      },
    )
    .get('/manager/kyc/settings', ({ brand }) => readSettings({ ctx, brandId: brand.id }), {
      auth: COMPLIANCE,
      response: { 200: Settings },
      detail: doc('KYC review', "The brand's KYC steps and tiers"),
    })
    .put(
      '/manager/kyc/settings',
      ({ brand, body }) => saveSettings({ ctx, brandId: brand.id, input: body }),
      {
        auth: COMPLIANCE,
        body: t.Object(SettingsInput.properties, { example: DEFAULT_SETTINGS }),
        response: { 200: Settings },
        detail: doc('KYC review', "Replace the brand's KYC steps and tiers", {
          description:
            'tiers: deposit_limit_unverified (per ISO 4217 currency), deposit_unlimited_after and withdrawal_after ' +
            '(step codes). 400 INVALID_DATA naming the field for an unknown key anywhere (a typo is never dropped), ' +
            'a number question with min above max, a date question with min_age above max_age, two questions of a ' +
            'step with one key, and a deposit limit in an unknown currency, with more decimals than it has, or ' +
            'above 10^12. Every profile of the brand then gets the status its steps give under the new settings ' +
            '(kyc.approved and the other events when that changes it).',
        }),
      },
    )

nameModels({ KycGates: Gates, KycQuestion: Question })
