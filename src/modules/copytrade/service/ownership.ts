import { accountOf } from '../accounts-of'
import type { CopyCtx } from '../context'
import { type CopyCode, copyError } from './errors'

/**
 * An account of the customer in the brand, or `code` (rules 1, 4 and 5 of spec 4.12): ownership is the
 * session's customer, never a body's `customer_id` (rule 9).
 */
export async function ownAccount(
  ctx: CopyCtx,
  brandId: number,
  customerId: number,
  login: number,
  code: CopyCode = 'INVALID_ACCOUNT',
  field = 'login',
) {
  const { account, group } = await accountOf(ctx, login)
  if (!account || !group || account.brandId !== brandId || account.customerId !== customerId)
    throw copyError(code, `${field}: ${login} is not an account of yours`)
  return { account, group }
}

/** Follower account mode from its group (rule 7). */
export const accountMode = (g: { accountMode: string }) =>
  (g.accountMode === 'REAL' ? 'REAL' : 'DEMO') as 'REAL' | 'DEMO'
