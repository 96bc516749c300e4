import { and, eq, inArray, sql } from 'drizzle-orm'
import type { KeyValueStore } from '../../../kernel/cache'
import { JsonCache } from '../../../kernel/cache/json-cache'
import type { Db } from '../../../kernel/db/client'
import { readSkippingBadRows } from '../../../kernel/db/tolerant'
import type { Logger } from '../../../kernel/logger'
import type { Holding } from '../domain/holdings'
import { orders } from '../schema'
import { holdingsOf } from './holdings-table'

export type OrderRow = typeof orders.$inferSelect

const ACTIVE = inArray(orders.state, ['open', 'pending'])

const listKey = (login: number) => `pos:v1:${login}`
const holdingsKey = (login: number) => `hold:v1:${login}`

/**
 * Open positions and pending orders of a login, and its holdings, read through the shared cache (like
 * the account read model) because every account read computes live margin from them. Every trade write
 * invalidates the login after its transaction commits.
 */
export class PositionReadModel {
  private readonly cache: JsonCache
  private readonly stmt

  constructor(
    private readonly db: Db,
    store: KeyValueStore,
    private readonly logger: Logger,
  ) {
    this.cache = new JsonCache(store, 30_000)
    this.stmt = db
      .select()
      .from(orders)
      .where(and(eq(orders.login, sql.placeholder('login')), ACTIVE))
      .orderBy(orders.ticket)
      .prepare()
  }

  async active(login: number): Promise<OrderRow[]> {
    const load = () =>
      readSkippingBadRows(this.logger, `active orders of ${login}`, {
        all: () => this.stmt.execute({ login }),
        keys: async () =>
          (
            await this.db
              .select({ t: orders.ticket })
              .from(orders)
              .where(and(eq(orders.login, login), ACTIVE))
          ).map((r) => r.t),
        one: (ticket) => this.db.select().from(orders).where(eq(orders.ticket, ticket)),
      })
    return (await this.cache.get(listKey(login), load)) ?? []
  }

  async open(login: number): Promise<OrderRow[]> {
    return (await this.active(login)).filter((o) => o.state === 'open')
  }

  async holdings(login: number): Promise<Holding[]> {
    const load = async () => (await holdingsOf(this.db, [login])).get(login) ?? []
    return (await this.cache.get(holdingsKey(login), load)) ?? []
  }

  invalidate(...logins: number[]) {
    return this.cache.del(...logins.flatMap((l) => [listKey(l), holdingsKey(l)]))
  }
}
