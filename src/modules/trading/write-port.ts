import { and, desc, eq, inArray, lt } from 'drizzle-orm'
import { isRefused } from '../../kernel/http/errors'
import { refuse } from './errors'
import { orders, tradeRequests } from './schema'
import {
  cancelOrder,
  closeOrder,
  modifyOrder,
  type OpenInput,
  openFor,
  type TradingServices,
} from './service'

/** What a call of the write port answers: done (with what), or refused with the code and reason. */
export type TradeResult<T> = ({ ok: true } & T) | { ok: false; code: string; reason: string }

/**
 * A trade asked by a module, not a session: who acts (`copy:<subscription>`, `prop:<challenge>`,
 * `staff-tool:<name>`), recorded on the order; the brand it acts in; and an idempotency key, unique per
 * account, so a redelivered event repeats nothing.
 */
export interface SystemRequest {
  brandId: number
  actor: string
  idempotencyKey: string
}

const ORDER_STATE = {
  ticket: orders.ticket,
  login: orders.login,
  symbol: orders.symbol,
  cmd: orders.cmd,
  state: orders.state,
  volume: orders.volume,
  openPrice: orders.openPrice,
  /** Epoch milliseconds. */
  openTime: orders.openTime,
  sl: orders.sl,
  tp: orders.tp,
  /** Epoch seconds; 0 = good till cancelled. */
  expiration: orders.expiration,
  closePrice: orders.closePrice,
  closeTime: orders.closeTime,
  /** Minor units of the account currency. */
  profit: orders.profit,
  commission: orders.commission,
  storage: orders.storage,
  parent: orders.parent,
  /** Who placed it: `client`, `staff:<id>` or a module's (`copy:<subscription>`). */
  actor: orders.actor,
}
/** An order as other modules read it (TradingApi.orderStates, openPositionsOf). */
export interface OrderState {
  ticket: number
  login: number
  symbol: string
  cmd: number
  state: string
  volume: number
  openPrice: number
  openTime: number
  sl: number
  tp: number
  expiration: number
  closePrice: number
  closeTime: number
  profit: number
  commission: number
  storage: number
  parent: number | null
  actor: string
}

/** Runs a trade; a refusal (every check of the HTTP routes applies) comes back as data, not thrown. */
async function attempt<T extends object>(run: () => Promise<T>): Promise<TradeResult<T>> {
  try {
    return { ok: true, ...(await run()) }
  } catch (e) {
    if (isRefused(e)) return { ok: false, code: e.code, reason: e.message }
    throw e
  }
}

const notFound = (login: number) => refuse('accountNotFound', `account ${login} not found in this brand`)

/** Trading's write port (TradingApi): open, close (whole or part), modify and cancel for a system actor. */
export function writePort(ctx: TradingServices) {
  return {
    open: (r: SystemRequest & OpenInput) =>
      attempt(async () => {
        const { brandId, actor, idempotencyKey, ...input } = r
        const account = await ctx.accountsRead.accountIn(brandId, input.login)
        const group = account && (await ctx.accountsRead.group(account.groupId))
        if (!account || !group) throw notFound(input.login)
        const opened = await openFor({ ctx, brandId, account, group, input, actor, idempotencyKey })
        return {
          order: opened.order,
          price: opened.trade.open_price,
          idempotent: 'idempotent' in opened,
        }
      }),
    close: (r: SystemRequest & { order: number; volume?: number; comment?: string }) =>
      attempt(async () => {
        const { brandId, actor, idempotencyKey, ...input } = r
        const done = await closeOrder({ ctx, brandId, actor: { system: actor }, input, idempotencyKey })
        return { idempotent: 'idempotent' in done }
      }),
    modify: (r: SystemRequest & { order: number; sl: number; tp: number }) =>
      attempt(async () => {
        const { brandId, actor, idempotencyKey, ...input } = r
        const done = await modifyOrder({ ctx, brandId, actor: { system: actor }, input, idempotencyKey })
        return { idempotent: 'idempotent' in done }
      }),
    /** The order a key acted on, or null: whether a call whose answer was lost took effect. */
    keyTicket: async (login: number, idempotencyKey: string) => {
      const [row] = await ctx.db
        .select({ ticket: tradeRequests.ticket })
        .from(tradeRequests)
        .where(and(eq(tradeRequests.login, login), eq(tradeRequests.idempotencyKey, idempotencyKey)))
      return row?.ticket ?? null
    },
    /**
     * Orders by ticket: state, volume, prices and results (a module's reconciliation of its links); read
     * in `q` when given (the caller's transaction: what it sees is what it writes against).
     */
    orderStates: async (tickets: number[], q: Pick<TradingServices['db'], 'select'> = ctx.db) => {
      const out = new Map<number, OrderState>()
      if (tickets.length === 0) return out
      for (const r of await q.select(ORDER_STATE).from(orders).where(inArray(orders.ticket, tickets)))
        out.set(r.ticket, r)
      return out
    },
    /**
     * The open positions of a login (copy trading copies a master's when a subscription starts), read in `q`
     * when given (a prop pass counts them in its own transaction).
     */
    openPositionsOf: (login: number, q: Pick<TradingServices['db'], 'select'> = ctx.db) =>
      q
        .select(ORDER_STATE)
        .from(orders)
        .where(and(eq(orders.login, login), eq(orders.state, 'open')))
        .orderBy(orders.ticket),
    /** Closed positions of a login, newest first, below ticket `before` (a public trade history). */
    closedPositionsOf: (login: number, limit: number, before?: number) =>
      ctx.db
        .select(ORDER_STATE)
        .from(orders)
        .where(
          and(
            eq(orders.login, login),
            eq(orders.state, 'closed'),
            before ? lt(orders.ticket, before) : undefined,
          ),
        )
        .orderBy(desc(orders.ticket))
        .limit(limit),
    cancel: (r: SystemRequest & { order: number }) =>
      attempt(async () => {
        const { brandId, actor, idempotencyKey, ...input } = r
        const done = await cancelOrder({ ctx, brandId, actor: { system: actor }, input, idempotencyKey })
        return { idempotent: 'idempotent' in done }
      }),
  }
}

export type TradingWritePort = ReturnType<typeof writePort>
