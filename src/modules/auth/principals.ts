import { eq, getTableColumns, sql } from 'drizzle-orm'
import { type PrincipalDirectory, type Session, staffRoleSession } from '../../kernel/auth/session'
import type { KeyValueStore } from '../../kernel/cache'
import { JsonCache } from '../../kernel/cache/json-cache'
import type { Db } from '../../kernel/db/client'
import type { AccountReadModel } from '../accounts/read-model'
import { customers, staff } from './schema'

const { passwordHash: _c, ...customerColumns } = getTableColumns(customers)
const { passwordHash: _s, ...staffColumns } = getTableColumns(staff)
export type CustomerRecord = Omit<typeof customers.$inferSelect, 'passwordHash'>
export type StaffRecord = Omit<typeof staff.$inferSelect, 'passwordHash'>

const customerKey = (id: number) => `cust:v1:${id}`
const staffKey = (id: number) => `staff:v1:${id}`

/**
 * The records behind sessions, read through the shared cache like accounts (every authenticated request
 * checks its principal): a session may act only while its account, customer or staff member is enabled,
 * of the token's brand, and at the session epoch the token carries. Writers invalidate after commit.
 */
export class Principals implements PrincipalDirectory {
  private readonly cache: JsonCache
  private readonly customerStmt
  private readonly staffStmt

  constructor(
    private readonly accounts: AccountReadModel,
    db: Db,
    store: KeyValueStore,
  ) {
    this.cache = new JsonCache(store, 30_000)
    this.customerStmt = db
      .select(customerColumns)
      .from(customers)
      .where(eq(customers.id, sql.placeholder('id')))
      .prepare()
    this.staffStmt = db
      .select(staffColumns)
      .from(staff)
      .where(eq(staff.id, sql.placeholder('id')))
      .prepare()
  }

  customer(id: number): Promise<CustomerRecord | null> {
    return this.cache.get(customerKey(id), async () => (await this.customerStmt.execute({ id }))[0] ?? null)
  }

  staffMember(id: number): Promise<StaffRecord | null> {
    return this.cache.get(staffKey(id), async () => (await this.staffStmt.execute({ id }))[0] ?? null)
  }

  async current(s: Session): Promise<unknown | null> {
    if (s.type === 'SESSION_USER') {
      const a = await this.accounts.account(s.login!)
      return a && a.brandId === s.brandId && a.enable === 1 && a.sessionEpoch === s.epoch ? a : null
    }
    if (s.type === 'SESSION_CUSTOMER') {
      const c = await this.customer(s.customerId!)
      return c && c.brandId === s.brandId && c.enabled === 1 && c.sessionEpoch === s.epoch ? c : null
    }
    const m = await this.staffMember(s.staffId!)
    const same = m && m.brandId === s.brandId && m.login === s.login && staffRoleSession[m.role] === s.type
    return same && m.enabled === 1 && m.sessionEpoch === s.epoch ? m : null
  }

  invalidateCustomer(id: number) {
    return this.cache.del(customerKey(id))
  }

  invalidateStaff(id: number) {
    return this.cache.del(staffKey(id))
  }
}
