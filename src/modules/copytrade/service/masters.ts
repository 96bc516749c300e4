import { and, eq, isNull, lt } from 'drizzle-orm'
import { isUniqueViolation } from '../../../kernel/db/errors'
import { issueText } from '../../../kernel/http/errors'
import type { UseCase } from '../../../kernel/use-case'
import type { CopyCtx } from '../context'
import { settleSoon } from '../copier/rewards'
import { RewardPolicy } from '../domain/rewards'
import { copyMasters, copySubscriptions, liveSubscription } from '../schema'
import { copyError } from './errors'
import { ownAccount } from './ownership'
import { masterFeeClockTx, moveMasterSubscriptionsTx } from './subscription-status'

/** Who asks: the brand and the session's customer (rule 9: never a body's customer_id). */
export interface Owner {
  brandId: number
  customerId: number
}

/** The scope of a customer's use case: the owner it acts for (the routes' `owner(brand, session)`). */
export interface OwnerScope {
  owner: Owner
}

interface MasterInput {
  login?: number
  name?: string
  description?: string
  allowed_follower_modes?: number
  show_trade_history?: number
  show_followers?: number
  manual_trading_mode?: number
  reward_policy?: Record<string, unknown>
  payout_login?: number
  enabled?: number
  public?: number
}

function parsePolicy(p: Record<string, unknown>) {
  const r = RewardPolicy.safeParse(p)
  if (!r.success) {
    throw copyError('INVALID_REWARD_POLICY', `reward_policy.${issueText(r.error.issues[0]!, 'reward_type')}`)
  }
  const { reward_type, ...params } = r.data
  return { rewardType: reward_type, rewardParams: JSON.stringify(params) }
}

/**
 * The payout account: an enabled REAL account of the same customer whose funds are its own (not a prop
 * account's: accounts' managedFunds) (INVALID_PAYOUT_ACCOUNT).
 */
async function payoutAccount(ctx: CopyCtx, o: Owner, login: number | undefined) {
  if (login === undefined) throw copyError('INVALID_PAYOUT_ACCOUNT', 'payout_login: required')
  const { account, group } = await ownAccount(
    ctx,
    o.brandId,
    o.customerId,
    login,
    'INVALID_PAYOUT_ACCOUNT',
    'payout_login',
  )
  if (account.enable !== 1 || group.accountMode !== 'REAL')
    throw copyError('INVALID_PAYOUT_ACCOUNT', `payout_login: ${login} is not an enabled REAL account`)
  // rewards paid into money that is not the customer's (a funded prop account's, the firm's capital) would
  // prop up its equity against its rules and be paid out as its profit
  const managed = await ctx.accounts.managedFunds(login)
  if (managed) throw copyError('INVALID_PAYOUT_ACCOUNT', `payout_login: ${managed}`)
  return login
}

/** CreateCopyTradeMaster (rules 1-3 of spec 4.12). */
export async function createMaster({
  ctx,
  owner: o,
  input,
}: UseCase<CopyCtx, MasterInput & { login: number; name: string }, OwnerScope>) {
  const { group } = await ownAccount(ctx, o.brandId, o.customerId, input.login)
  if (group.accountMode !== 'REAL')
    throw copyError('MASTER_ACCOUNT_MUST_BE_REAL', `login: ${input.login} is in a ${group.accountMode} group`)
  // a master trading money that is not the customer's (a funded prop account, the firm's capital): its
  // followers' rewards would be earned on the firm's trades
  const managed = await ctx.accounts.managedFunds(input.login)
  if (managed) throw copyError('INVALID_ACCOUNT', `login: ${managed}`)
  if (!input.reward_policy)
    throw copyError('REWARD_POLICY_REQUIRED', 'reward_policy: required when a master is created')
  const policy = parsePolicy(input.reward_policy)
  const payoutLogin = await payoutAccount(ctx, o, input.payout_login ?? input.login)
  const now = ctx.clock.now()
  try {
    const [row] = await ctx.db
      .insert(copyMasters)
      .values({
        brandId: o.brandId,
        customerId: o.customerId,
        login: input.login,
        name: input.name,
        description: input.description ?? '',
        allowedFollowerModes: input.allowed_follower_modes ?? 0,
        showTradeHistory: input.show_trade_history ?? 0,
        showFollowers: input.show_followers ?? 0,
        manualTradingMode: input.manual_trading_mode ?? 2,
        ...policy,
        payoutLogin,
        enabled: input.enabled ?? 1,
        public: input.public ?? 0,
        currency: group.currency,
        createdAt: now,
        updatedAt: now,
      })
      .returning()
    return row!
  } catch (e) {
    if (isUniqueViolation(e))
      throw copyError('MASTER_EXISTS', `login: ${input.login} already has a master profile`)
    throw e
  }
}

/** A live master of the brand by id (MASTER_NOT_FOUND), any owner. */
export async function masterById(ctx: CopyCtx, brandId: number, id: number) {
  const [m] = await ctx.db
    .select()
    .from(copyMasters)
    .where(and(eq(copyMasters.id, id), eq(copyMasters.brandId, brandId), isNull(copyMasters.deletedAt)))
  if (!m) throw copyError('MASTER_NOT_FOUND', `master ${id} not found`)
  return m
}

