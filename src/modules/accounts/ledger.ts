import { and, eq, inArray, sql } from 'drizzle-orm'
import type { Tx } from '../../kernel/db/client'
import { isUniqueViolation } from '../../kernel/db/errors'
import { rowsOf, statement } from '../../kernel/db/statement'
import type { Work } from '../../kernel/db/unit-of-work'
import { ApiError, invalid } from '../../kernel/http/errors'
import type { AccountsCtx } from './context'
import { ownFreeMargin } from './domain/margin'
import { fromMinor, roundToMinor, toMinor } from './domain/money'
import { refuse } from './errors'
import { BalanceOperation } from './events'
import { accounts, balanceOperations, groups } from './schema'
import { accountNotFound, marginIn } from './service'

export const OPERATIONS = ['OP_BALANCE_IN', 'OP_BALANCE_OUT', 'OP_CREDIT_IN', 'OP_CREDIT_OUT'] as const
type Operation = (typeof OPERATIONS)[number]

export interface BalanceOperationInput {
  brandId: number
  login: number
  op: Operation
  /**
   * Positive amount in integer minor units of the account currency (DESIGN rule 3: no amount travels
   * between modules as a float); the sign follows the operation.
   */
  amountMinor: number
  reason: string
  comment?: string
  apiData?: Record<string, unknown>
  idempotencyKey?: string
  createdBy: string
  /** A balance-out that may take the balance below zero (a chargeback takes back what was credited). */
  allowNegative?: boolean
  /**
   * A balance-out that may not take the free margin (equity less margin) below zero: a withdrawal, a fee;
   * its own free margin, without the credit. A credit-out may take the credit only as far as the free margin
   * (credit included) goes. The positions are read in this transaction, so a position opened after the
   * caller's own check counts where the money leaves, as money that left meanwhile does.
   */
  keepFreeMargin?: boolean
  /**
   * Money set aside for a request still to be decided (a withdrawal waiting for approval and payout),
   * named by the request; its return carries the same name. The event says so, so a consumer that counts
   * money when it leaves (copy trading's capital) waits for the request's outcome.
   */
  hold?: string | null
}

type OperationRow = typeof balanceOperations.$inferSelect

/** What a ledger row says beside its amounts (the view and the event share it). */
function operationFields(row: OperationRow, currency: string) {
  return {
    id: row.id,
    login: row.login,
    op: row.op,
    ticket: row.ticket,
    currency,
    reason: row.reason,
    comment: row.comment,
    api_data: row.apiData ? JSON.parse(row.apiData) : null,
    idempotency_key: row.idempotencyKey,
    created_by: row.createdBy,
    created_time: Math.floor(row.createdAt / 1000),
  }
}

/** A ledger row as staff see it: amounts in major units of its currency. */
export function operationView(row: OperationRow, currency: string) {
  const { id, login, op, ticket, ...rest } = operationFields(row, currency)
  return {
    id,
    login,
    op,
    ticket,
    amount: fromMinor(row.amount, currency),
    balance_after: fromMinor(row.balanceAfter, currency),
    credit_after: fromMinor(row.creditAfter, currency),
    ...rest,
  }
}

/** A ledger row as `account.balance_operation` carries it: integer minor units with their currency. */
function operationEvent(row: OperationRow, currency: string, hold: string | null) {
  return {
    ...operationFields(row, currency),
    hold,
    amount_minor: row.amount,
    balance_after_minor: row.balanceAfter,
    credit_after_minor: row.creditAfter,
  }
}

// the statements of every balance operation, built once (kernel/db/statement.ts)
const ph = sql.placeholder
const currencyStatement = statement((qb) =>
  qb
    .select({ currency: groups.currency })
    .from(accounts)
    .innerJoin(groups, eq(groups.id, accounts.groupId))
    .where(and(eq(accounts.login, ph('login')), eq(accounts.brandId, ph('brandId')))),
)
const priorStatement = statement((qb) =>
  qb
    .select()
    .from(balanceOperations)
    .where(and(eq(balanceOperations.login, ph('login')), eq(balanceOperations.idempotencyKey, ph('key')))),
)
const INSERTED = [
  'brandId',
  'login',
  'op',
  'amount',
  'balanceAfter',
  'creditAfter',
  'reason',
  'comment',
  'apiData',
  'idempotencyKey',
  'createdBy',
  'createdAt',
] as const
const insertStatement = statement((qb) =>
  qb
    .insert(balanceOperations)
    .values(Object.fromEntries(INSERTED.map((c) => [c, ph(c)])) as never)
    .returning(),
)
/**
 * The total's conditional UPDATE: the balance or the credit, refusing to go below zero or not, and always
 * refusing to pass 2^53 - 1 minor units: SQLite would store it, but no total past it reads back exactly
 * (the driver refused the RETURNING, a 500 after the operation's amount itself passed every check).
 */
