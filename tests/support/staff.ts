import { eq } from 'drizzle-orm'
import { hashPassword } from '../../src/kernel/auth/passwords'
import { brands } from '../../src/kernel/brand/schema'
import { staff } from '../../src/modules/auth/schema'
import type { TestApp } from './app'

/** Staff of the Beta brand (the demo data has Demo's only), signing in with the demo's staff passwords. */
export async function addBetaStaff(
  t: Pick<TestApp, 'ctx'>,
  members: readonly (readonly [role: 'MANAGER' | 'ADMIN' | 'DEALER', login: number, password: string])[],
) {
  const [beta] = await t.ctx.db.select().from(brands).where(eq(brands.name, 'Beta'))
  for (const [role, login, password] of members)
    await t.ctx.db
      .insert(staff)
      .values({
        brandId: beta!.id,
        login,
        role,
        name: `Beta ${role}`,
        passwordHash: await hashPassword(password),
        createdAt: t.ctx.clock.now(),
      })
      .onConflictDoNothing()
}
