import { and, desc, eq, lt, sql } from 'drizzle-orm'
import type { Brand } from '../../kernel/brand/registry'
import { epochSeconds } from '../../kernel/clock'
import type { Tx } from '../../kernel/db/client'
import { isUniqueViolation } from '../../kernel/db/errors'
import { invalid } from '../../kernel/http/errors'
import type { AccountsCtx } from './context'
import { fromMinor, toMinor } from './domain/money'
import { refuse } from './errors'
import { AccountUpdated, GroupUpdated } from './events'
import { operationView } from './ledger'
import { accounts, balanceOperations, groups } from './schema'
import { accountNotFound } from './service'

function groupView(g: typeof groups.$inferSelect) {
  return {
    id: g.id,
    name: g.name,
    account_mode: g.accountMode,
    currency: g.currency,
    leverage: g.leverage,
    default_deposit: fromMinor(g.defaultDeposit, g.currency),
    margin_call: g.marginCall,
    stop_out: g.stopOut,
    self_service: g.selfService,
  }
}

export async function listGroups(ctx: AccountsCtx, brand: Brand) {
  const rows = await ctx.db.select().from(groups).where(eq(groups.brandId, brand.id)).orderBy(groups.name)
  return { rows: rows.map(groupView) }
}

export interface AccountSettings {
  group?: string
  leverage?: number
  enable?: number
  enable_read_only?: number
  enable_change_password?: number
  comment?: string
}

/**
 * The group an account may move to: of its brand, with its currency and its mode. The balance and the
 * ledger are kept in minor units of the group's currency, so another currency would relabel the money
 * without converting it; and a DEMO account moved to a REAL group would turn demo money real (DESIGN
 * rule 3). Either is a new account and a transfer, not a move. And one that can price and trade every
 * symbol the account holds open positions or pending orders in (MT5 refuses such a move too): in one
 * that cannot, its margin could not be computed, so it could neither sign in nor close, and no stop-out
 * would ever reach it.
 */
async function groupToMoveTo(ctx: AccountsCtx, tx: Tx, brand: Brand, login: number, name: string) {
  const [g] = await tx
    .select({ id: groups.id, currency: groups.currency, mode: groups.accountMode })
    .from(groups)
    .where(and(eq(groups.brandId, brand.id), eq(groups.name, name)))
  if (!g) throw refuse('GROUP_NOT_FOUND', `group ${name} not found`)
  const [now] = await tx
    .select({ currency: groups.currency, mode: groups.accountMode })
    .from(accounts)
    .innerJoin(groups, eq(groups.id, accounts.groupId))
    .where(and(eq(accounts.login, login), eq(accounts.brandId, brand.id)))
  if (!now) throw accountNotFound()
  if (now.mode !== g.mode)
    throw refuse(
      'ACCOUNT_MODE_MISMATCH',
      `group: ${name} holds ${g.mode} accounts; account ${login} is ${now.mode} (demo money never becomes real)`,
    )
  if (now.currency !== g.currency)
    throw refuse(
      'CURRENCY_MISMATCH',
      `group: ${name} holds ${g.currency}; account ${login} holds ${now.currency}, which a move would not convert`,
    )
  // the orders as this write transaction sees them: none opens between this read and the move
  const unfit = await ctx.unfitSymbols(tx, login, g.id)
  if (unfit.length > 0)
    throw refuse(
      'GROUP_LACKS_SYMBOLS',
      `group: ${name} cannot price and trade ${unfit.join(', ')}, which account ${login} holds open positions or pending orders in; close them or give the group settings for their security groups first`,
    )
  return g.id
}

/** Staff change an account's group, leverage, flags or comment (brand-scoped). */
export async function changeAccountSettings(
  ctx: AccountsCtx,
  brand: Brand,
  login: number,
  s: AccountSettings,
) {
  const updated = await ctx.uow.run(async (tx, work) => {
    const groupId = s.group === undefined ? undefined : await groupToMoveTo(ctx, tx, brand, login, s.group)
    const set = Object.fromEntries(
      Object.entries({
        groupId,
        leverage: s.leverage,
        enable: s.enable,
        enableReadOnly: s.enable_read_only,
        // staff decide now: a module's reason no longer applies
        readOnlyReason:
          s.enable_read_only === undefined ? undefined : s.enable_read_only ? 'set by staff' : '',
        enableChangePassword: s.enable_change_password,
        comment: s.comment,
      }).filter(([, v]) => v !== undefined),
    )
    const now = ctx.clock.now()
    // a disable ends every session of the account at once (its tokens carry the old epoch)
    const epoch = s.enable === 0 ? { sessionEpoch: sql`${accounts.sessionEpoch} + 1` } : {}
    const [row] = await tx
      .update(accounts)
      .set({ ...set, ...epoch, updateTime: epochSeconds(now) })
      .where(and(eq(accounts.login, login), eq(accounts.brandId, brand.id)))
      .returning({ login: accounts.login })
    if (!row) throw accountNotFound()
    work.emit(AccountUpdated, brand.id, { login, changes: { ...s } })
    work.after(`account:${login}`, () => ctx.accountsRead.invalidateAccount(login))
    return row
  })
  return updated
}

