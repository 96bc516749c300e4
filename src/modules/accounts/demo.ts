import { and, eq } from 'drizzle-orm'
import { hashPassword } from '../../kernel/auth/passwords'
import { brands } from '../../kernel/brand/schema'
import { epochSeconds } from '../../kernel/clock'
import type { AccountsCtx } from './context'
import { toMinor } from './domain/money'
import { AccountCreated } from './events'
import { postOperationTx } from './ledger'
import { accounts, customers, groups } from './schema'

/** The demo groups, customers and accounts (README). Amounts in major units. */
const DEMO_ACCOUNTS = {
  groups: [
    { brand: 'Demo', name: 'demo\\USD', mode: 'DEMO', currency: 'USD', leverage: 100, defaultDeposit: 10000 },
    { brand: 'Demo', name: 'real\\USD', mode: 'REAL', currency: 'USD', leverage: 100, defaultDeposit: 0 },
    { brand: 'Demo', name: 'real\\EUR', mode: 'REAL', currency: 'EUR', leverage: 100, defaultDeposit: 0 },
    // prop challenges: the evaluation phases trade a DEMO group, the funded phase a REAL one (10,000 each)
    {
      brand: 'Demo',
      name: 'prop\\eval\\USD',
      mode: 'DEMO',
      currency: 'USD',
      leverage: 100,
      defaultDeposit: 10000,
      selfService: 0,
    },
    {
      brand: 'Demo',
      name: 'prop\\funded\\USD',
      mode: 'REAL',
      currency: 'USD',
      leverage: 100,
      defaultDeposit: 10000,
      selfService: 0,
    },
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
      brand: 'Demo',
      email: 'master@example.com',
      password: 'master-pass-1',
      name: 'Demo Master',
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
      login: 100004,
      brand: 'Demo',
      group: 'real\\USD',
      balance: 25000,
      password: 'master-pass-1',
      customer: 'master@example.com',
      name: 'Demo Master Real USD',
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
} as const

/**
 * Seeds the demo groups, customers and accounts, each only when absent (keyed by brand and name, email,
 * login), so two instances booting at once seed once. An account's opening deposit is posted as a ledger
 * row in the transaction that inserts it, so every balance equals its ledger from the first start.
 */
export async function seedDemoAccounts(ctx: AccountsCtx) {
  const brandIds = new Map((await ctx.db.select().from(brands)).map((b) => [b.name, b.id]))
  const hashes = new Map<string, string>()
  for (const p of new Set([...DEMO_ACCOUNTS.accounts, ...DEMO_ACCOUNTS.customers].map((x) => x.password)))
    hashes.set(p, await hashPassword(p))
  const now = ctx.clock.now()
  await ctx.db.transaction(async (tx) => {
    for (const g of DEMO_ACCOUNTS.groups)
      await tx
        .insert(groups)
        .values({
          brandId: brandIds.get(g.brand)!,
          name: g.name,
          accountMode: g.mode,
          currency: g.currency,
          leverage: g.leverage,
          defaultDeposit: g.defaultDeposit * 100,
          selfService: 'selfService' in g ? g.selfService : 1,
          createdAt: now,
        })
        .onConflictDoNothing()
    for (const c of DEMO_ACCOUNTS.customers)
      await tx
        .insert(customers)
        .values({
          brandId: brandIds.get(c.brand)!,
          email: c.email,
          passwordHash: hashes.get(c.password)!,
          name: c.name,
          country: c.country,
          createdAt: now,
        })
        .onConflictDoNothing()
  })
  for (const a of DEMO_ACCOUNTS.accounts) {
    const brandId = brandIds.get(a.brand)!
    await ctx.uow.run(async (tx, work) => {
      const [group] = await tx
        .select()
        .from(groups)
        .where(and(eq(groups.brandId, brandId), eq(groups.name, a.group)))
      const [owner] = await tx
        .select({ id: customers.id })
        .from(customers)
        .where(and(eq(customers.brandId, brandId), eq(customers.email, a.customer)))
      const inserted = await tx
        .insert(accounts)
        .values({
          login: a.login,
          brandId,
          customerId: owner.id,
          groupId: group.id,
          passwordHash: hashes.get(a.password)!,
          leverage: 100,
          name: a.name,
          email: a.customer,
          regdate: epochSeconds(now),
          updateTime: epochSeconds(now),
        })
        .onConflictDoNothing()
        .returning({ login: accounts.login })
      if (inserted.length === 0) return
      work.emit(AccountCreated, brandId, {
        login: a.login,
        group: group.name,
        group_id: group.id,
        mode: group.accountMode,
        customer_id: owner.id,
      })
      await postOperationTx(ctx, tx, work, {
        brandId,
        login: a.login,
        op: 'OP_BALANCE_IN',
        amountMinor: toMinor(a.balance, group.currency)!,
        reason: 'TR_REASON_DEPOSIT',
        comment: 'DEMO_SEED',
        createdBy: 'seed',
      })
    })
  }
}
