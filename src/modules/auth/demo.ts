import { hashPassword } from '../../kernel/auth/passwords'
import { brands } from '../../kernel/brand/schema'
import type { AuthCtx } from './context'
import { staff } from './schema'

/** The demo staff of the Demo brand (README). */
const DEMO_STAFF = [
  { brand: 'Demo', login: 1, password: 'manager-pass-1', role: 'MANAGER', name: 'Demo Manager' },
  { brand: 'Demo', login: 2, password: 'admin-pass-1', role: 'ADMIN', name: 'Demo Admin' },
  { brand: 'Demo', login: 3, password: 'dealer-pass-1', role: 'DEALER', name: 'Demo Dealer' },
] as const

/** Inserts the demo staff unless they exist (unique per brand and login). */
export async function seedDemoStaff(ctx: AuthCtx) {
  const brandIds = new Map((await ctx.db.select().from(brands)).map((b) => [b.name, b.id]))
  const rows: (typeof staff.$inferInsert)[] = []
  for (const s of DEMO_STAFF)
    rows.push({
      brandId: brandIds.get(s.brand)!,
      login: s.login,
      role: s.role,
      name: s.name,
      passwordHash: await hashPassword(s.password),
      createdAt: ctx.clock.now(),
    })
  await ctx.db.transaction((tx) => tx.insert(staff).values(rows).onConflictDoNothing())
}
