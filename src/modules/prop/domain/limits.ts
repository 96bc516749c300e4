import { z } from 'zod'

/**
 * How often a customer may buy a program (staff set them per program): purchases ever, purchases within
 * a period of days, and challenges in progress at once. Purchases that failed or were refunded do not
 * count. Absent: no such limit.
 */
export const PurchaseLimits = z
  .object({
    per_customer: z.number().int().min(1).max(10_000).optional(),
    per_period: z.number().int().min(1).max(10_000).optional(),
    period_days: z.number().int().min(1).max(3650).optional(),
    active: z.number().int().min(1).max(10_000).optional(),
  })
  .strict()
  .refine((l) => (l.per_period === undefined) === (l.period_days === undefined), {
    message: 'per_period and period_days go together',
    path: ['period_days'],
  })
export type PurchaseLimits = z.infer<typeof PurchaseLimits>

/** A free program whose staff set no limits: one trial per 30 days, one in progress at a time. */
const FREE_PROGRAM_LIMITS: PurchaseLimits = { per_period: 1, period_days: 30, active: 1 }

/** The limits that apply: the program's own, or for a free program without any, FREE_PROGRAM_LIMITS. */
export const effectiveLimits = (stored: PurchaseLimits | null, priceMinor: number): PurchaseLimits =>
  stored ?? (priceMinor === 0 ? FREE_PROGRAM_LIMITS : {})

export interface PurchaseCounts {
  /** Purchases of the program by the customer, the new one included (failed and refunded left out). */
  total: number
  /** Of those, made within the period. */
  inPeriod: number
  /** Of those, whose challenge is not over (or not created yet). */
  active: number
}

/** The first limit the counts break, with its code and a message that names it; null within them. */
export function limitProblem(
  l: PurchaseLimits,
  c: PurchaseCounts,
): {
  code: 'PURCHASE_LIMIT_PER_CUSTOMER' | 'PURCHASE_LIMIT_PER_PERIOD' | 'PURCHASE_LIMIT_ACTIVE'
  message: string
} | null {
  if (l.per_customer !== undefined && c.total > l.per_customer)
    return {
      code: 'PURCHASE_LIMIT_PER_CUSTOMER',
      message: `this program can be bought ${l.per_customer} time(s) per customer`,
    }
  if (l.per_period !== undefined && c.inPeriod > l.per_period)
    return {
      code: 'PURCHASE_LIMIT_PER_PERIOD',
      message: `this program can be bought ${l.per_period} time(s) in ${l.period_days} days`,
    }
  if (l.active !== undefined && c.active > l.active)
    return {
      code: 'PURCHASE_LIMIT_ACTIVE',
      message: `at most ${l.active} challenge(s) of this program may be in progress at once`,
    }
  return null
}
