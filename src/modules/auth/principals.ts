import { eq, getTableColumns, sql } from 'drizzle-orm'
import {
  type Confinement,
  type PrincipalDirectory,
  type Session,
  staffRoleSession,
} from '../../kernel/auth/session'
import type { KeyValueStore } from '../../kernel/cache'
import { JsonCache } from '../../kernel/cache/json-cache'
import type { Db } from '../../kernel/db/client'
import type { AccountRecord, AccountsApi } from '../accounts'
import { staff } from './schema'

const { passwordHash: _s, ...staffColumns } = getTableColumns(staff)
type StaffRecord = Omit<typeof staff.$inferSelect, 'passwordHash'>

export const PASSWORD_CHANGE_REQUIRED = 'PASSWORD_CHANGE_REQUIRED'

const staffKey = (id: number) => `staff:v1:${id}`

/**
 * The records behind sessions, read through the shared cache (every authenticated request checks its
 * principal): a session may act only while its account, customer or staff member is enabled, of the
 * token's brand, and at the session epoch the token carries (ADR 0007). Writers invalidate after commit.
 */
export class Principals implements PrincipalDirectory {
  private readonly cache: JsonCache
  private readonly staffStmt

  constructor(
    private readonly accounts: AccountsApi,
    db: Db,
    store: KeyValueStore,
  ) {
    this.cache = new JsonCache(store, 30_000)
    this.staffStmt = db
      .select(staffColumns)
      .from(staff)
      .where(eq(staff.id, sql.placeholder('id')))
      .prepare()
  }

  staffMember(id: number): Promise<StaffRecord | null> {
    return this.cache.get(staffKey(id), async () => (await this.staffStmt.execute({ id }))[0] ?? null)
  }

  async current(s: Session): Promise<unknown | null> {
    if (s.type === 'SESSION_USER') {
      const a = await this.accounts.read.account(s.login!)
      return a && a.brandId === s.brandId && a.enable === 1 && a.sessionEpoch === s.epoch ? a : null
    }
    if (s.type === 'SESSION_CUSTOMER') {
      const c = await this.accounts.read.customer(s.customerId!)
      return c && c.brandId === s.brandId && c.enabled === 1 && c.sessionEpoch === s.epoch ? c : null
    }
    const m = await this.staffMember(s.staffId!)
    const same = m && m.brandId === s.brandId && m.login === s.login && staffRoleSession[m.role] === s.type
    return same && m.enabled === 1 && m.sessionEpoch === s.epoch ? m : null
  }

  /** A generated password (shown once, e.g. a prop challenge's) must be replaced before anything else. */
  confinement(s: Session, principal: unknown): Confinement | null {
    if (s.type !== 'SESSION_USER' || (principal as AccountRecord).mustChangePassword !== 1) return null
    return {
      code: PASSWORD_CHANGE_REQUIRED,
      message: 'this account must set its own password first (PUT /account/password)',
    }
  }

  invalidateStaff(id: number) {
    return this.cache.del(staffKey(id))
  }
}