const moveStatements = [false, true].map((isCredit) =>
  [false, true].map((guarded) => {
    const column = isCredit ? accounts.credit : accounts.balance
    return statement((qb) =>
      qb
        .update(accounts)
        .set(
          isCredit
            ? { credit: sql`${column} + ${ph('delta')}` }
            : { balance: sql`${column} + ${ph('delta')}` },
        )
        .where(
          and(
            eq(accounts.login, ph('login')),
            eq(accounts.brandId, ph('brandId')),
            guarded ? sql`${column} + ${ph('delta')} >= ${ph('floor')}` : undefined,
            sql`${column} + ${ph('delta')} <= ${Number.MAX_SAFE_INTEGER}`,
          ),
        )
        .returning({ balance: accounts.balance, credit: accounts.credit }),
    )
  }),
)
const moveStatement = (isCredit: boolean, guarded: boolean) =>
  moveStatements[Number(isCredit)]![Number(guarded)]!

/**
 * The balance that keeps an account's free margin at zero without its credit (minor units; its balance
 * less that free margin), from its funds and positions as this transaction sees them: money leaving never
 * spends the broker's credit, nor leaves positions standing on it. A write transaction is the only writer
 * while it runs, so no position can open between this read and the balance's conditional update.
 */
async function freeMarginFloor(ctx: AccountsCtx, tx: Tx, login: number) {
  const { funds, currency, margin } = await marginIn(ctx, tx, login)
  return { balance: funds.balance, minor: funds.balance - roundToMinor(ownFreeMargin(margin), currency) }
}

/**
 * The credit that keeps an account's free margin (credit included) at zero (minor units): taking the
 * broker's credit back may not leave the positions without the margin it carried.
 */
async function creditFloor(ctx: AccountsCtx, tx: Tx, login: number) {
  const { funds, currency, margin } = await marginIn(ctx, tx, login)
  return { balance: funds.credit, minor: funds.credit - roundToMinor(margin.margin_free, currency) }
}

/**
 * Posts one ledger row and moves the account total in the same transaction (DESIGN rules 3 and 4):
 * the total changes by a conditional UPDATE that refuses to go below zero, so two concurrent
 * withdrawals can never both pass. A repeated idempotency key returns the first result.
 */
export async function postOperationTx(ctx: AccountsCtx, tx: Tx, work: Work, input: BalanceOperationInput) {
  const [acct] = (await currencyStatement(tx, { login: input.login, brandId: input.brandId }))
    .rows as unknown as {
    currency: string
  }[]
  if (!acct) throw accountNotFound()
  const minor = input.amountMinor
  if (!Number.isSafeInteger(minor) || minor <= 0)
    throw invalid(`amount: must be a positive whole number of minor units of ${acct.currency}`)

  if (input.idempotencyKey) {
    const [prior] = rowsOf(
      balanceOperations,
      await priorStatement(tx, { login: input.login, key: input.idempotencyKey }),
    )
    if (prior) return { row: prior, currency: acct.currency, idempotent: true }
  }

  const isCredit = input.op.startsWith('OP_CREDIT')
  const delta = input.op.endsWith('_IN') ? minor : -minor
  // money in is always taken (it may be what brings a charged-back balance back above zero)
  const guarded = !(input.allowNegative || delta > 0)
  const floor =
    guarded && input.keepFreeMargin
      ? await (isCredit ? creditFloor : freeMarginFloor)(ctx, tx, input.login)
      : null
  const [after] = (
    await moveStatement(isCredit, guarded)(tx, {
      delta,
      floor: Math.max(0, floor?.minor ?? 0),
      login: input.login,
      brandId: input.brandId,
    })
  ).rows as unknown as { balance: number; credit: number }[]
  // money in is refused only where the total would pass what a number holds exactly
  if (!after && delta > 0)
    throw invalid(
      `amount: would take the ${isCredit ? 'credit' : 'balance'} of account ${input.login} past ${fromMinor(Number.MAX_SAFE_INTEGER, acct.currency)} ${acct.currency}`,
    )
  if (!after)
    throw floor && floor.balance >= minor
      ? refuse(
          'NOT_ENOUGH_FREE_MARGIN',
          `the free margin of account ${input.login}${isCredit ? '' : ' less its credit'} is ${fromMinor(floor.balance - floor.minor, acct.currency)}, lower than ${fromMinor(minor, acct.currency)}`,
        )
      : refuse(
          'NOT_ENOUGH_FUNDS',
          `the ${isCredit ? 'credit' : 'balance'} of account ${input.login} is lower than ${fromMinor(minor, acct.currency)}`,
        )
  const now = ctx.clock.now()
  const [row] = rowsOf(
    balanceOperations,
    await insertStatement(tx, {
      brandId: input.brandId,
      login: input.login,
      op: input.op,
      amount: delta,
      balanceAfter: after.balance,
      creditAfter: after.credit,
      reason: input.reason,
      comment: input.comment ?? '',
      apiData: input.apiData ? JSON.stringify(input.apiData) : null,
      idempotencyKey: input.idempotencyKey ?? null,
      createdBy: input.createdBy,
      createdAt: now,
    }),
  )
  if (!row) throw new Error(`the ledger row of account ${input.login} was not written`)
  work.emit(BalanceOperation, input.brandId, operationEvent(row, acct.currency, input.hold ?? null))
  work.after(`account:${input.login}`, () => ctx.accountsRead.invalidateAccount(input.login))
  return { row, currency: acct.currency, idempotent: false }
}

