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
    const hit = await this.store.get(accountKey(login))
    if (hit) return JSON.parse(hit) as AccountRecord
    const [row] = await this.accountStmt.execute({ login })
    if (!row) return null
    await this.store.set(accountKey(login), JSON.stringify(row), TTL_MS)
    return row
  }

  async group(id: number): Promise<GroupRecord | null> {
    const hit = await this.store.get(groupKey(id))
    if (hit) return JSON.parse(hit) as GroupRecord
    const [row] = await this.groupStmt.execute({ id })
    if (!row) return null
    await this.store.set(groupKey(id), JSON.stringify(row), TTL_MS)
    return row
  }

  invalidateAccount(...logins: number[]) {
    return this.store.del(...logins.map(accountKey))
  }

  invalidateGroup(id: number) {
    return this.store.del(groupKey(id))
  }
}
