import { and, eq, inArray, sql } from 'drizzle-orm'
import type { KeyValueStore } from '../../platform/cache'
import { JsonCache } from '../../platform/cache/json-cache'
import type { Db } from '../../platform/db/client'
import { orders } from './schema'

export type OrderRow = typeof orders.$inferSelect

const key = (login: number) => `pos:v1:${login}`

/**
 * Open positions and pending orders of a login, read through the shared cache (like the account read
 * model) because every account read computes live margin from them. Every trade write invalidates the
 * login after its transaction commits.
 */
export class PositionReadModel {
  private readonly cache: JsonCache
  private readonly stmt

  constructor(db: Db, store: KeyValueStore) {
    this.cache = new JsonCache(store, 30_000)
    this.stmt = db
      .select()
      .from(orders)
      .where(and(eq(orders.login, sql.placeholder('login')), inArray(orders.state, ['open', 'pending'])))
      .orderBy(orders.ticket)
      .prepare()
  }

  async active(login: number): Promise<OrderRow[]> {
    return (await this.cache.get(key(login), () => this.stmt.execute({ login }))) ?? []
  }

  async open(login: number): Promise<OrderRow[]> {
    return (await this.active(login)).filter((o) => o.state === 'open')
  }

  invalidate(...logins: number[]) {
    return this.cache.del(...logins.map(key))
  }
}
