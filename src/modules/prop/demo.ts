import { brands } from '../../kernel/brand/schema'
import { roundToMinor } from '../accounts'
import type { PropCtx } from './context'
import type { ProgramStep } from './domain/program'
import { PhaseRules } from './domain/rules'
import { propPrograms } from './schema'

const rules = (r: Partial<PhaseRules>) => PhaseRules.parse({ daily_loss_pct: 5, total_loss_pct: 10, ...r })
const EVAL = 'prop\\eval\\USD'
const FUNDED_GROUP = 'prop\\funded\\USD'

/** The demo programs (README): a free trial, a two-step and a one-step challenge in USD. */
const DEMO_PROGRAMS: { name: string; description: string; price: number; steps: ProgramStep[] }[] = [
  {
    name: 'Free Trial 10k',
    description: 'One evaluation phase to try the rules; no funded account',
    price: 0,
    steps: [
      { account_group: EVAL, phase_type: 0, rules: rules({ profit_target_pct: 10, max_trading_days: 14 }) },
    ],
  },
  {
    name: 'Two-Step 10k',
    description: 'Phase 1: 10% target, phase 2: 5% target, then funded with an 80% split',
    price: 99,
    steps: [
      {
        account_group: EVAL,
        phase_type: 0,
        rules: rules({ profit_target_pct: 10, min_trading_days: 4, max_trading_days: 30 }),
      },
      {
        account_group: EVAL,
        phase_type: 0,
        rules: rules({ profit_target_pct: 5, min_trading_days: 4, max_trading_days: 60 }),
      },
      {
        account_group: FUNDED_GROUP,
        phase_type: 1,
        profit_split: 0.8,
        rules: rules({ profit_target_pct: 0 }),
      },
    ],
  },
  {
    name: 'One-Step 10k',
    description: 'One phase with an 8% target and a trailing 6% maximum loss, then funded with a 90% split',
    price: 149,
    steps: [
      {
        account_group: EVAL,
        phase_type: 0,
        rules: rules({
          profit_target_pct: 8,
          daily_loss_pct: 4,
          total_loss_pct: 6,
          total_loss_mode: 'trailing',
          min_trading_days: 3,
        }),
      },
      {
        account_group: FUNDED_GROUP,
        phase_type: 1,
        profit_split: 0.9,
        rules: rules({ profit_target_pct: 0, daily_loss_pct: 4, total_loss_pct: 6 }),
      },
    ],
  },
]

/** Seeds the demo programs of the Demo brand, each only when absent (unique per brand and name). */
export async function seedPropDemo(ctx: PropCtx) {
  const [demo] = (await ctx.db.select().from(brands)).filter((b) => b.name === 'Demo')
  if (!demo) return
  const now = ctx.clock.now()
  for (const p of DEMO_PROGRAMS)
    await ctx.db
      .insert(propPrograms)
      .values({
        brandId: demo.id,
        name: p.name,
        description: p.description,
        priceMinor: roundToMinor(p.price, 'USD'),
        currency: 'USD',
        active: 1,
        timeZone: 'Europe/Prague',
        steps: JSON.stringify(p.steps),
        createdAt: now,
        updatedAt: now,
      })
      .onConflictDoNothing()
}
