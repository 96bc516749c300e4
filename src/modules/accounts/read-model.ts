import { eq, getTableColumns, sql } from 'drizzle-orm'
import type { KeyValueStore } from '../../platform/cache'
import type { Db } from '../../platform/db/client'
import { accounts, groups } from './schema'

export type AccountRecord = Omit<typeof accounts.$inferSelect, 'passwordHash'>
export type GroupRecord = typeof groups.$inferSelect

const { passwordHash: _omit, ...accountColumns } = getTableColumns(accounts)

const TTL_MS = 30_000
const accountKey = (login: number) => `acct:v1:${login}`
const groupKey = (id: number) => `grp:v1:${id}`

/**
 * Hot read model of accounts and groups (the design choice for GET /account/me): rows are read
 * through the shared cache with prepared statements behind it, and every write path calls
 * `invalidate*` after its transaction commits, so all instances sharing the cache see the change on
 * their next read. The TTL bounds staleness should an invalidation be lost.
 */
export class AccountReadModel {
  /** Last decoded value per key: a hit that returns the very same cached text skips JSON.parse. */
  private readonly decoded = new Map<string, { raw: string; value: unknown }>()
  private readonly accountStmt
  private readonly groupStmt

  constructor(
    db: Db,
    private readonly store: KeyValueStore,
  ) {
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
  }

  async account(login: number): Promise<AccountRecord | null> {
    const key = accountKey(login)
    const hit = await this.store.get(key)
    if (hit) return this.decode<AccountRecord>(key, hit)
    const [row] = await this.accountStmt.execute({ login })
    if (!row) return null
    await this.store.set(accountKey(login), JSON.stringify(row), TTL_MS)
    return row
  }

  async group(id: number): Promise<GroupRecord | null> {
    const key = groupKey(id)
    const hit = await this.store.get(key)
    if (hit) return this.decode<GroupRecord>(key, hit)
    const [row] = await this.groupStmt.execute({ id })
    if (!row) return null
    await this.store.set(groupKey(id), JSON.stringify(row), TTL_MS)
    return row
  }

  /** Callers treat the returned records as read-only; they are shared between requests. */
  private decode<T>(key: string, raw: string): T {
    const memo = this.decoded.get(key)
    if (memo && memo.raw === raw) return memo.value as T
    const value = JSON.parse(raw) as T
    if (this.decoded.size >= 10_000) this.decoded.clear()
    this.decoded.set(key, { raw, value })
    return value
  }

  invalidateAccount(...logins: number[]) {
    return this.store.del(...logins.map(accountKey))
  }

  invalidateGroup(id: number) {
    return this.store.del(groupKey(id))
  }
}
