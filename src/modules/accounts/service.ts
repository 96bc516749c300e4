import { and, eq, sql } from 'drizzle-orm'
import type { Session } from '../../kernel/auth/session'
import type { Brand } from '../../kernel/brand/registry'
import { epochSeconds } from '../../kernel/clock'
import type { Queryable } from '../../kernel/db/client'
import { invalid, isRefused } from '../../kernel/http/errors'
import type { AccountsCtx } from './context'
import { accountScope } from './domain/access'
import { type MarginSnapshot, marginSnapshot } from './domain/margin'
import { fromMinor } from './domain/money'
import { refuse } from './errors'
import type { AccountRecord, GroupRecord } from './read-model'
import { accounts } from './schema'

export const accountNotFound = () => refuse('ACCOUNT_NOT_FOUND', 'account not found')
export const groupNotFound = () => refuse('GROUP_NOT_FOUND', 'the account group does not exist')

export interface AccountView {
  account: AccountRecord
  group: GroupRecord
}

/**
 * The account a session asked for, scoped by brand and owner (DESIGN rule 5). Another customer's or
 * another brand's account answers exactly like a missing one.
 */
export async function findScopedAccount(
  ctx: AccountsCtx,
  brand: Brand,
  session: Session,
  login: number | undefined,
): Promise<AccountRecord> {
  const scope = accountScope(session, login)
  if (scope.kind === 'invalid') throw invalid(scope.message)
  if (scope.kind === 'hidden') throw accountNotFound()
  if (scope.kind === 'only-account-of-customer') {
    const owned = await ctx.db
      .select({ login: accounts.login })
      .from(accounts)
      .where(and(eq(accounts.brandId, brand.id), eq(accounts.customerId, scope.customerId)))
      .limit(2)
    if (owned.length > 1) throw invalid('login: required when the customer has several accounts')
    if (owned.length === 0) throw accountNotFound()
    return findScopedAccount(ctx, brand, session, owned[0].login)
  }
  // a user session's own account was read by the route guard for this request
  const own = session.type === 'SESSION_USER' && scope.login === session.login
  const account = own
    ? ((session.principal as AccountRecord | undefined) ?? (await ctx.accountsRead.account(scope.login)))
    : await ctx.accountsRead.account(scope.login)
  // The read model is keyed by login only; the brand and owner predicate is applied to every row it returns.
  if (!account || account.brandId !== brand.id) throw accountNotFound()
  if (scope.customerId !== undefined && account.customerId !== scope.customerId) throw accountNotFound()
  return account
}

export async function loadAccountView(
  ctx: AccountsCtx,
  brand: Brand,
  session: Session,
  login: number | undefined,
): Promise<AccountView> {
  const account = await findScopedAccount(ctx, brand, session, login)
  const group = await ctx.accountsRead.group(account.groupId)
  if (!group || group.brandId !== brand.id) throw groupNotFound()
  return { account, group }
}

/**
 * loadAccountView for routes whose spec names another code than ACCOUNT_NOT_FOUND for a login the session
 * may not see (trading: USER_NOT_FOUND, market: USER_NOT_FOUND_OR_INCORRECT); the scoping is the same.
 */
export async function loadAccountViewAs(
  ctx: AccountsCtx,
  brand: Brand,
  session: Session,
  login: number,
  notFound: () => Error,
): Promise<AccountView> {
  try {
    return await loadAccountView(ctx, brand, session, login)
  } catch (e) {
    if (isRefused(e) && e.code === 'ACCOUNT_NOT_FOUND') throw notFound()
    throw e
  }
}

/**
 * Live margin figures: the ledger totals plus the exposure of open positions (floating profit, margin,
 * commission and swap at the current quotes), which the trading module provides through the context.
 */
export async function liveMargin(ctx: AccountsCtx, view: AccountView): Promise<MarginSnapshot | null> {
  const cur = view.group.currency
  const e = await ctx.exposure(view.account, view.group)
  if (!e) return null
  return marginSnapshot(
    {
      balance: fromMinor(view.account.balance, cur),
      credit: fromMinor(view.account.credit, cur),
      ...e,
    },
    cur,
  )
}

