import { z } from 'zod'
import { isCountryCode } from '../../../kernel/countries'

/** A date of birth further back than this is a typing error (brands may set max_age per question). */
const DEFAULT_MAX_AGE = 120

// Every object of the settings is strict: an unknown key (a typo such as `withdrawl_after`) is a 400 naming
// it, never dropped, since a dropped tier or rule silently loosens what customers must pass.

/** A question of a questionnaire step; answers are checked against it (`checkAnswers`). */
const Question = z.strictObject({
  key: z.string().regex(/^[a-z][a-z0-9_]{0,39}$/),
  label: z.string().min(1).max(200),
  type: z.enum(['text', 'date', 'choice', 'number', 'boolean', 'country']),
  required: z.boolean().default(true),
  options: z.array(z.string().min(1).max(64)).max(50).optional(),
  min: z.number().optional(),
  max: z.number().optional(),
  max_length: z.number().int().min(1).max(2000).optional(),
  /** `date` questions: the youngest age accepted (date of birth). */
  min_age: z.number().int().min(0).max(120).optional(),
  /** `date` questions with `min_age`: the oldest age accepted (default 120), so 0001-01-01 is no birth date. */
  max_age: z.number().int().min(1).max(150).optional(),
  /** `boolean` questions that must be answered true (a risk acknowledgement). */
  must_be_true: z.boolean().optional(),
})
type Question = z.infer<typeof Question>

const Step = z.strictObject({
  code: z.string().regex(/^[a-z][a-z_]{0,31}$/),
  title: z.string().min(1).max(100),
  required: z.boolean().default(true),
  questions: z.array(Question).max(50).default([]),
  /** Document types accepted and how many must be attached (0: no documents). */
  documents: z
    .strictObject({
      types: z.array(z.string().regex(/^[a-z][a-z_]{0,31}$/)).min(1),
      min: z.number().int().min(1).max(10),
      /** Whether each document must carry its validity date (identity papers expire). */
      valid_until_required: z.boolean().default(false),
    })
    .optional(),
})

/**
 * What KYC lets a customer do before and after approval, per brand: deposits up to a total per currency
 * (major units) until the listed steps are approved; withdrawals only once their steps are approved.
 */
const Tiers = z.strictObject({
  deposit_limit_unverified: z.record(z.string().regex(/^[A-Z]{3}$/), z.number().min(0)),
  deposit_unlimited_after: z.array(z.string()).default([]),
  withdrawal_after: z.array(z.string()).default([]),
})

export const KycSettings = z
  .strictObject({ steps: z.array(Step).min(1).max(20), tiers: Tiers })
  .superRefine((s, ctx) => {
    const codes = s.steps.map((x) => x.code)
    if (new Set(codes).size !== codes.length)
      ctx.addIssue({ code: 'custom', path: ['steps'], message: 'step codes must be unique' })
    for (const [i, st] of s.steps.entries()) {
      if (st.questions.length === 0 && !st.documents)
        ctx.addIssue({ code: 'custom', path: ['steps', i], message: 'a step needs questions or documents' })
      for (const [j, q] of st.questions.entries())
        if (q.type === 'choice' && !q.options?.length)
          ctx.addIssue({
            code: 'custom',
            path: ['steps', i, 'questions', j, 'options'],
            message: 'a choice needs options',
          })
    }
    for (const key of ['deposit_unlimited_after', 'withdrawal_after'] as const)
      for (const c of s.tiers[key])
        if (!codes.includes(c))
          ctx.addIssue({ code: 'custom', path: ['tiers', key], message: `unknown step ${c}` })
  })
export type KycSettings = z.infer<typeof KycSettings>

/**
 * Stored settings as this release reads them: keys it does not know (a newer release's during a deploy, an
 * operator's edit) are dropped, as a save before the strict schema dropped them, rather than failing the
 * whole settings over to the defaults (a brand's limits would silently become the built-in ones).
 */