/** A transfer: value out of one account and into another, each amount in its account's currency. */
export interface TransferInput {
  brandId: number
  from: { login: number; amountMinor: number }
  to: { login: number; amountMinor: number }
  reason: string
  comment?: string
  apiData?: Record<string, unknown>
  /** Keys the two rows (`<key>:out`, `<key>:in`): a second transfer under it changes nothing. */
  idempotencyKey: string
  createdBy: string
  /** The payer keeps its free margin: refused (NOT_ENOUGH_FREE_MARGIN) where the amount would eat into it. */
  keepFreeMargin?: boolean
}

const modeMismatch = () =>
  refuse('ACCOUNT_MODE_MISMATCH', 'value never moves between a DEMO and a REAL account (DESIGN rule 3)')

/**
 * Moves value from one account to another in the caller's transaction: OP_BALANCE_OUT then
 * OP_BALANCE_IN. Refused (409 ACCOUNT_MODE_MISMATCH, nothing written) when one account is DEMO and the
 * other REAL: demo money must never become real money, whichever module asks (copy rewards today); and
 * (ACCOUNT_MANAGED) when either account's funds are managed (a prop challenge's capital).
 */
export async function transferTx(ctx: AccountsCtx, tx: Tx, work: Work, t: TransferInput) {
  const modes = await tx
    .select({ login: accounts.login, mode: groups.accountMode })
    .from(accounts)
    .innerJoin(groups, eq(groups.id, accounts.groupId))
    .where(and(inArray(accounts.login, [t.from.login, t.to.login]), eq(accounts.brandId, t.brandId)))
  const mode = new Map(modes.map((m) => [m.login, m.mode]))
  if (!mode.has(t.from.login) || !mode.has(t.to.login)) throw accountNotFound()
  if (mode.get(t.from.login) !== mode.get(t.to.login)) throw modeMismatch()
  // money that is not the customer's (a prop challenge's capital) pays nobody, and nobody pays into it:
  // a fee paid into a funded account would prop up its equity against its loss limits, then be paid out
  // as profit through the program's split
  const [payer, payee] = await Promise.all([ctx.managedFunds(t.from.login), ctx.managedFunds(t.to.login)])
  const managed = payer ?? payee
  if (managed) throw refuse('ACCOUNT_MANAGED', managed)
  const common = {
    brandId: t.brandId,
    reason: t.reason,
    comment: t.comment,
    apiData: t.apiData,
    createdBy: t.createdBy,
  }
  const out = await postOperationTx(ctx, tx, work, {
    ...common,
    login: t.from.login,
    op: 'OP_BALANCE_OUT',
    amountMinor: t.from.amountMinor,
    idempotencyKey: `${t.idempotencyKey}:out`,
    keepFreeMargin: t.keepFreeMargin,
  })
  const into =
    t.to.amountMinor > 0
      ? await postOperationTx(ctx, tx, work, {
          ...common,
          login: t.to.login,
          op: 'OP_BALANCE_IN',
          amountMinor: t.to.amountMinor,
          idempotencyKey: `${t.idempotencyKey}:in`,
        })
      : null
  return { out, into }
}

/** A staff balance operation from the HTTP route: the amount in major units, converted here, once. */
/**
 * The form of the keys the platform's modules post with (`copy-reward:<accrual>`, `prop:<purchase>:<step>`,
 * `cashier-hold:<request>`): a name, a colon, a number. A staff key of that form could take one before
 * the module posts it, and the module's operation would then answer as a repeat of the staff's.
 */
const PLATFORM_KEY = /^[a-z][a-z-]*:[0-9]/i

