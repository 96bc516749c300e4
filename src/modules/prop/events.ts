import { z } from 'zod'
import { defineTopic } from '../../kernel/events/topic'
import { upgradeMajorFields } from '../accounts'

const Phase = z.object({
  login: z.number().int(),
  challenge_id: z.number().int(),
  phase_id: z.number().int(),
  phase_index: z.number().int(),
  currency: z.string(),
})

/** A purchase became active (affiliates will consume it). */
export const PropPurchased = defineTopic(
  'prop.purchased',
  // the fee in integer minor units of `currency` (events written before carried major units)
  z.preprocess(
    upgradeMajorFields({ amount: 'amount_minor' }),
    z.object({
      purchase_id: z.number().int(),
      customer_id: z.number().int(),
      program_id: z.number().int(),
      amount_minor: z.number().int(),
      currency: z.string(),
      challenge_id: z.number().int(),
    }),
  ),
)
/** A loss limit or the time limit ended a phase: the challenge failed. Money in major units. */
export const PropBreached = defineTopic(
  'prop.breached',
  Phase.extend({ rule: z.string(), limit: z.number(), anchor: z.number(), observed: z.number() }),
)
/** A share of a loss limit was used (`level` percent), once per phase, day, rule and level. */
export const PropWarning = defineTopic(
  'prop.warning',
  Phase.extend({ rule: z.string(), level: z.number(), used_pct: z.number() }),
)
/** A phase met its target: `next_login` is the account of the next phase (null: the challenge passed). */
export const PropPhasePassed = defineTopic(
  'prop.phase_passed',
  Phase.extend({ next_login: z.number().int().nullable(), funded: z.boolean() }),
)