export function readStoredSettings(raw: unknown) {
  let parsed = KycSettings.safeParse(raw)
  for (let depth = 0; depth < 6 && !parsed.success; depth++) {
    const issues = parsed.error.issues
    if (!issues.every((x) => x.code === 'unrecognized_keys')) break
    for (const issue of issues) {
      let node = raw as Record<PropertyKey, unknown> | undefined
      for (const key of issue.path) node = node?.[key] as Record<PropertyKey, unknown> | undefined
      for (const key of issue.keys) if (node) delete node[key]
    }
    parsed = KycSettings.safeParse(raw)
  }
  return parsed
}

/**
 * What settings may not be saved with, beyond their shape (checked when staff save, not when stored ones
 * are read back): a number question whose min is above its max, or a date question whose min_age is above
 * its max_age (no answer could pass); two questions of a step with one key (an answer fills only one); a
 * deposit limit the currency cannot hold exactly (`minor`: major units to integer minor units of a
 * currency, null for more decimals than it has) or above `maxAmount`. The first problem as `<field>: <message>`.
 */
export function unsavable(
  s: KycSettings,
  minor: (amount: number, currency: string) => number | null,
  maxAmount: number,
): string | null {
  for (const [i, st] of s.steps.entries()) {
    const keys = new Set<string>()
    for (const [j, q] of st.questions.entries()) {
      const field = `steps.${i}.questions.${j}`
      if (keys.has(q.key)) return `${field}.key: ${q.key} is already a question of this step`
      keys.add(q.key)
      if (q.min !== undefined && q.max !== undefined && q.min > q.max)
        return `${field}.min: above max (${q.max})`
      if (q.min_age !== undefined && q.max_age !== undefined && q.min_age > q.max_age)
        return `${field}.min_age: above max_age (${q.max_age})`
    }
  }
  for (const [currency, limit] of Object.entries(s.tiers.deposit_limit_unverified)) {
    const field = `tiers.deposit_limit_unverified.${currency}`
    if (limit > maxAmount) return `${field}: at most ${maxAmount}`
    if (minor(limit, currency) === null) return `${field}: more decimals than ${currency} has`
  }
  return null
}

const choice = (key: string, label: string, options: string[]): z.input<typeof Question> => ({
  key,
  label,
  type: 'choice',
  options,
})

/** The settings of a brand that has not saved its own: the four steps regulated brokers ask for. */
export const DEFAULT_SETTINGS: KycSettings = KycSettings.parse({
  steps: [
    {
      code: 'personal',
      title: 'Personal details',
      questions: [
        { key: 'first_name', label: 'First name', type: 'text', max_length: 100 },
        { key: 'last_name', label: 'Last name', type: 'text', max_length: 100 },
        { key: 'date_of_birth', label: 'Date of birth', type: 'date', min_age: 18, max_age: 120 },
        { key: 'nationality', label: 'Nationality', type: 'country' },
        { key: 'address_line', label: 'Street address', type: 'text', max_length: 200 },
        { key: 'city', label: 'City', type: 'text', max_length: 100 },
        { key: 'postal_code', label: 'Postal code', type: 'text', max_length: 20 },
        { key: 'country', label: 'Country of residence', type: 'country' },
      ],
    },
    {
      code: 'identity',
      title: 'Identity document',
      documents: { types: ['passport', 'id_card', 'driving_licence'], min: 1, valid_until_required: true },
    },
    {
      code: 'address',
      title: 'Proof of address',
      documents: { types: ['utility_bill', 'bank_statement', 'residence_certificate'], min: 1 },
    },
    {
      code: 'economic',
      title: 'Economic profile and appropriateness',
      questions: [
        choice('employment_status', 'Employment status', [
          'employed',
          'self_employed',
          'retired',
          'student',
          'unemployed',
        ]),
        choice('annual_income', 'Annual income (USD)', ['<25k', '25k-100k', '100k-250k', '>250k']),
        choice('source_of_funds', 'Source of funds', [
          'salary',
          'savings',
          'investments',
          'inheritance',
          'business',
        ]),
        choice('trading_experience', 'Trading experience with leveraged products', [
          'none',
          '<1y',
          '1-3y',
          '>3y',
        ]),
        {
          key: 'understands_leverage_risk',
          label: 'I understand that leveraged trading can lose more than my deposit',
          type: 'boolean',
          must_be_true: true,
        },
      ],
    },
  ],
  tiers: {
    deposit_limit_unverified: { USD: 2000, EUR: 2000, GBP: 1500 },
    deposit_unlimited_after: ['personal', 'identity', 'address'],
    withdrawal_after: ['identity', 'address'],
  },
})

