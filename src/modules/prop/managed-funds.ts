import { and, eq, sql } from 'drizzle-orm'
import type { ManagedFunds } from '../accounts'
import type { PropCtx } from './context'
import { propPhases, propPrograms } from './schema'

const managed = (login: number) =>
  `account ${login} holds a prop challenge's capital: its profit leaves by payouts only`

/**
 * A challenge's accounts hold the firm's capital, not their customer's money: nothing deposits into them,
 * withdraws from them or pays a fee with them (accounts' ManagedFundsPort); a funded account's profit
 * leaves by payouts only. An account counts when a phase has it (whatever the phase's status), or when
 * its group is a staff-only group a program of its brand trades in: the next phase's account is opened
 * and funded before its phase row is written, and a failure between the two must not leave that capital
 * free.
 */
export const propFunds =
  (ctx: PropCtx): ManagedFunds =>
  async (login) => {
    const [phase] = await ctx.db
      .select({ id: propPhases.id })
      .from(propPhases)
      .where(eq(propPhases.accountLogin, login))
      .limit(1)
    if (phase) return managed(login)
    const account = await ctx.accounts.read.account(login)
    const group = account && (await ctx.accounts.read.group(account.groupId))
    // only a group customers cannot open accounts in (a prop group): a program misconfigured with a
    // regular group must not freeze every customer account in it
    if (group?.selfService !== 0) return null
    const [program] = await ctx.db
      .select({ id: propPrograms.id })
      .from(propPrograms)
      .where(
        and(
          eq(propPrograms.brandId, group.brandId),
          sql`exists (select 1 from json_each(${propPrograms.steps}) s
            where json_extract(s.value, '$.account_group') = ${group.name})`,
        ),
      )
      .limit(1)
    return program ? managed(login) : null
  }
