import { and, asc, eq, gt, inArray, sql } from 'drizzle-orm'
import { brands } from '../../kernel/brand/schema'
import type { AccountsCtx } from './context'
import { closingTimes } from './domain/closing'
import { accounts, balanceOperations as o } from './schema'

/**
 * A day is closed a minute after it ended: a ledger row dated just before midnight whose transaction was
 * still committing at midnight is in the ledger by then (a day once marked closed is not read again).
 */
const SETTLE_MS = 60_000
/** Accounts read and written per statement. */
const BATCH = 500
/** A brand's day or month marked closed is kept a while past its end (a clock a little behind still sees it). */
const DAY_MARK_MS = 3 * 86_400_000
const MONTH_MARK_MS = 40 * 86_400_000

/**
 * An account's balance at `before` (epoch ms): the balance_after of its last ledger row before then, 0
 * without one. Every change of a balance is a ledger row (README), so this is exact however late it is
 * read: a deposit made after midnight is never taken for the previous day's close.
 */
const balanceAt = (before: number) =>
  sql<number>`coalesce((select ${o.balanceAfter} from ${o} where ${o.login} = ${accounts.login} and ${o.createdAt} < ${before} order by ${o.id} desc limit 1), 0)`

/**
 * The `accounts.day-close` job: once a brand's trading day has ended (domain/closing.ts), each of its
 * accounts' prev_balance becomes its balance at the day's end and, once a month has ended,
 * prev_month_balance its balance at the month's end. Both are read from the ledger as of that moment, so a
 * second run (two instances, a restart that lost the marks) writes the same values again: there is nothing
 * to double. The marks in the shared store only spare the work once a brand's day (month) is closed.
 */
export async function closeDays(ctx: AccountsCtx, now: number) {
  const { day, dayStart, month, monthStart } = closingTimes(now - SETTLE_MS)
  for (const { id: brandId } of await ctx.db.select({ id: brands.id }).from(brands)) {
    const dayMark = `accounts:day-closed:${brandId}:${day}`
    if (await ctx.store.get(dayMark)) continue
    const monthMark = `accounts:month-closed:${brandId}:${month}`
    const monthToo = !(await ctx.store.get(monthMark))
    await closeBrand(ctx, brandId, dayStart, monthToo ? monthStart : null)
    if (monthToo) await ctx.store.set(monthMark, '1', MONTH_MARK_MS)
    await ctx.store.set(dayMark, '1', DAY_MARK_MS)
  }
}

/** Writes the closes of a brand's accounts, a batch at a time, where they differ from the ones stored. */
async function closeBrand(ctx: AccountsCtx, brandId: number, dayStart: number, monthStart: number | null) {
  for (let after = -1; ; ) {
    const rows = await ctx.db
      .select({
        login: accounts.login,
        prevBalance: accounts.prevBalance,
        prevMonthBalance: accounts.prevMonthBalance,
        day: balanceAt(dayStart),
        month: monthStart === null ? accounts.prevMonthBalance : balanceAt(monthStart),
      })
      .from(accounts)
      .where(and(eq(accounts.brandId, brandId), gt(accounts.login, after)))
      .orderBy(asc(accounts.login))
      .limit(BATCH)
    if (rows.length === 0) return
    after = rows[rows.length - 1]!.login
    const changed = rows.filter((r) => r.day !== r.prevBalance || r.month !== r.prevMonthBalance)
    if (changed.length === 0) continue
    const logins = changed.map((r) => r.login)
    const byLogin = (pick: (r: (typeof changed)[number]) => number) =>
      sql`case ${accounts.login} ${sql.join(
        changed.map((r) => sql`when ${r.login} then ${pick(r)}`),
        sql` `,
      )} end`
    await ctx.db
      .update(accounts)
      .set({ prevBalance: byLogin((r) => r.day), prevMonthBalance: byLogin((r) => r.month) })
      .where(inArray(accounts.login, logins))
    await ctx.accountsRead.invalidateAccount(...logins)
  }
}
