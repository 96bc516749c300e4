import { describe, expect, test } from 'bun:test'
import { checkAnswers, DEFAULT_SETTINGS, KycSettings } from './settings'
import { profileStatus, stepTransition } from './status'

const now = Date.UTC(2026, 10, 23)
const personal = DEFAULT_SETTINGS.steps[0].questions

describe('KYC answers', () => {
  const ok = {
    first_name: 'Ada',
    last_name: 'Lovelace',
    date_of_birth: '2008-11-23',
    nationality: 'GB',
    address_line: '1 Main St',
    city: 'London',
    postal_code: 'N1',
    country: 'GB',
  }
  test('18 years exactly on the birthday is accepted; a day less is not', () => {
    expect(checkAnswers(personal, ok, now).ok).toBe(true)
    const r = checkAnswers(personal, { ...ok, date_of_birth: '2008-11-24' }, now)
    expect(r.ok ? '' : r.message).toContain('answers.date_of_birth')
  })
  test('unknown keys, impossible dates and bad countries are named', () => {
    const msg = (a: Record<string, unknown>) => {
      const r = checkAnswers(personal, a, now)
      return r.ok ? '' : r.message
    }
    expect(msg({ ...ok, extra: 1 })).toContain('answers.extra')
    expect(msg({ ...ok, date_of_birth: '1990-02-30' })).toContain('answers.date_of_birth')
    expect(msg({ ...ok, country: 'gb' })).toContain('answers.country')
  })
  test('a risk acknowledgement must be accepted', () => {
    const econ = DEFAULT_SETTINGS.steps[3].questions
    const base = {
      employment_status: 'employed',
      annual_income: '<25k',
      source_of_funds: 'salary',
      trading_experience: 'none',
    }
    expect(checkAnswers(econ, { ...base, understands_leverage_risk: true }, now).ok).toBe(true)
    expect(checkAnswers(econ, { ...base, understands_leverage_risk: false }, now).ok).toBe(false)
  })
  test('settings referring to an unknown step are refused', () => {
    expect(
      KycSettings.safeParse({
        ...DEFAULT_SETTINGS,
        tiers: { ...DEFAULT_SETTINGS.tiers, withdrawal_after: ['nope'] },
      }).success,
    ).toBe(false)
  })
})

describe('KYC states', () => {
  test('the profile follows its steps', () => {
    expect(profileStatus(['not_started', 'not_started'])).toBe('not_started')
    expect(profileStatus(['submitted', 'not_started'])).toBe('in_progress')
    expect(profileStatus(['submitted', 'approved'])).toBe('submitted')
    expect(profileStatus(['in_review', 'approved'])).toBe('in_review')
    expect(profileStatus(['approved', 'approved'])).toBe('approved')
    expect(profileStatus(['approved', 'resubmission_requested'])).toBe('resubmission_requested')
    expect(profileStatus(['expired', 'resubmission_requested'])).toBe('expired')
    expect(profileStatus(['rejected', 'expired'])).toBe('rejected')
  })
  test('a rejected step is final; an expired one can be submitted again', () => {
    for (const a of ['attach', 'submit', 'review', 'approve', 'resubmit', 'expire'] as const)
      expect(stepTransition('rejected', a)).toBeNull()
    expect(stepTransition('expired', 'submit')).toBe('submitted')
    expect(stepTransition('not_started', 'attach')).toBe('in_progress')
    expect(stepTransition('approved', 'expire')).toBe('expired')
  })
})
