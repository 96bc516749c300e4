/**
 * KYC states (spec 3.6 leaves them to us; modelled on Sumsub, Onfido and Veriff). Pure: the service
 * applies a transition only with `UPDATE ... WHERE status IN (from)`.
 */
export const PROFILE_STATUSES = [
  'not_started',
  'in_progress',
  'submitted',
  'in_review',
  'approved',
  'resubmission_requested',
  'rejected',
  'expired',
] as const
export type ProfileStatus = (typeof PROFILE_STATUSES)[number]

/** A step goes through the same states as the profile (which derives its own from its required steps). */
export const STEP_STATUSES = PROFILE_STATUSES
export type StepStatus = ProfileStatus

export const DOCUMENT_STATUSES = ['pending', 'approved', 'rejected', 'expired'] as const
export type DocumentStatus = (typeof DOCUMENT_STATUSES)[number]

export const RISK_LEVELS = ['unassessed', 'low', 'medium', 'high'] as const
export type RiskLevel = (typeof RISK_LEVELS)[number]

type StepAction = 'attach' | 'submit' | 'review' | 'approve' | 'reject' | 'resubmit' | 'expire'

/** Where each action may start from; `rejected` is final (a customer turned down is not reconsidered here). */
const STEP_FROM: Record<StepAction, readonly StepStatus[]> = {
  attach: ['not_started', 'in_progress', 'resubmission_requested', 'expired'],
  submit: ['not_started', 'in_progress', 'resubmission_requested', 'expired'],
  review: ['submitted'],
  approve: ['submitted', 'in_review'],
  reject: ['submitted', 'in_review', 'approved'],
  resubmit: ['submitted', 'in_review', 'approved'],
  expire: ['approved'],
}

const STEP_TO: Record<StepAction, StepStatus | null> = {
  // attaching keeps a step asked for resubmission in that state until it is submitted
  attach: null,
  submit: 'submitted',
  review: 'in_review',
  approve: 'approved',
  reject: 'rejected',
  resubmit: 'resubmission_requested',
  expire: 'expired',
}

/** The status after `action`, or null when the action is not allowed from `from`. */
export function stepTransition(from: StepStatus, action: StepAction): StepStatus | null {
  if (!STEP_FROM[action].includes(from)) return null
  if (action === 'attach') return from === 'not_started' ? 'in_progress' : from
  return STEP_TO[action]
}

export const stepActionFrom = (action: StepAction) => STEP_FROM[action]

/** Where a staff decision leads, from any status it is allowed from. */
export const decisionTarget = (action: 'review' | 'approve' | 'reject' | 'resubmit') => STEP_TO[action]!

/** Document decisions: a pending one is approved or rejected; an approved one expires past its date. */
export function documentTransition(
  from: DocumentStatus,
  action: 'approve' | 'reject' | 'expire',
): DocumentStatus | null {
  if (action === 'expire') return from === 'approved' || from === 'pending' ? 'expired' : null
  if (from !== 'pending') return null
  return action === 'approve' ? 'approved' : 'rejected'
}

/**
 * The profile's status, derived from its required steps (never stored apart from them, so it cannot
 * disagree): a rejection is final; an expiry or a resubmission asks the customer again; all approved is
 * approved; otherwise how far the customer and the reviewers got.
 */
export function profileStatus(steps: StepStatus[]): ProfileStatus {
  if (steps.length === 0) return 'not_started'
  if (steps.includes('rejected')) return 'rejected'
  if (steps.includes('expired')) return 'expired'
  if (steps.includes('resubmission_requested')) return 'resubmission_requested'
  if (steps.every((s) => s === 'approved')) return 'approved'
  const done = (s: StepStatus) => s === 'submitted' || s === 'in_review' || s === 'approved'
  if (steps.every(done)) return steps.includes('in_review') ? 'in_review' : 'submitted'
  if (steps.every((s) => s === 'not_started')) return 'not_started'
  return 'in_progress'
}

/** Whether every listed step is approved (the tier gates). */
export const approvedAll = (codes: string[], byCode: Map<string, StepStatus>) =>
  codes.every((c) => byCode.get(c) === 'approved')
