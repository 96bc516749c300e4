import { z } from 'zod'
import { PurchaseLimits } from './limits'
import { isZone, PhaseRules } from './rules'

/** phase_type of a step (2.14): 0 evaluation, 1 funded. */
const EVALUATION = 0
export const FUNDED = 1

export const ProgramStep = z.object({
  account_group: z.string().min(1).max(64),
  phase_type: z.union([z.literal(EVALUATION), z.literal(FUNDED)]),
  /** The trader's share of the funded phase's profit (0.8 = 80%); funded steps only. */
  profit_split: z.number().gt(0).max(1).optional(),
  rules: PhaseRules,
})
export type ProgramStep = z.infer<typeof ProgramStep>

export const ProgramInput = z.object({
  name: z.string().min(1).max(100),
  description: z.string().max(2000).default(''),
  price: z.number().min(0).max(1_000_000),
  currency: z.string().regex(/^[A-Z]{3}$/),
  active: z.boolean(),
  time_zone: z.string().min(1).max(64).default('UTC'),
  steps: z.array(ProgramStep).min(1).max(5),
  limits: PurchaseLimits.optional(),
})
export type ProgramInput = z.infer<typeof ProgramInput>

export interface GroupFacts {
  accountMode: 'REAL' | 'DEMO'
  currency: string
}

/**
 * Whether a program can be saved, the first problem named by its field: a known IANA zone; evaluation
 * steps in DEMO groups of the program currency, with a profit target; at most one funded step, the last,
 * in a REAL group, with its profit split and no target.
 */
export function programProblem(p: ProgramInput, groups: Map<string, GroupFacts>): string | null {
  if (!isZone(p.time_zone)) return `time_zone: ${p.time_zone} is not an IANA time zone`
  const funded = p.steps.filter((s) => s.phase_type === FUNDED).length
  if (funded > 1) return 'steps: only one funded step is allowed'
  for (const [i, s] of p.steps.entries()) {
    const at = `steps.${i}`
    const g = groups.get(s.account_group)
    if (!g) return `${at}.account_group: group ${s.account_group} not found`
    if (g.currency !== p.currency) return `${at}.account_group: the group's currency is not ${p.currency}`
    if (s.phase_type === FUNDED) {
      if (i !== p.steps.length - 1) return `${at}.phase_type: the funded step must be the last`
      if (g.accountMode !== 'REAL') return `${at}.account_group: a funded step needs a REAL group`
      if (s.profit_split === undefined) return `${at}.profit_split: required for the funded step`
    } else {
      if (g.accountMode !== 'DEMO') return `${at}.account_group: an evaluation step needs a DEMO group`
      if (s.profit_split !== undefined) return `${at}.profit_split: only the funded step has one`
      if (s.rules.profit_target_pct <= 0)
        return `${at}.rules.profit_target_pct: an evaluation step needs a target`
    }
  }
  return null
}

/** profit_split of a program: read from its funded step (0 when it has none). */
export const profitSplit = (steps: ProgramStep[]) =>
  steps.find((s) => s.phase_type === FUNDED)?.profit_split ?? 0
