import { sql } from 'drizzle-orm'
import type { Queryable } from '../../../kernel/db/client'
import { accounts } from '../schema'

/** Next free login: above every existing one, starting at 100001. */
export async function nextLogin(tx: Queryable): Promise<number> {
  const [r] = await tx.select({ max: sql<number | null>`max(${accounts.login})` }).from(accounts)
  return Math.max(r?.max ?? 0, 100000) + 1
}