export async function postBalanceOperation(
  ctx: AccountsCtx,
  request: Omit<BalanceOperationInput, 'amountMinor'> & { amount: number },
) {
  const { amount, ...rest } = request
  if (rest.idempotencyKey && PLATFORM_KEY.test(rest.idempotencyKey))
    throw invalid(
      "idempotency_key: a name, a colon and a number (copy-reward:17) is the form of the platform's own keys; use another",
    )
  const account = await ctx.accountsRead.account(rest.login)
  const group = account && (await ctx.accountsRead.group(account.groupId))
  if (!account || !group || account.brandId !== rest.brandId) throw accountNotFound()
  const amountMinor = toMinor(amount, group.currency)
  if (amountMinor === null || amountMinor <= 0)
    throw invalid(`amount: must be a positive amount with at most the decimals of ${group.currency}`)
  const input: BalanceOperationInput = { ...rest, amountMinor }
  const post = () => ctx.uow.run((tx, work) => postOperationTx(ctx, tx, work, input))
  let result: Awaited<ReturnType<typeof postOperationTx>>
  try {
    result = await post()
  } catch (e) {
    // Two requests raced with one idempotency key: the unique index let one through; answer with it.
    if (input.idempotencyKey && isUniqueViolation(e)) result = await post()
    else throw e
  }
  // a key repeated with another operation is a client's mistake, not a retry (Stripe's rule)
  if (result.idempotent && (result.row.op !== input.op || Math.abs(result.row.amount) !== amountMinor))
    throw new ApiError(
      409,
      'IDEMPOTENCY_KEY_REUSED',
      `idempotency_key: already used for operation ${result.row.id} of another type or amount; use a new key`,
    )
  return { operation: operationView(result.row, result.currency), idempotent: result.idempotent }
}

/** A closed trade's result for the ledger: profit + swap + commission, in minor units of the account currency. */
export interface TradeResultInput {
  brandId: number
  login: number
  amountMinor: number
  ticket: number
  comment: string
  now: number
}

/** Rows per statement (the CASE and VALUES lists grow with them). */
const RESULTS_PER_STATEMENT = 200

/**
 * Books closed trades' results as OP_TRADE ledger rows, in the closing transaction, with one UPDATE of
 * the accounts and one INSERT of the rows per 200 results however many trades close together (the
 * group commit of closes; on a remote database each statement is a round trip). Each row's balance_after
 * is the balance once it and the rows before it were booked, as if they had been booked one by one.
 * Unlike a withdrawal it may take the balance below zero: a stop-out can close at a loss larger than the
 * deposit, and the ledger must still say so exactly.
 */
export async function postTradeResultsTx(tx: Tx, results: readonly TradeResultInput[]) {
  for (let i = 0; i < results.length; i += RESULTS_PER_STATEMENT)
    await postChunk(tx, results.slice(i, i + RESULTS_PER_STATEMENT))
}

async function postChunk(tx: Tx, results: readonly TradeResultInput[]) {
  if (results.length === 0) return
  const sums = new Map<number, number>()
  for (const r of results) sums.set(r.login, (sums.get(r.login) ?? 0) + r.amountMinor)
  const logins = [...sums.keys()]
  const updated = await tx
    .update(accounts)
    .set({
      balance: sql`${accounts.balance} + case ${accounts.login} ${sql.join(
        logins.map((l) => sql`when ${l} then ${sums.get(l)!}`),
        sql` `,
      )} end`,
    })
    .where(inArray(accounts.login, logins))
    .returning({
      login: accounts.login,
      brandId: accounts.brandId,
      balance: accounts.balance,
      credit: accounts.credit,
    })
  const after = new Map(updated.map((u) => [u.login, u]))
  // what later rows of the same login still add, taken off the final balance row by row
  const later = new Map(sums)
  const rows = results.map((r) => {
    const a = after.get(r.login)
    if (!a || a.brandId !== r.brandId) throw accountNotFound()
    const rest = later.get(r.login)! - r.amountMinor
    later.set(r.login, rest)
    return {
      brandId: r.brandId,
      login: r.login,
      op: 'OP_TRADE' as const,
      ticket: r.ticket,
      amount: r.amountMinor,
      balanceAfter: a.balance - rest,
      creditAfter: a.credit,
      reason: 'TR_REASON_TRADE',
      comment: r.comment,
      createdBy: 'trading',
      createdAt: r.now,
    }
  })
  // nothing reads the rows back: on sqld they ride with the transaction's next round trip
  const q = tx.insert(balanceOperations).values(rows).toSQL()
  await tx.deferred(q.sql, q.params as (string | number | null)[])
}
