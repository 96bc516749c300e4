import { and, eq, getTableColumns, inArray, sql } from 'drizzle-orm'
import type { KeyValueStore } from '../../kernel/cache'
import { JsonCache } from '../../kernel/cache/json-cache'
import type { Db } from '../../kernel/db/client'
import { accounts, customers, groups } from './schema'

export type AccountRecord = Omit<typeof accounts.$inferSelect, 'passwordHash'>
export type GroupRecord = typeof groups.$inferSelect
export type CustomerRecord = Omit<typeof customers.$inferSelect, 'passwordHash'>

const { passwordHash: _omit, ...accountColumns } = getTableColumns(accounts)
const { passwordHash: _omitCustomer, ...customerColumns } = getTableColumns(customers)

const TTL_MS = 30_000
const IDS_PER_READ = 500
const accountKey = (login: number) => `acct:v1:${login}`
const groupKey = (id: number) => `grp:v1:${id}`
const customerKey = (id: number) => `cust:v1:${id}`

/**
 * Hot read model of accounts, groups and customers (the design choice for GET /account/me): rows are read
 * through the shared cache with prepared statements behind it, and every write path calls
 * `invalidate*` after its transaction commits, so all instances sharing the cache see the change on
 * their next read. The TTL bounds staleness should an invalidation be lost.
 */
export class AccountReadModel {
  private readonly cache: JsonCache
  private readonly accountStmt
  private readonly groupStmt
  private readonly customerStmt

  constructor(
    private readonly db: Db,
    store: KeyValueStore,
  ) {
    this.cache = new JsonCache(store, TTL_MS)
    this.accountStmt = db
      .select(accountColumns)
      .from(accounts)
      .where(eq(accounts.login, sql.placeholder('login')))
      .prepare()
    this.groupStmt = db
      .select()
      .from(groups)
      .where(eq(groups.id, sql.placeholder('id')))
      .prepare()
    this.customerStmt = db
      .select(customerColumns)
      .from(customers)
      .where(eq(customers.id, sql.placeholder('id')))
      .prepare()
  }

  account(login: number): Promise<AccountRecord | null> {
    return this.cache.get(
      accountKey(login),
      async () => (await this.accountStmt.execute({ login }))[0] ?? null,
    )
  }

  group(id: number): Promise<GroupRecord | null> {
    return this.cache.get(groupKey(id), async () => (await this.groupStmt.execute({ id }))[0] ?? null)
  }

  customer(id: number): Promise<CustomerRecord | null> {
    return this.cache.get(customerKey(id), async () => (await this.customerStmt.execute({ id }))[0] ?? null)
  }

  /**
   * The brand-scoped reads: the record when it is of the brand, else null (as absent). What every caller
   * acting for a brand asks; the plain reads above are for ids the platform itself holds (an event's, an
   * order's), whose brand is known by construction.
   */
  async accountIn(brandId: number, login: number): Promise<AccountRecord | null> {
    const a = await this.account(login)
    return a?.brandId === brandId ? a : null
  }

  async groupIn(brandId: number, id: number): Promise<GroupRecord | null> {
    const g = await this.group(id)
    return g?.brandId === brandId ? g : null
  }

  async customerIn(brandId: number, id: number): Promise<CustomerRecord | null> {
    const c = await this.customer(id)
    return c?.brandId === brandId ? c : null
  }

  /**
   * The customers of a page (a list's rows) that are of the brand, by id: read from the database in one
   * statement per 500 ids, not through the cache (a call per row, and on a miss a statement each: at the
   * edge every one a subrequest of the request's 1,000).
   */
  async customersIn(brandId: number, ids: readonly number[]): Promise<Map<number, CustomerRecord>> {
    const out = new Map<number, CustomerRecord>()
    const unique = [...new Set(ids)]
    for (let at = 0; at < unique.length; at += IDS_PER_READ) {
      const rows = await this.db
        .select(customerColumns)
        .from(customers)
        .where(
          and(eq(customers.brandId, brandId), inArray(customers.id, unique.slice(at, at + IDS_PER_READ))),
        )
      for (const r of rows) out.set(r.id, r)
    }
    return out
  }

  /**
   * The account as committed now, not as cached: for a reader acting on a change it was told of, whose own
   * invalidation of the cached row may have been lost (the cache away a moment). Cached again after.
   */
  async accountAsCommitted(login: number): Promise<AccountRecord | null> {
    await this.invalidateAccount(login)
    return this.account(login)
  }

  invalidateAccount(...logins: number[]) {
    return this.cache.del(...logins.map(accountKey))
  }

  invalidateGroup(id: number) {
    return this.cache.del(groupKey(id))
  }

  invalidateCustomer(id: number) {
    return this.cache.del(customerKey(id))
  }
}