/** The customer's own master (rule 1): another customer's is PERMISSION_DENIED. */
async function ownMaster(ctx: CopyCtx, o: Owner, id: number) {
  const m = await masterById(ctx, o.brandId, id)
  if (m.customerId !== o.customerId) throw copyError('PERMISSION_DENIED', `master ${id} is not yours`)
  return m
}

export async function myMasters({ ctx, owner: o }: UseCase<CopyCtx, undefined, OwnerScope>) {
  return ctx.db
    .select()
    .from(copyMasters)
    .where(
      and(
        eq(copyMasters.brandId, o.brandId),
        eq(copyMasters.customerId, o.customerId),
        isNull(copyMasters.deletedAt),
      ),
    )
    .orderBy(copyMasters.id)
}

/** Updates a master's profile; the account is fixed, the reward policy may change (new accruals use it). */
export async function updateMaster({
  ctx,
  owner: o,
  id,
  input,
}: UseCase<CopyCtx, MasterInput, OwnerScope & { id: number }>) {
  const m = await ownMaster(ctx, o, id)
  if (input.enabled === 1 && m.blockedReason)
    throw copyError('MASTER_NOT_AVAILABLE', `master ${id} was disabled by staff: ${m.blockedReason}`)
  const set: Partial<typeof copyMasters.$inferInsert> = { updatedAt: ctx.clock.now() }
  if (input.name !== undefined) set.name = input.name
  if (input.description !== undefined) set.description = input.description
  if (input.allowed_follower_modes !== undefined) set.allowedFollowerModes = input.allowed_follower_modes
  if (input.show_trade_history !== undefined) set.showTradeHistory = input.show_trade_history
  if (input.show_followers !== undefined) set.showFollowers = input.show_followers
  if (input.enabled !== undefined) set.enabled = input.enabled
  if (input.public !== undefined) set.public = input.public
  if (input.reward_policy !== undefined) {
    const policy = parsePolicy(input.reward_policy)
    // new terms: they apply to new subscriptions, and to existing ones once their followers accept them
    if (policy.rewardType !== m.rewardType || policy.rewardParams !== m.rewardParams)
      Object.assign(set, policy, { policyVersion: m.policyVersion + 1 })
  }
  if (input.payout_login !== undefined) set.payoutLogin = await payoutAccount(ctx, o, input.payout_login)
  const mode = input.manual_trading_mode
  const modeChange = mode !== undefined && mode !== m.manualTradingMode
  if (modeChange) {
    set.manualTradingMode = mode
    // a stricter mode is new terms: it binds a follower only once accepted (DESIGN rule 3)
    if (mode < m.manualTradingMode) set.policyVersion = m.policyVersion + 1
  }
  const { row, fees } = await ctx.db.transaction(async (tx) => {
    // written over the terms it was decided on: a change of another request since (a new version, another
    // mode) would make this one's version or its looser-or-stricter reading wrong
    const [row] = await tx
      .update(copyMasters)
      .set(set)
      .where(
        and(
          eq(copyMasters.id, m.id),
          eq(copyMasters.policyVersion, m.policyVersion),
          eq(copyMasters.manualTradingMode, m.manualTradingMode),
        ),
      )
      .returning()
    if (!row) throw copyError('INVALID_TRANSITION', `master ${id} changed meanwhile; read it again`)
    // no fee runs while the master is disabled: the clocks stop (what they owed up to now is charged) or run on
    const fees = input.enabled !== undefined ? await masterFeeClockTx(ctx, tx, m.id, row.enabled === 1) : []
    // a looser mode only frees the followers: it is theirs at once, and a later tightening needs their assent
    if (modeChange && mode > m.manualTradingMode)
      await tx
        .update(copySubscriptions)
        .set({ manualTradingMode: mode })
        .where(
          and(
            eq(copySubscriptions.masterId, m.id),
            liveSubscription,
            lt(copySubscriptions.manualTradingMode, mode),
          ),
        )
    return { row, fees }
  })
  // committed: a settlement that fails now stays pending for copytrade.settle
  if (fees.length > 0) await settleSoon(ctx, fees)
  if (modeChange) {
    const followers = await ctx.db
      .select({ login: copySubscriptions.followerLogin })
      .from(copySubscriptions)
      .where(eq(copySubscriptions.masterId, m.id))
    await ctx.forgetManual(...followers.map((f) => f.login))
  }
  return row
}

/**
 * Deletes a master profile: it leaves the marketplace, its live subscriptions end (DISABLED: their copies
 * are closed, and each is charged what its follower's own end charges: the performance fee on the gains
 * so far, a running fee clock's management days and due subscription fee) and its history stays for the
 * rewards.
 */
export async function deleteMaster({
  ctx,
  owner: o,
  id,
}: UseCase<CopyCtx, undefined, OwnerScope & { id: number }>) {
  const m = await ownMaster(ctx, o, id)
  await ctx.uow.run(async (tx, work) => {
    const now = ctx.clock.now()
    await tx
      .update(copyMasters)
      .set({ deletedAt: now, enabled: 0, updatedAt: now })
      .where(eq(copyMasters.id, m.id))
    await moveMasterSubscriptionsTx(ctx, tx, work, m.id, 'master_gone', 'the master profile was deleted')
  })
}
