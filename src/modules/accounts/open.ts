import { and, eq } from 'drizzle-orm'
import { hashGeneratedSecret, hashPassword } from '../../kernel/auth/passwords'
import { epochSeconds } from '../../kernel/clock'
import type { Tx } from '../../kernel/db/client'
import { isUniqueViolation } from '../../kernel/db/errors'
import type { Work } from '../../kernel/db/unit-of-work'
import { ApiError, invalid } from '../../kernel/http/errors'
import type { AccountsCtx } from './context'
import { leverageOptions } from './domain/leverage'
import { fromMinor } from './domain/money'
import { refuse } from './errors'
import { AccountCreated } from './events'
import { postOperationTx } from './ledger'
import { accounts, customers, groups } from './schema'
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
  /** Self-service: the leverage must be one the group offers (domain/leverage); staff may set any. */
  selfService?: boolean
  /** false: a DEMO account opens without its group's default deposit (the caller books its own, e.g. prop). */
  initialDeposit?: boolean
  /** The password was generated (shown once): a fast hash, and the account must set its own first. */
  generatedPassword?: boolean
  createdBy: string
  /** Open positions and pending orders it may hold together (accounts.max_positions); absent: no limit. */
  maxPositions?: number
  /**
   * Runs in the account's own transaction once its login is known: a caller records the account with
   * what it belongs to (a prop purchase), so that a crash cannot leave one without the other.
   */
  within?: (tx: Tx, work: Work, login: number) => Promise<void>
}

const DAY_MS = 86_400_000

/**
 * POST /customer/accounts: at most ACCOUNT_OPEN_MAX_PER_DAY openings a day per customer and per client
 * address, counted in the shared store so every instance agrees. An opening takes its place in both counts
 * before it runs, so a burst cannot pass the limit, and gives it back when it opens nothing (a mistyped
 * group, a leverage the group does not offer, the other count's refusal): only openings use the allowance.
 */
export async function openCustomerAccount(
  ctx: AccountsCtx,
  input: OpenAccountInput & { customerId: number },
  ip: string,
) {
  const taken: string[] = []
  try {
    for (const key of [`rl:accounts:open:c${input.customerId}`, `rl:accounts:open:${ip}`]) {
      taken.push(key)
      if ((await ctx.store.incr(key, DAY_MS)) > ctx.settings.opensPerDay)
        throw new ApiError(429, 'TOO_MANY_REQUESTS', 'too many accounts opened today; try again tomorrow')
    }
    return await openAccount(ctx, input)
  } catch (e) {
    // a count not given back (the store away) only errs on the side of the limit
    await Promise.all(taken.map((key) => ctx.store.incr(key, DAY_MS, -1).catch(() => 0)))
    throw e
  }
}

/** The group an opening names, if it may open there (mode, self-service, leverage offered); else refused. */
function offeredGroup(group: typeof groups.$inferSelect | undefined, input: OpenAccountInput) {
  if (
    !group ||
    (input.allowedModes && !input.allowedModes.includes(group.accountMode)) ||
    (input.selfService && group.selfService === 0)
  )
    throw refuse('GROUP_NOT_FOUND', `group ${input.group} not found`)
  if (input.selfService && input.leverage !== undefined) {
    const options = leverageOptions(group.leverage)
    if (!options.includes(input.leverage))
      throw invalid(
        `leverage: ${input.leverage} is not offered by group ${group.name} (${options.join(', ')})`,
      )
  }
  return group
}

/**
 * Opens a trading account in a group of the brand. A DEMO account receives the group's default_deposit
 * as a balance operation in the same transaction, so its balance is backed by the ledger from the start.
 */
export async function openAccount(ctx: AccountsCtx, input: OpenAccountInput) {
  // the group is checked before the password's hash (argon2id, 19 MiB): a mistyped group or leverage, which
  // gives its allowance back (openCustomerAccount), costs a read, not a hash, however often it is sent
  offeredGroup(
    (
      await ctx.db
        .select()
        .from(groups)
        .where(and(eq(groups.brandId, input.brandId), eq(groups.name, input.group)))
    )[0],
    input,
  )
  const passwordHash = input.generatedPassword
    ? await hashGeneratedSecret(input.password)
    : await hashPassword(input.password)
  for (let attempt = 0; ; attempt++) {
    try {
      const result = await ctx.uow.run(async (tx, work) => {
        const group = offeredGroup(
          (
            await tx
              .select()
              .from(groups)
              .where(and(eq(groups.brandId, input.brandId), eq(groups.name, input.group)))
          )[0],
          input,
        )
        if (input.customerId != null) {
          // the owner must be a customer of the same brand (the database enforces it too: 0006 triggers)
          const [owner] = await tx
            .select({ id: customers.id })
            .from(customers)
            .where(and(eq(customers.id, input.customerId), eq(customers.brandId, input.brandId)))
          if (!owner) throw refuse('CUSTOMER_NOT_FOUND', `customer ${input.customerId} not found`)
        }
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
            mustChangePassword: input.generatedPassword ? 1 : 0,
            leverage: input.leverage ?? group.leverage,
            name: input.name ?? '',
            email: input.email ?? '',
            phone: input.phone ?? '',
            country: input.country ?? '',
            city: input.city ?? '',
            address: input.address ?? '',
            zipcode: input.zipcode ?? '',
            comment: input.comment ?? '',
            maxPositions: input.maxPositions ?? 0,
            regdate: epochSeconds(now),
            updateTime: epochSeconds(now),
          })
          .returning()
        // the market module gives it its group's starting watch list (a consumer of this event)
        work.emit(AccountCreated, input.brandId, {
          login,
          group: group.name,
          group_id: group.id,
          mode: group.accountMode,
          customer_id: input.customerId ?? null,
        })
        const deposit =
          group.accountMode === 'DEMO' && group.defaultDeposit > 0 && input.initialDeposit !== false
        if (deposit)
          await postOperationTx(ctx, tx, work, {
            brandId: input.brandId,
            login,
            op: 'OP_BALANCE_IN',
            amountMinor: group.defaultDeposit,
            reason: 'TR_REASON_DEMO_DEPOSIT',
            comment: 'DEMO_INITIAL_DEPOSIT',
            createdBy: input.createdBy,
          })
        await input.within?.(tx, work, login)
        const { passwordHash: _h, ...record } = account
        return {
          account: { ...record, balance: deposit ? group.defaultDeposit : 0 },
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

/** GET /customer/groups: the brand's groups open to self-service, with the leverage each offers. */
export async function selfServiceGroups(ctx: AccountsCtx, brand: { id: number }) {
  const rows = await ctx.db
    .select()
    .from(groups)
    .where(and(eq(groups.brandId, brand.id), eq(groups.selfService, 1)))
    .orderBy(groups.name)
  return {
    rows: rows.map((g) => ({
      name: g.name,
      account_mode: g.accountMode,
      currency: g.currency,
      leverage: g.leverage,
      leverage_options: leverageOptions(g.leverage),
      default_deposit: fromMinor(g.defaultDeposit, g.currency),
    })),
  }
}
