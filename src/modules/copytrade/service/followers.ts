import { and, eq } from 'drizzle-orm'
import { isUniqueViolation } from '../../../kernel/db/errors'
import { invalid, issueText } from '../../../kernel/http/errors'
import type { UseCase } from '../../../kernel/use-case'
import { accountOf } from '../accounts-of'
import type { CopyCtx } from '../context'
import { SubscriptionSettings } from '../domain/settings'
import { copyFollowers, copySubscriptions, liveSubscription } from '../schema'
import { copyError } from './errors'
import type { Owner, OwnerScope } from './masters'
import { accountMode, ownAccount } from './ownership'

/**
 * Settings checked: their schema, and `symbols` naming symbols that exist (as written: EURUSD, not
 * eurusd); every problem a 400 naming its field, under `at` (where the body holds them) when given.
 */
export async function parseSettings(ctx: CopyCtx, input: Record<string, unknown>, at?: string) {
  const r = SubscriptionSettings.safeParse(input)
  if (!r.success) {
    const i = r.error.issues[0]!
    throw invalid(issueText(at ? { ...i, path: [at, ...i.path] } : i))
  }
  await ctx.market.refdata.fresh()
  const unknown = r.data.symbols.filter((s) => !ctx.market.refdata.symbol(s))
  if (unknown.length > 0) throw invalid(`symbols: no such symbol ${unknown.join(', ')}`)
  return r.data
}

function followerView(f: typeof copyFollowers.$inferSelect, mode: string) {
  return {
    login: f.login,
    account_mode: mode,
    defaults: SubscriptionSettings.parse(JSON.parse(f.defaults)),
    created_time: Math.floor(f.createdAt / 1000),
    updated_time: Math.floor(f.updatedAt / 1000),
  }
}

/** The customer's follower profile of `login` (rule 4): FOLLOWER_NOT_FOUND when it has none. */
export async function ownFollower(ctx: CopyCtx, o: Owner, login: number) {
  const { group } = await ownAccount(ctx, o.brandId, o.customerId, login)
  const [f] = await ctx.db
    .select()
    .from(copyFollowers)
    .where(and(eq(copyFollowers.login, login), eq(copyFollowers.brandId, o.brandId)))
  if (!f) throw copyError('FOLLOWER_NOT_FOUND', `login: ${login} has no follower profile`)
  return { follower: f, group }
}

export async function createFollower({
  ctx,
  owner: o,
  input,
}: UseCase<CopyCtx, { login: number; defaults?: Record<string, unknown> }, OwnerScope>) {
  const login = input.login
  const defaults = input.defaults ?? {}
  const { group } = await ownAccount(ctx, o.brandId, o.customerId, login)
  const settings = await parseSettings(ctx, defaults, 'defaults')
  const now = ctx.clock.now()
  try {
    const [f] = await ctx.db
      .insert(copyFollowers)
      .values({
        login,
        brandId: o.brandId,
        customerId: o.customerId,
        defaults: JSON.stringify(settings),
        createdAt: now,
        updatedAt: now,
      })
      .returning()
    return followerView(f!, accountMode(group))
  } catch (e) {
    if (isUniqueViolation(e))
      throw copyError('FOLLOWER_EXISTS', `login: ${login} already has a follower profile`)
    throw e
  }
}

/**
 * Read-merge-writes of settings (a subscription's, a profile's defaults) tried when another change commits
 * between the read and the write; then 409 INVALID_TRANSITION.
 */
export const SETTINGS_WRITE_TRIES = 3

export async function updateFollower({
  ctx,
  owner: o,
  login,
  input: defaults,
}: UseCase<CopyCtx, Record<string, unknown>, OwnerScope & { login: number }>) {
  // merged onto the defaults read and written only over them: a change committed since is read again and
  // kept, a few times, then 409
  for (let attempt = 1; ; attempt++) {
    const { follower, group } = await ownFollower(ctx, o, login)
    const merged = await parseSettings(ctx, { ...JSON.parse(follower.defaults), ...defaults }, 'defaults')
    const [f] = await ctx.db
      .update(copyFollowers)
      .set({ defaults: JSON.stringify(merged), updatedAt: ctx.clock.now() })
      .where(and(eq(copyFollowers.login, login), eq(copyFollowers.defaults, follower.defaults)))
      .returning()
    if (f) return followerView(f, accountMode(group))
    if (attempt >= SETTINGS_WRITE_TRIES)
      throw copyError('INVALID_TRANSITION', `follower ${login} changed meanwhile; read it again`)
  }
}

/** A follower profile with live subscriptions is kept: they are disabled first (409 otherwise). */
export async function deleteFollower({
  ctx,
  owner: o,
  login,
}: UseCase<CopyCtx, undefined, OwnerScope & { login: number }>) {
  await ownFollower(ctx, o, login)
  const [live] = await ctx.db
    .select({ id: copySubscriptions.id })
    .from(copySubscriptions)
    .where(and(eq(copySubscriptions.followerLogin, login), liveSubscription))
    .limit(1)
  if (live)
    throw copyError(
      'ALREADY_SUBSCRIBED',
      `login: ${login} still copies (subscription ${live.id}); disable it first`,
    )
  await ctx.db.delete(copyFollowers).where(eq(copyFollowers.login, login))
}

export async function myFollowers({ ctx, owner: o }: UseCase<CopyCtx, undefined, OwnerScope>) {
  const rows = await ctx.db
    .select()
    .from(copyFollowers)
    .where(and(eq(copyFollowers.brandId, o.brandId), eq(copyFollowers.customerId, o.customerId)))
    .orderBy(copyFollowers.login)
  const out = []
  for (const f of rows) {
    const { group } = await accountOf(ctx, f.login)
    out.push(followerView(f, group ? accountMode(group) : 'DEMO'))
  }
  return out
}
