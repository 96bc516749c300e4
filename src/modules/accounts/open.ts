import { and, eq } from 'drizzle-orm'
import type { AppContext } from '../../context'
import { hashPassword } from '../../platform/auth/passwords'
import { epochSeconds } from '../../platform/clock'
import { isUniqueViolation } from '../../platform/db/errors'
import { ApiError } from '../../platform/errors'
import { enqueueEvent } from '../../platform/outbox'
import { fromMinor } from './domain/money'
import { postOperationTx } from './ledger'
import { accounts, groups } from './schema'
import { nextLogin } from './service'

export interface OpenAccountInput {
  brandId: number
  customerId?: number | null
  group: string
  password: string
  leverage?: number
  name?: string
  email?: string
  phone?: string
  country?: string
  city?: string
  address?: string
  zipcode?: string
  comment?: string
  /** Restrict to REAL or DEMO groups (customers choose among the brand's groups of that mode). */
  allowedModes?: ('REAL' | 'DEMO')[]
  createdBy: string
}

/**
 * Opens a trading account in a group of the brand. A DEMO account receives the group's default_deposit
 * as a balance operation in the same transaction, so its balance is backed by the ledger from the start.
 */
export async function openAccount(ctx: AppContext, input: OpenAccountInput) {
  const passwordHash = await hashPassword(input.password)
  for (let attempt = 0; ; attempt++) {
    try {
      const result = await ctx.db.transaction(async (tx) => {
        const [group] = await tx
          .select()
          .from(groups)
          .where(and(eq(groups.brandId, input.brandId), eq(groups.name, input.group)))
        if (!group || (input.allowedModes && !input.allowedModes.includes(group.accountMode)))
          throw new ApiError(404, 'GROUP_NOT_FOUND', `group ${input.group} not found`)
        const now = ctx.clock.now()
        const login = await nextLogin(tx)
        const [account] = await tx
          .insert(accounts)
          .values({
            login,
            brandId: input.brandId,
            customerId: input.customerId ?? null,
            groupId: group.id,
            passwordHash,
            leverage: input.leverage ?? group.leverage,
            name: input.name ?? '',
            email: input.email ?? '',
            phone: input.phone ?? '',
            country: input.country ?? '',
            city: input.city ?? '',
            address: input.address ?? '',
            zipcode: input.zipcode ?? '',
            comment: input.comment ?? '',
            regdate: epochSeconds(now),
            updateTime: epochSeconds(now),
          })
          .returning()
        await enqueueEvent(
          tx,
          input.brandId,
          'account.created',
          { login, group: group.name, mode: group.accountMode, customer_id: input.customerId ?? null },
          now,
        )
        if (group.accountMode === 'DEMO' && group.defaultDeposit > 0)
          await postOperationTx(ctx, tx, {
            brandId: input.brandId,
            login,
            op: 'OP_BALANCE_IN',
            amount: fromMinor(group.defaultDeposit, group.currency),
            reason: 'TR_REASON_DEMO_DEPOSIT',
            comment: 'DEMO_INITIAL_DEPOSIT',
            createdBy: input.createdBy,
          })
        const { passwordHash: _h, ...record } = account
        return {
          account: { ...record, balance: group.accountMode === 'DEMO' ? group.defaultDeposit : 0 },
          group,
        }
      })
      return result
    } catch (e) {
      // Two openings picked the same next login; the primary key refused one. Try again.
      if (attempt < 3 && isUniqueViolation(e)) continue
      throw e
    }
  }
}