/** The ledger of an account, newest first, with a cursor (the id of the last row seen). */
export async function listOperations(
  ctx: AccountsCtx,
  brand: Brand,
  login: number,
  page: { cursor?: number; limit: number },
) {
  const [acct] = await ctx.db
    .select({ currency: groups.currency })
    .from(accounts)
    .innerJoin(groups, eq(groups.id, accounts.groupId))
    .where(and(eq(accounts.login, login), eq(accounts.brandId, brand.id)))
  if (!acct) throw accountNotFound()
  const rows = await ctx.db
    .select()
    .from(balanceOperations)
    .where(
      and(
        eq(balanceOperations.login, login),
        eq(balanceOperations.brandId, brand.id),
        page.cursor ? lt(balanceOperations.id, page.cursor) : undefined,
      ),
    )
    .orderBy(desc(balanceOperations.id))
    .limit(page.limit + 1)
  const more = rows.length > page.limit
  const items = rows.slice(0, page.limit)
  return {
    rows: items.map((r) => operationView(r, acct.currency)),
    has_more: more,
    next_cursor: more ? items[items.length - 1].id : null,
  }
}

interface GroupInput {
  name: string
  account_mode: 'REAL' | 'DEMO'
  currency: string
  leverage: number
  default_deposit?: number
  margin_call?: number
  stop_out?: number
  self_service?: number
}

type GroupChanges = Partial<Omit<GroupInput, 'currency' | 'account_mode'>>

const groupExists = (name: string) => refuse('GROUP_EXISTS', `group ${name} already exists in this brand`)

function depositMinor(amount: number, currency: string) {
  const m = toMinor(amount, currency)
  if (m === null || m < 0) throw invalid(`default_deposit: not a non-negative amount of ${currency}`)
  return m
}

/** The stop-out level must lie below the margin call level (both margin levels in percent). */
function checkLevels(marginCall: number, stopOut: number) {
  if (stopOut >= marginCall) throw invalid('stop_out: must be below margin_call')
}

/**
 * A new group of the brand. Its security settings start empty (nothing visible or tradable) until staff
 * add them with PUT /manager/groups/{id}/securities/{sec_group}.
 */
export async function createGroup(ctx: AccountsCtx, brand: Brand, g: GroupInput) {
  const marginCall = g.margin_call ?? 100
  const stopOut = g.stop_out ?? 50
  checkLevels(marginCall, stopOut)
  // its balances would hold money no price converts: margins and profits of every symbol unknown
  const unusable = await ctx.currencyUse(g.currency)
  if (unusable) throw invalid(`currency: ${unusable}`)
  try {
    const [row] = await ctx.db.transaction((tx) =>
      tx
        .insert(groups)
        .values({
          brandId: brand.id,
          name: g.name,
          accountMode: g.account_mode,
          currency: g.currency,
          leverage: g.leverage,
          defaultDeposit: depositMinor(g.default_deposit ?? 0, g.currency),
          marginCall,
          stopOut,
          selfService: g.self_service ?? 1,
          createdAt: ctx.clock.now(),
        })
        .returning(),
    )
    return groupView(row)
  } catch (e) {
    if (isUniqueViolation(e)) throw groupExists(g.name)
    throw e
  }
}

/**
 * Renames a group or changes its leverage, demo deposit, margin call or stop-out level (brand-scoped). A
 * rename is refused (409 GROUP_IN_USE) while a module names the group (GroupNamesPort: prop's programs
 * and running challenges open their accounts in it by name), checked in the rename's transaction. The
 * change is an event (`group.updated`): the engine looks again at the group's accounts with positions,
 * whose margin level now meets other margin call and stop-out levels.
 */
export async function updateGroup(ctx: AccountsCtx, brand: Brand, id: number, c: GroupChanges) {
  try {
    const row = await ctx.uow.run(async (tx, work) => {
      const [current] = await tx
        .select()
        .from(groups)
        .where(and(eq(groups.id, id), eq(groups.brandId, brand.id)))
      if (!current) throw refuse('GROUP_NOT_FOUND', 'group not found in this brand')
      checkLevels(c.margin_call ?? current.marginCall, c.stop_out ?? current.stopOut)
      if (c.name !== undefined && c.name !== current.name) {
        const use = await ctx.groupNameUse(tx, brand.id, current.name)
        if (use) throw refuse('GROUP_IN_USE', `name: group ${current.name} cannot be renamed: ${use}`)
      }
      const set = Object.fromEntries(
        Object.entries({
          name: c.name,
          leverage: c.leverage,
          defaultDeposit:
            c.default_deposit === undefined ? undefined : depositMinor(c.default_deposit, current.currency),
          marginCall: c.margin_call,
          stopOut: c.stop_out,
          selfService: c.self_service,
        }).filter(([, v]) => v !== undefined),
      )
      const [r] = await tx.update(groups).set(set).where(eq(groups.id, id)).returning()
      work.emit(GroupUpdated, brand.id, { group_id: id, changes: { ...c } })
      // before the event is delivered: the engine reads the new levels through the read model
      work.after(`group:${id}`, () => ctx.accountsRead.invalidateGroup(id))
      return r
    })
    return groupView(row)
  } catch (e) {
    if (isUniqueViolation(e)) throw groupExists(c.name ?? '')
    throw e
  }
}