export async function requireMargin(ctx: AccountsCtx, view: AccountView): Promise<MarginSnapshot> {
  const m = await liveMargin(ctx, view)
  if (!m) throw refuse('INVALID_MARGIN_LEVEL', 'margin information could not be calculated')
  return m
}

/** 0 normal, 1 margin call reached, 2 stop-out level reached. */
export function levelType(m: MarginSnapshot, group: GroupRecord): number {
  if (m.margin <= 0) return 0
  if (m.margin_level <= group.stopOut) return 2
  if (m.margin_level <= group.marginCall) return 1
  return 0
}

/** Spec 2.1 (GET /account/me). */
export function profileView(view: AccountView, m: MarginSnapshot) {
  const { account: a, group: g } = view
  return {
    id: a.login,
    login: a.login,
    currency: g.currency,
    group: g.name,
    comment: a.comment,
    avatar: a.avatar,
    email: a.email,
    name: a.name,
    phone: a.phone,
    address: a.address,
    city: a.city,
    state: a.state,
    country: a.country,
    zipcode: a.zipcode,
    user_color: a.userColor,
    enable: a.enable,
    enable_read_only: a.enableReadOnly,
    read_only_reason: a.readOnlyReason,
    enable_change_password: a.enableChangePassword,
    leverage: a.leverage,
    regdate: a.regdate,
    prevbalance: fromMinor(a.prevBalance, g.currency),
    prevmonthbalance: fromMinor(a.prevMonthBalance, g.currency),
    balance: m.balance,
    storage: m.storage,
    commission: m.commission,
    credit: m.credit,
    margin: m.margin,
    margin_free: m.margin_free,
    margin_level: m.margin_level,
    equity: m.equity,
  }
}

/** Spec 2.3 (GET /balance/me). */
export function balanceView(view: AccountView, m: MarginSnapshot) {
  return {
    balance: m.balance,
    credit: m.credit,
    profit: m.floatingProfit,
    commission: m.commission,
    storage: m.storage,
    margin: m.margin,
    margin_free: m.margin_free,
    margin_level: m.margin_level,
    equity: m.equity,
    level_type: levelType(m, view.group),
    leverage: view.account.leverage,
  }
}

export interface ProfileUpdate {
  login?: number
  name?: string
  avatar?: string
  phone?: string
  address?: string
  city?: string
  state?: string
  country?: string
  zipcode?: string
  user_color?: string
}

export async function updateProfile(ctx: AccountsCtx, brand: Brand, session: Session, input: ProfileUpdate) {
  const account = await findScopedAccount(ctx, brand, session, input.login)
  if (input.avatar && !(await ctx.uploads.avatarBelongs(ctx.db, brand, session, account.login, input.avatar)))
    throw invalid('avatar: not an account_avatar upload of this account')
  const now = epochSeconds(ctx.clock.now())
  const fields = {
    name: input.name,
    avatar: input.avatar,
    phone: input.phone,
    address: input.address,
    city: input.city,
    state: input.state,
    country: input.country,
    zipcode: input.zipcode,
    userColor: input.user_color,
  }
  const set = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined))
  const [row] = await ctx.uow.run((tx, work) => {
    work.after(`account:${account.login}`, () => ctx.accountsRead.invalidateAccount(account.login))
    return tx
      .update(accounts)
      .set({ ...set, updateTime: now })
      .where(and(eq(accounts.login, account.login), eq(accounts.brandId, brand.id)))
      .returning()
  })
  if (!row) throw accountNotFound()
  return {
    login: row.login,
    avatar: row.avatar,
    name: row.name,
    phone: row.phone,
    address: row.address,
    city: row.city,
    state: row.state,
    country: row.country,
    zipcode: row.zipcode,
    user_color: row.userColor,
    update_time: row.updateTime,
  }
}

/** Next free login: above every existing one, starting at 100001. */
export async function nextLogin(tx: Queryable): Promise<number> {
  const [r] = await tx.select({ max: sql<number | null>`max(${accounts.login})` }).from(accounts)
  return Math.max(r?.max ?? 0, 100000) + 1
}
