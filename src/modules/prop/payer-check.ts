import { fromMinor, ownFreeMargin, roundToCurrency } from '../accounts'
import type { PropCtx } from './context'
import type { PropCode } from './errors'
import { propFunds } from './managed-funds'

/** Why an account cannot pay a program's fee: the code of spec 7.4 (its status: errors.ts) and a message. */
interface PayerProblem {
  code: PropCode
  message: string
}

/**
 * Validations 2–5 of spec 4.14 and the fee's free-margin rule, as data: one check, so the payer list,
 * the purchase preview and the purchase itself cannot disagree (they did: preview said
 * INVALID_PAYER_ACCOUNT where buy answered PAYER_ACCOUNT_NOT_REAL). A fee is money out, like a
 * withdrawal: it must leave the free margin (equity less margin) at or above zero, or a margin call
 * follows the purchase.
 */
export async function checkPayer(
  ctx: PropCtx,
  brandId: number,
  customerId: number,
  program: { currency: string; priceMinor: number },
  login: number,
) {
  const account = await ctx.accounts.read.accountIn(brandId, login)
  const group = account && (await ctx.accounts.read.group(account.groupId))
  const problem = (code: PropCode, message: string) => ({
    account,
    group,
    problem: { code, message } as PayerProblem,
  })
  if (!account || !group || account.customerId !== customerId || account.enable !== 1)
    return problem('INVALID_PAYER_ACCOUNT', `payer_login: ${login} is not an enabled account of yours`)
  const managed = await propFunds(ctx)(login)
  if (managed) return problem('INVALID_PAYER_ACCOUNT', `payer_login: ${managed}`)
  if (group.accountMode !== 'REAL')
    return problem('PAYER_ACCOUNT_NOT_REAL', `payer_login: ${login} is not a REAL account`)
  if (group.currency !== program.currency)
    return problem(
      'CURRENCY_CONVERSION_REQUIRED',
      `the program is priced in ${program.currency}, the payer account holds ${group.currency}`,
    )
  const price = fromMinor(program.priceMinor, program.currency)
  if (account.balance < program.priceMinor)
    return problem(
      'NOT_ENOUGH_FUNDS',
      `payer_login: the balance is below the price of ${price} ${group.currency}`,
    )
  // checked again where the fee is taken (steps.ts), against the positions that transaction sees
  if (program.priceMinor > 0) {
    const m = await ctx.accounts.requireMargin({ account, group })
    // as the fee's hold counts it: the broker's credit pays for nothing
    const own = roundToCurrency(ownFreeMargin(m), group.currency)
    if (own < price)
      return problem(
        'NOT_ENOUGH_FUNDS',
        `payer_login: free margin less credit is ${own} ${group.currency} (equity ${m.equity} less margin ${m.margin} and credit ${m.credit}), below the price of ${price}`,
      )
  }
  return { account, group, problem: null }
}
