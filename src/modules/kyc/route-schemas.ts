import type { TSchema, TUnknown } from '@sinclair/typebox'
import { t } from 'elysia'
import { Int, OneOf } from '../../kernel/http/schemas'

/**
 * The KYC settings as the document shows them, field by field: the zod schema of domain/settings.ts
 * (`KycSettings`) with its bounds, enums and defaults. That schema stays the authority: it runs on every
 * save and names the field of any problem (an unknown key anywhere, duplicate step codes, a choice without
 * options, a tier naming an unknown step), so the nested objects here are left open for it to refuse an
 * unknown key by name. `stored`: the settings as saved and read back, every defaulted field present.
 * tests/unit/documented-schemas.test.ts keeps the two in step.
 */
function settingsSchemas(stored: boolean) {
  const defaulted = <T extends Parameters<typeof t.Optional>[0]>(s: T) => (stored ? s : t.Optional(s))
  const suffix = stored ? '' : 'Input'
  const Question = t.Object(
    {
      key: t.String({ pattern: '^[a-z][a-z0-9_]{0,39}$', description: 'answers.<key>; unique in its step' }),
      label: t.String({ minLength: 1, maxLength: 200, description: 'shown to the customer' }),
      type: OneOf(['text', 'date', 'choice', 'number', 'boolean', 'country'], {
        description:
          'text (trimmed, max_length, default 500), date (YYYY-MM-DD), choice (one of options), number ' +
          '(min..max), boolean, country (ISO 3166-1 alpha-2)',
      }),
      required: defaulted(t.Boolean({ description: 'an answer is needed (default true)' })),
      options: t.Optional(
        t.Array(t.String({ minLength: 1, maxLength: 64 }), {
          maxItems: 50,
          description: 'the values a choice accepts (needed for a choice)',
        }),
      ),
      min: t.Optional(t.Number({ description: 'number: the smallest value; not above max' })),
      max: t.Optional(t.Number({ description: 'number: the largest value' })),
      max_length: t.Optional(Int({ minimum: 1, maximum: 2000, description: 'text: the longest answer' })),
      min_age: t.Optional(
        Int({ minimum: 0, maximum: 120, description: 'date of birth: the youngest age accepted' }),
      ),
      max_age: t.Optional(
        Int({
          minimum: 1,
          maximum: 150,
          description: 'date of birth with min_age: the oldest age accepted (default 120); not below min_age',
        }),
      ),
      must_be_true: t.Optional(
        t.Boolean({ description: 'boolean: must be answered true (an acknowledgement)' }),
      ),
    },
    { title: `KycSettingsQuestion${suffix}` },
  )
  const Documents = t.Object(
    {
      types: t.Array(t.String({ pattern: '^[a-z][a-z_]{0,31}$' }), {
        minItems: 1,
        description: 'document types accepted, e.g. passport',
      }),
      min: Int({ minimum: 1, maximum: 10, description: 'documents to attach, at least' }),
      valid_until_required: defaulted(
        t.Boolean({ description: 'each document carries its last valid day (default false)' }),
      ),
    },
    { title: `KycSettingsDocuments${suffix}` },
  )
  const Step = t.Object(
    {
      code: t.String({ pattern: '^[a-z][a-z_]{0,31}$', description: 'unique step code, e.g. identity' }),
      title: t.String({ minLength: 1, maxLength: 100, description: 'the step as the customer reads it' }),
      required: defaulted(t.Boolean({ description: 'needed for approval (default true)' })),
      questions: defaulted(
        t.Array(Question, { maxItems: 50, description: 'the questionnaire (default none)' }),
      ),
      documents: t.Optional(Documents),
    },
    { title: `KycSettingsStep${suffix}` },
  )
  const Tiers = t.Object(
    {
      deposit_limit_unverified: t.Record(t.String({ pattern: '^[A-Z]{3}$' }), t.Number({ minimum: 0 }), {
        description:
          'total deposits allowed per ISO 4217 currency (major units, at most 10^12, no more decimals than ' +
          'the currency has) until the deposit_unlimited_after steps are approved; a currency not listed: 0',
      }),
      deposit_unlimited_after: defaulted(
        t.Array(t.String(), { description: 'step codes that lift the deposit limit (default none)' }),
      ),
      withdrawal_after: defaulted(
        t.Array(t.String(), { description: 'step codes to be approved for withdrawals (default none)' }),
      ),
    },
    {
      title: `KycTiers${suffix}`,
      description: 'what money may move before which steps are approved: deposits, then withdrawals',
    },
  )
  return t.Object(
    {
      steps: t.Array(Step, {
        minItems: 1,
        maxItems: 20,
        description: 'in order, codes unique; each step with questions, documents or both',
      }),
      tiers: Tiers,
    },
    { title: `KycSettings${suffix}` },
  )
}

/** PUT /manager/kyc/settings: what a save accepts (defaulted fields may be left out). */
export const SettingsInput = settingsSchemas(false)
/** The settings as stored and answered. */
export const Settings = settingsSchemas(true)

/**
 * A question's answer: text (text, date, choice, country), a number or a boolean. Typed `unknown` for the
 * handlers: the service reads stored answers back as `Record<string, unknown>` (what checkAnswers kept);
 * the schema, which the answer is checked against and the document shows, is the union.
 */
const AnswerValue = t.Union([t.String(), t.Number(), t.Boolean()]) as TSchema as TUnknown

/** The answers of a step as stored: question key to its checked answer. */
export const Answers = t.Record(t.String(), AnswerValue, {
  description: 'question key to its answer: text (text, date, choice, country), a number or a boolean',
})

/** The answers a customer submits: null or '' leaves an optional question unanswered. */
export const AnswersInput = t.Record(
  t.String({ maxLength: 40 }),
  t.Union([t.String(), t.Number(), t.Boolean(), t.Null()], {
    'x-error-message': 'text, a number, true or false',
  }),
  {
    description:
      "question key to its answer, checked against the step's questions: text for text, date " +
      "(YYYY-MM-DD), choice and country (ISO 3166-1 alpha-2), a number, or true or false; null or '' " +
      'leaves an optional question unanswered',
  },
)
