import { eq } from 'drizzle-orm'
import type { ManagedFunds } from '../accounts'
import type { PropCtx } from './context'
import { propPhases } from './schema'

/**
 * A challenge's accounts hold the firm's capital, not their customer's money: nothing deposits into them,
 * withdraws from them or pays a fee with them (accounts' ManagedFundsPort); a funded account's profit
 * leaves by payouts only. Every phase's account counts, whatever the phase's status.
 */
export const propFunds =
  (ctx: PropCtx): ManagedFunds =>
  async (login) => {
    const [row] = await ctx.db
      .select({ id: propPhases.id })
      .from(propPhases)
      .where(eq(propPhases.accountLogin, login))
      .limit(1)
    return row ? `account ${login} holds a prop challenge's capital: its profit leaves by payouts only` : null
  }
