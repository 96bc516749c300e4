import { count } from 'drizzle-orm'
import type { AppContext } from '../context'
import { hashPassword } from '../kernel/auth/passwords'
import { brandHosts, brands } from '../kernel/brand/schema'
import { epochSeconds } from '../kernel/clock'
import { STARTER_WATCH } from '../modules/accounts/domain/watch'
import { postOperationTx } from '../modules/accounts/ledger'
import { accounts, groups } from '../modules/accounts/schema'
import { customers, staff } from '../modules/auth/schema'
import { backfillCandles } from '../modules/market/backfill'
import { groupSecurities, groupSymbols, symbols } from '../modules/market/schema'
import { seedWatchTx } from '../modules/market/watch-defaults'
import { DEMO_OVERRIDES, demoSecurities, demoSymbols } from './symbols'

/** The demo data contract (README lists it). Amounts in major units. */
export const DEMO = {
  brands: [
    { name: 'Demo', hosts: ['localhost', '127.0.0.1'], affiliateHost: 'affiliates.localhost' },
    { name: 'Beta', hosts: ['beta.localhost'], affiliateHost: 'affiliates.beta.localhost' },
  ],
  groups: [
    { brand: 'Demo', name: 'demo\\USD', mode: 'DEMO', currency: 'USD', leverage: 100, defaultDeposit: 10000 },
    { brand: 'Demo', name: 'real\\USD', mode: 'REAL', currency: 'USD', leverage: 100, defaultDeposit: 0 },
    { brand: 'Demo', name: 'real\\EUR', mode: 'REAL', currency: 'EUR', leverage: 100, defaultDeposit: 0 },
    {
      brand: 'Beta',
      name: 'beta\\real\\USD',
      mode: 'REAL',
      currency: 'USD',
      leverage: 100,
      defaultDeposit: 0,
    },
  ],
  customers: [
    {
      brand: 'Demo',
      email: 'demo@example.com',
      password: 'demo-pass-1',
      name: 'Demo Customer',
      country: 'GB',
    },
    {
      brand: 'Beta',
      email: 'beta@example.com',
      password: 'beta-pass-1',
      name: 'Beta Customer',
      country: 'DE',
    },
  ],
  accounts: [
    {
      login: 100001,
      brand: 'Demo',
      group: 'real\\USD',
      balance: 10000,
      password: 'demo-pass-1',
      customer: 'demo@example.com',
      name: 'Demo Real USD',
    },
    {
      login: 100002,
      brand: 'Demo',
      group: 'demo\\USD',
      balance: 10000,
      password: 'demo-pass-1',
      customer: 'demo@example.com',
      name: 'Demo Demo USD',
    },
    {
      login: 100003,
      brand: 'Demo',
      group: 'real\\EUR',
      balance: 5000,
      password: 'demo-pass-1',
      customer: 'demo@example.com',
      name: 'Demo Real EUR',
    },
    {
      login: 200001,
      brand: 'Beta',
      group: 'beta\\real\\USD',
      balance: 10000,
      password: 'beta-pass-1',
      customer: 'beta@example.com',
      name: 'Beta Real USD',
    },
  ],
  staff: [
    { brand: 'Demo', login: 1, password: 'manager-pass-1', role: 'MANAGER', name: 'Demo Manager' },
    { brand: 'Demo', login: 2, password: 'admin-pass-1', role: 'ADMIN', name: 'Demo Admin' },
    { brand: 'Demo', login: 3, password: 'dealer-pass-1', role: 'DEALER', name: 'Demo Dealer' },
  ],
} as const

/**
 * Seeds the demo data once (when there is no brand yet). Balances are posted as ledger rows, so the
 * balance equals the sum of the ledger from the first start.
 */
export async function seedDemo(ctx: AppContext): Promise<boolean> {
  // History (400 days D1, 30 days H1, 48 hours M1 per symbol) is simulated with the quote seed.
  const [{ n }] = await ctx.db.select({ n: count() }).from(brands)
  if (n > 0) return false
  const hashes = new Map<string, string>()
  for (const p of new Set([...DEMO.accounts, ...DEMO.customers, ...DEMO.staff].map((x) => x.password)))
    hashes.set(p, await hashPassword(p))
  const now = ctx.clock.now()
  await ctx.db.transaction(async (tx) => {
    const brandIds = new Map<string, number>()
    for (const b of DEMO.brands) {
      const [row] = await tx
        .insert(brands)
        .values({ name: b.name, affiliateHost: b.affiliateHost, createdAt: now })
        .returning()
      brandIds.set(b.name, row.id)
      for (const host of b.hosts) await tx.insert(brandHosts).values({ host, brandId: row.id })
    }
    const groupIds = new Map<string, number>()
    for (const g of DEMO.groups) {
      const [row] = await tx
        .insert(groups)
        .values({
          brandId: brandIds.get(g.brand)!,
          name: g.name,
          accountMode: g.mode,
          currency: g.currency,
          leverage: g.leverage,
          defaultDeposit: g.defaultDeposit * 100,
          createdAt: now,
        })
        .returning()
      groupIds.set(g.name, row.id)
      for (const sec of demoSecurities(g.name))
        await tx.insert(groupSecurities).values({ groupId: row.id, ...sec })
      for (const o of DEMO_OVERRIDES[g.name] ?? [])
        await tx.insert(groupSymbols).values({ groupId: row.id, ...o })
    }
    const universe = demoSymbols(now)
    for (let i = 0; i < universe.length; i += 50) await tx.insert(symbols).values(universe.slice(i, i + 50))
    const customerIds = new Map<string, number>()
    for (const c of DEMO.customers) {
      const [row] = await tx
        .insert(customers)
        .values({
          brandId: brandIds.get(c.brand)!,
          email: c.email,
          passwordHash: hashes.get(c.password)!,
          name: c.name,
          country: c.country,
          createdAt: now,
        })
        .returning()
      customerIds.set(c.email, row.id)
    }
    for (const a of DEMO.accounts) {
      const brandId = brandIds.get(a.brand)!
      await tx.insert(accounts).values({
        login: a.login,
        brandId,
        customerId: customerIds.get(a.customer)!,
        groupId: groupIds.get(a.group)!,
        passwordHash: hashes.get(a.password)!,
        leverage: 100,
        name: a.name,
        email: a.customer,
        regdate: epochSeconds(now),
        updateTime: epochSeconds(now),
      })
      await seedWatchTx(tx, a.login, STARTER_WATCH)
      await postOperationTx(ctx, tx, {
        brandId,
        login: a.login,
        op: 'OP_BALANCE_IN',
        amount: a.balance,
        reason: 'TR_REASON_DEPOSIT',
        comment: 'DEMO_SEED',
        createdBy: 'seed',
      })
    }
    for (const s of DEMO.staff)
      await tx.insert(staff).values({
        brandId: brandIds.get(s.brand)!,
        login: s.login,
        role: s.role,
        name: s.name,
        passwordHash: hashes.get(s.password)!,
        createdAt: now,
      })
  })
  ctx.brands.invalidate()
  await ctx.refdata.changed()
  if (ctx.config.seedHistory) await backfillCandles(ctx.db, demoSymbols(now), now, ctx.config.quotes.seed)
  return true
}