const DATE = /^\d{4}-\d{2}-\d{2}$/
const COUNTRY = /^[A-Z]{2}$/

/** Whether `s` is a real calendar date (YYYY-MM-DD); its epoch ms at UTC midnight, or null. */
export function parseDate(s: string): number | null {
  if (!DATE.test(s)) return null
  const ms = Date.parse(`${s}T00:00:00Z`)
  return Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== s ? null : ms
}

/**
 * Checks answers against a step's questions (pure; `now` for ages). Returns the cleaned answers (only
 * known keys) or the first problem, naming the field as `answers.<key>`.
 */
export function checkAnswers(
  questions: Question[],
  answers: Record<string, unknown>,
  now: number,
): { ok: true; answers: Record<string, unknown> } | { ok: false; message: string } {
  const known = new Set(questions.map((q) => q.key))
  for (const k of Object.keys(answers))
    if (!known.has(k)) return { ok: false, message: `answers.${k}: not a question of this step` }
  const out: Record<string, unknown> = {}
  for (const q of questions) {
    const v = answers[q.key]
    const field = `answers.${q.key}`
    if (v === undefined || v === null || v === '') {
      if (q.required) return { ok: false, message: `${field}: required` }
      continue
    }
    switch (q.type) {
      case 'text':
        if (typeof v !== 'string' || v.trim().length === 0)
          return { ok: false, message: `${field}: must be text` }
        if (v.length > (q.max_length ?? 500))
          return { ok: false, message: `${field}: at most ${q.max_length ?? 500} characters` }
        out[q.key] = v.trim()
        break
      case 'country':
        if (typeof v !== 'string' || !COUNTRY.test(v) || !isCountryCode(v))
          return { ok: false, message: `${field}: an ISO 3166-1 alpha-2 code such as DE` }
        out[q.key] = v
        break
      case 'date': {
        const ms = typeof v === 'string' ? parseDate(v) : null
        if (ms === null) return { ok: false, message: `${field}: a date as YYYY-MM-DD` }
        if (q.min_age !== undefined) {
          const born = new Date(ms)
          const today = new Date(now)
          let age = today.getUTCFullYear() - born.getUTCFullYear()
          const m = today.getUTCMonth() - born.getUTCMonth()
          if (m < 0 || (m === 0 && today.getUTCDate() < born.getUTCDate())) age--
          if (age < q.min_age)
            return { ok: false, message: `${field}: must be at least ${q.min_age} years ago` }
          const oldest = q.max_age ?? DEFAULT_MAX_AGE
          if (age > oldest) return { ok: false, message: `${field}: more than ${oldest} years ago` }
          if (ms > now) return { ok: false, message: `${field}: lies in the future` }
        }
        out[q.key] = v
        break
      }
      case 'choice':
        if (typeof v !== 'string' || !q.options?.includes(v))
          return { ok: false, message: `${field}: one of ${q.options?.join(', ')}` }
        out[q.key] = v
        break
      case 'number':
        if (typeof v !== 'number' || !Number.isFinite(v))
          return { ok: false, message: `${field}: must be a number` }
        if ((q.min !== undefined && v < q.min) || (q.max !== undefined && v > q.max))
          return { ok: false, message: `${field}: between ${q.min ?? '-inf'} and ${q.max ?? 'inf'}` }
        out[q.key] = v
        break
      case 'boolean':
        if (typeof v !== 'boolean') return { ok: false, message: `${field}: must be true or false` }
        if (q.must_be_true && !v) return { ok: false, message: `${field}: must be accepted` }
        out[q.key] = v
        break
    }
  }
  return { ok: true, answers: out }
}
