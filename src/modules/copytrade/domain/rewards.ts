import { z } from 'zod'

/** Spec 2.16.1 reward_type. */
export const REWARD = {
  SUBSCRIPTION_FEE: 0,
  PERFORMANCE_FEE_HWM: 1,
  VOLUME_REBATE: 2,
  PROFIT_SHARE_PER_TRADE: 3,
  MANAGEMENT_FEE: 4,
} as const
export const REWARD_NAMES = [
  'SUBSCRIPTION_FEE',
  'PERFORMANCE_FEE_HWM',
  'VOLUME_REBATE',
  'PROFIT_SHARE_PER_TRADE',
  'MANAGEMENT_FEE',
] as const

const percent = z.number().min(0).max(100)
const money = z.number().min(0).max(1_000_000)
const period = z.number().int().min(1).max(366)

/**
 * The parameters of each reward type (CreateCopyTradeMaster's `reward_policy`). Amounts are in the
 * master account's currency; each follower pays in its own, converted at the cross rate of the moment.
 */
export const RewardPolicy = z.discriminatedUnion('reward_type', [
  z.object({ reward_type: z.literal(0), amount: money, period_days: period }).strict(),
  z.object({ reward_type: z.literal(1), percent, period_days: period }).strict(),
  z.object({ reward_type: z.literal(2), per_lot: money }).strict(),
  z.object({ reward_type: z.literal(3), percent }).strict(),
  z.object({ reward_type: z.literal(4), annual_percent: percent }).strict(),
])
export type RewardPolicy = z.infer<typeof RewardPolicy>

/**
 * PROFIT_SHARE_PER_TRADE: `percent` of a copy's net result (profit, commission and swap), in the
 * follower's minor units, rounded down; nothing for a loss or a break-even.
 */
export const profitShare = (netMinor: number, pct: number) =>
  netMinor > 0 ? Math.floor((netMinor * pct) / 100) : 0

/** VOLUME_REBATE: `perLot` (master currency, major) per lot copied, in the follower's minor units. */
export const volumeRebate = (volume: number, perLot: number, rate: number, followerDecimals: number) =>
  Math.floor((volume / 100) * perLot * rate * 10 ** followerDecimals + 1e-9)

/** SUBSCRIPTION_FEE: the period's fixed amount (master currency, major) in the follower's minor units. */
export const subscriptionFee = (amount: number, rate: number, followerDecimals: number) =>
  Math.floor(amount * rate * 10 ** followerDecimals + 1e-9)

/** Converts minor units between currencies at `rate` (from -> to), rounded down (in the payer's favour). */
export const convertMinor = (minor: number, rate: number, fromDecimals: number, toDecimals: number) =>
  Math.floor((minor / 10 ** fromDecimals) * rate * 10 ** toDecimals + 1e-9)
