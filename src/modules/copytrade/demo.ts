import { brands } from '../../kernel/brand/schema'
import type { CopyCtx } from './context'
import { copyFollowers, copyMasters } from './schema'

/** The demo master (README): 100004 of master@example.com, public, 20 % profit share. */
const DEMO_MASTER_LOGIN = 100004
/** The demo customer's DEMO account follows (a profile with defaults; subscribing is the newcomer's step). */
const DEMO_FOLLOWER_LOGIN = 100002

/**
 * The demo master and follower profiles, each only when absent (unique login), so two instances booting
 * at once seed once. The master's trade history comes from the job `copytrade.demo-history` once the
 * simulator has prices.
 */
export async function seedCopyDemo(ctx: CopyCtx) {
  const [demo] = (await ctx.db.select().from(brands)).filter((b) => b.name === 'Demo')
  if (!demo) return
  const master = await ctx.accounts.read.account(DEMO_MASTER_LOGIN)
  const follower = await ctx.accounts.read.account(DEMO_FOLLOWER_LOGIN)
  if (!master?.customerId || !follower?.customerId) return
  const now = ctx.clock.now()
  await ctx.db
    .insert(copyMasters)
    .values({
      brandId: demo.id,
      customerId: master.customerId,
      login: DEMO_MASTER_LOGIN,
      name: 'Demo Momentum',
      description: 'Demo strategy: majors and crypto, a few trades a day',
      allowedFollowerModes: 2,
      showTradeHistory: 1,
      showFollowers: 1,
      manualTradingMode: 2,
      rewardType: 3,
      rewardParams: JSON.stringify({ percent: 20 }),
      payoutLogin: DEMO_MASTER_LOGIN,
      enabled: 1,
      public: 1,
      currency: 'USD',
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoNothing()
  await ctx.db
    .insert(copyFollowers)
    .values({
      login: DEMO_FOLLOWER_LOGIN,
      brandId: demo.id,
      customerId: follower.customerId,
      defaults: JSON.stringify({ volume_mode: 1, volume_param: 1, max_positions: 10 }),
      createdAt: now,
      updatedAt: now,
    })
    .onConflictDoNothing()
}

/**
 * The demo master's history: three round trips through trading's write port (keyed, so a second run
 * repeats nothing); without a price yet, nothing, and the job tries again.
 */
export async function seedDemoHistory(ctx: CopyCtx) {
  const id = (await ctx.db.select().from(brands)).find((b) => b.name === 'Demo')?.id
  if (id === undefined) return
  if ((await ctx.trading.closedPositionsOf(DEMO_MASTER_LOGIN, 3)).length >= 3) return
  for (const [i, symbol, cmd] of [
    [1, 'EURUSD', 0],
    [2, 'BTCUSD', 1],
    [3, 'EURUSD', 1],
  ] as const) {
    const base = { brandId: id, actor: 'copytrade:demo' }
    const opened = await ctx.trading.open({
      ...base,
      idempotencyKey: `copy-demo:${i}:open`,
      login: DEMO_MASTER_LOGIN,
      cmd,
      volume: 10,
      symbol,
      sl: 0,
      tp: 0,
    })
    if (!opened.ok) return
    await ctx.trading.close({ ...base, idempotencyKey: `copy-demo:${i}:close`, order: opened.order })
  }
}
