import { and, desc, eq, gte, lt, sql } from 'drizzle-orm'
import { type KeysetPosition, olderThan } from '../../../kernel/db/keyset'
import { readSkippingBadRows } from '../../../kernel/db/tolerant'
import { invalid } from '../../../kernel/http/errors'
import type { UseCase } from '../../../kernel/use-case'
import { orders } from '../schema'
import { orderView } from '../views'
import { type SessionScope, type TradingServices, tradingAccount } from './shared'

/**
 * Closed, cancelled and expired orders of a login, newest first, in [from, to) (epoch seconds), paged by
 * an opaque cursor (the close time and ticket of the last row served).
 */
export async function history({
  ctx,
  brand,
  session,
  input: q,
}: UseCase<
  TradingServices,
  { login: number; from?: number; to?: number; limit?: number; cursor?: string },
  SessionScope
>) {
  const { account, group } = await tradingAccount(ctx, brand, session, q.login)
  const limit = q.limit ?? 100
  let after: KeysetPosition | undefined
  if (q.cursor) {
    const m = /^(\d+)\.(\d+)$/.exec(q.cursor)
    if (!m) throw invalid('cursor: not a cursor returned by this route')
    after = { time: Number(m[1]), id: Number(m[2]) }
  }
  const where = and(
    eq(orders.login, account.login),
    eq(orders.brandId, brand.id),
    // Literal, so SQLite can use the partial history index.
    sql`${orders.state} in ('closed', 'cancelled', 'expired')`,
    q.from !== undefined ? gte(orders.closeTime, q.from * 1000) : undefined,
    q.to !== undefined ? lt(orders.closeTime, q.to * 1000) : undefined,
    olderThan(orders.closeTime, orders.ticket, after),
  )
  const order = [desc(orders.closeTime), desc(orders.ticket)]
  const rows = await readSkippingBadRows(ctx.logger, `history of ${account.login}`, {
    all: () =>
      ctx.db
        .select()
        .from(orders)
        .where(where)
        .orderBy(...order)
        .limit(limit + 1),
    keys: async () =>
      (
        await ctx.db
          .select({ t: orders.ticket })
          .from(orders)
          .where(where)
          .orderBy(...order)
          .limit(limit + 1)
      ).map((r) => r.t),
    one: (ticket) => ctx.db.select().from(orders).where(eq(orders.ticket, ticket)),
  })
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  return {
    rows: page.map((o) => orderView(o, group.currency)),
    next_cursor: rows.length > limit && last ? `${last.closeTime}.${last.ticket}` : null,
  }
}
