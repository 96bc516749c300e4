// A prop purchase, or the job that recovers purchases, in a process of its own, for the kill tests
// (tests/integration/prop-kill.test.ts): the real app on the database at DB_URL (already migrated and
// seeded) with the clock at CLOCK_MS. RUN=buy buys program PROGRAM_ID from payer 100001 with idempotency
// key KEY; RUN=recover runs the job prop.purchases.recover. Either stops at STOP and never goes on:
// - `before:<step>`: the step is called (everything before it has committed) and never starts;
// - `inside:<step>` (the purchase's own four steps): the step's work and its record on the purchase are
//   written in its transaction, the commit is never made;
// - `after:<step>`: the step has committed and returned, nothing after it runs.
// It prints `STOPPED <STOP>` and waits to be killed (SIGKILL by the parent). The stop is made here by
// wrapping the app's purchase steps (PropPort), as prop-recovery.test.ts does: no hook in the product.
import { z } from 'zod'
import { ManualClock } from '../../src/kernel/clock'
import { PropPort } from '../../src/modules/prop'
import type { PurchaseSteps, RecordStep } from '../../src/modules/prop/context'
import { makeTestApp } from './app'

/** Where each step that records itself takes its `record` argument. */
const RECORD_ARG: Partial<Record<keyof PurchaseSteps, number>> = {
  takeFee: 4,
  openAccount: 1,
  initialBalance: 4,
  createChallenge: 2,
}
const STEPS = [
  'takeFee',
  'openAccount',
  'initialBalance',
  'createChallenge',
  'refundFee',
  'reverseInitialBalance',
] as const satisfies (keyof PurchaseSteps)[]

const env = z
  .object({
    RUN: z.enum(['buy', 'recover']),
    DB_URL: z.string(),
    CLOCK_MS: z.coerce.number().int().positive(),
    PROGRAM_ID: z.coerce.number().int().positive().optional(),
    KEY: z.string().optional(),
    STOP: z.string().regex(new RegExp(`^(before|inside|after):(${STEPS.join('|')})$`)),
  })
  .parse(process.env)
const [where, stopAt] = env.STOP.split(':') as ['before' | 'inside' | 'after', (typeof STEPS)[number]]
if (where === 'inside' && RECORD_ARG[stopAt] === undefined) throw new Error(`${stopAt} records nothing`)

// the database is the parent's; nothing here seeds or starts another sqld
const t = await makeTestApp({
  clock: new ManualClock(env.CLOCK_MS),
  seed: false,
  env: { DATABASE_URL: env.DB_URL },
})
const steps = t.ports.get(PropPort).steps
const original = { ...steps }

/** Says where it stopped and never returns: the parent kills this process now. */
const stop = (): Promise<never> => {
  console.log(`STOPPED ${env.STOP}`)
  return new Promise<never>(() => {})
}

/** The step's `record` argument: the record is written in the step's transaction, then the process stops. */
const stopInside =
  (record: RecordStep | undefined): RecordStep =>
  async (tx, work, made) => {
    await record?.(tx, work, made)
    await stop()
  }

const call = original[stopAt] as (...args: unknown[]) => Promise<unknown>
Object.assign(steps, {
  [stopAt]: async (...args: unknown[]) => {
    if (where === 'before') return stop()
    if (where === 'inside') {
      const i = RECORD_ARG[stopAt]!
      args[i] = stopInside(args[i] as RecordStep | undefined)
      return call(...args)
    }
    await call(...args)
    return stop()
  },
})

if (env.RUN === 'buy') {
  const answer = await t.request('POST', '/prop/challenge/buy', {
    token: await t.customerToken(),
    body: { program_id: env.PROGRAM_ID, payer_login: 100001, idempotency_key: env.KEY },
  })
  // only reached when the purchase answered before its stop (a refusal): the parent fails on it
  console.log(`ANSWERED ${answer.status} ${answer.text}`)
} else {
  await t.runJob('prop.purchases.recover')
  console.log('ANSWERED the job ended without reaching its stop')
}
process.exit(1)
