/**
 * PERFORMANCE_FEE_HWM and MANAGEMENT_FEE on a subscription's copy equity (minor units of the follower's
 * currency), pure (DESIGN rule 2). Copy equity = capital (start balance + deposits - withdrawals) + the
 * realized result of copies - rewards paid + the floating result of open copies.
 */

/**
 * The performance fee due now: `percent` of the copy equity above the high-water mark, rounded down; the
 * mark then moves to the equity after the fee (the follower pays again only for new gains).
 */
export function performanceFee(equity: number, hwm: number, percent: number) {
  if (equity <= hwm) return { fee: 0, hwm }
  const fee = Math.floor(((equity - hwm) * percent) / 100)
  return { fee, hwm: equity - fee }
}

/**
 * The part of an account's deposit or withdrawal that is one subscription's: in proportion to the money it
 * manages (its capital, plus what its copies made, less the fees it paid) in the balance before the flow,
 * so a subscription on a tenth of the balance takes a tenth of each flow; never more on the way out than
 * it manages. Each subscription taking the whole of every flow let a withdrawal larger than its equity
 * empty its mark while its capital went below zero, and the deposit that brought the money back raise
 * both: the mark rose by the difference, and gains up to it were never charged. A deposit into an emptied
 * account is split evenly among its subscriptions.
 */
export function flowShare(
  amount: number,
  managed: number,
  balanceBefore: number,
  subscriptions: number,
  out: boolean,
) {
  if (balanceBefore <= 0) return out ? 0 : Math.floor(amount / Math.max(1, subscriptions))
  const part = Math.round(amount * Math.min(1, Math.max(0, managed / balanceBefore)))
  return out ? Math.min(part, Math.max(0, managed)) : part
}

/** A deposit raises the mark by its amount: new money is not performance. */
export const hwmAfterDeposit = (hwm: number, amount: number) => hwm + amount

/**
 * A withdrawal lowers the mark in proportion to the share of the equity taken out (cTrader Copy's rule):
 * taking out a quarter of the equity takes a quarter of the mark, so the gains still owed a fee keep
 * their share of it.
 */
export function hwmAfterWithdrawal(hwm: number, equityBefore: number, amount: number) {
  if (equityBefore <= 0) return hwm
  return Math.max(0, Math.round(hwm * (1 - Math.min(1, amount / equityBefore))))
}

/** The management fee of `days` days: the annual rate on the copy equity, accrued daily (365-day year). */
export function managementFee(equity: number, annualPercent: number, days: number) {
  if (equity <= 0 || days <= 0) return 0
  return Math.floor((equity * annualPercent * days) / 100 / 365)
}

/**
 * The equity stop: the loss of the copy equity against its capital that stops copying (an amount in
 * minor units, or a percent of the capital); true when reached.
 */
export function equityStopReached(
  capital: number,
  equity: number,
  stop: number,
  type: number,
  decimals: number,
) {
  if (stop <= 0) return false
  const limit = type === 1 ? (capital * stop) / 100 : stop * 10 ** decimals
  return capital - equity >= limit
}

/**
 * The part of an account's real balance that is one subscription's: the money it manages (capital, plus
 * what its copies made, less the fees it paid), as long as the balance holds what the account's live
 * subscriptions manage together (`allocated`, this one's included); when the account lost money on its
 * own trades and holds less, each subscription's share of what is left (in proportion to what it
 * manages). Copies are sized, and the management fee charged, on this: never on money the account no
 * longer has.
 */
export function managedShare(managed: number, allocated: number, balance: number) {
  if (managed <= 0) return managed
  if (balance <= 0) return 0
  if (allocated <= balance) return Math.min(managed, balance)
  return Math.floor((balance * managed) / allocated)
}
