// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ManualClock } from '../../src/kernel/clock'
import { leaseMs } from '../../src/kernel/jobs/runner'
import type { PurchaseSteps } from '../../src/modules/prop/context'
import { FAILURES, type FailedStep, PURCHASE } from '../../src/modules/prop/domain/purchase'
import { PURCHASE_STALE_MS } from '../../src/modules/prop/purchase-rollback'
import { makeTestApp, type TestApp } from '../support/app'

/**
 * Issue 42: a purchase whose process is killed (SIGKILL, a real one) between two of its steps, or inside
 * a step before its commit, is ended by the job prop.purchases.recover exactly as prop-recovery.test.ts
 * ends one that stops in-process. Each purchase runs in a process of its own
 * (tests/support/prop-purchase-process.ts) on this test's database, stops where it is told and says so on
 * stdout; the test kills it by its pid, then runs the job here with the clock past PURCHASE_STALE_MS.
 */

const clock = new ManualClock(Date.UTC(2026, 10, 24, 9, 0, 0))
let t: TestApp
let customer: string
let twoStep: number
/** the program's price, minor units of the payer's USD */
let feeMinor: number
/** the children's temp dirs (TMPDIR): a killed child removes nothing */
const scratch = mkdtempSync(join(tmpdir(), 'tcs-prop-kill-'))
const PAYER = 100001

beforeAll(async () => {
  t = await makeTestApp({ clock })
  customer = await t.customerToken()
  const list = await t.request('GET', '/prop/programs', { token: customer })
  const program = list.json.rows.find((p: { name: string }) => p.name === 'Two-Step 10k')
  twoStep = program.id
  feeMinor = Number((await one('select price_minor from prop_programs where id = ?', [twoStep])).price_minor)
})
afterAll(async () => {
  await t?.close()
  rmSync(scratch, { recursive: true, force: true })
})

const rows = async (sql: string, args: (string | number)[] = []) =>
  (await t.ctx.db.execute({ sql, args })).rows as unknown as Record<string, any>[]
const one = async (sql: string, args: (string | number)[] = []) => (await rows(sql, args))[0]!
const balance = async (login: number) =>
  Number((await one('select balance from accounts where login = ?', [login])).balance)
const purchase = (key: string) => one('select * from prop_purchases where idempotency_key = ?', [key])
/** Every account whose balance is not the sum of its ledger (none, ever). */
const unbalanced = () =>
  rows(`select a.login from accounts a left join balance_operations o on o.login = a.login
    group by a.login having a.balance != coalesce(sum(o.amount), 0)`)
/** The state a recovery may touch: the purchase, its challenge, the ledger rows and balances. */
const snapshot = async (key: string) => {
  const p = await purchase(key)
  return {
    purchase: p,
    challenges: await rows('select * from prop_challenges where purchase_id = ?', [p.id]),
    ops: await rows('select * from balance_operations order by id'),
    balances: await rows('select login, balance from accounts order by login'),
  }
}

/**
 * Runs a purchase (`buy`, keyed `key`) or the recovery job (`recover`) in a process of its own at this
 * clock, stopped at `stop` (tests/support/prop-purchase-process.ts), and kills it there with SIGKILL by
 * its pid as soon as it says it stopped.
 */
async function killedAt(run: 'buy' | 'recover', stop: string, key = '') {
  const env: Record<string, string | undefined> = {
    ...process.env,
    // the child uses this database, never one of its own
    TEST_DATABASE: undefined,
    TMPDIR: scratch,
    RUN: run,
    DB_URL: t.config.database.url,
    CLOCK_MS: String(clock.now()),
    PROGRAM_ID: String(twoStep),
    KEY: key,
    STOP: stop,
  }
  const child = Bun.spawn([process.execPath, 'tests/support/prop-purchase-process.ts'], {
    env,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const reader = child.stdout.getReader()
  const decoder = new TextDecoder()
  let out = ''
  const deadline = setTimeout(() => child.kill('SIGKILL'), 20_000)
  try {
    while (!out.includes(`STOPPED ${stop}\n`)) {
      const { value, done } = await reader.read()
      if (done) {
        await child.exited
        const err = await new Response(child.stderr).text()
        throw new Error(`the ${run} process ended before its stop ${stop}:\n${out}\n${err}`)
      }
      out += decoder.decode(value, { stream: true })
    }
    child.kill('SIGKILL')
    await child.exited
  } finally {
    clearTimeout(deadline)
    reader.releaseLock()
  }
  expect(child.signalCode).toBe('SIGKILL')
}

/** What each step of a purchase is in PurchaseSteps (every step the rollbacks know: FAILURES's keys). */
const METHOD: Record<FailedStep, keyof PurchaseSteps> = {
  payment: 'takeFee',
  account: 'openAccount',
  initial_balance: 'initialBalance',
  challenge: 'createChallenge',
}
const ORDER = Object.keys(FAILURES) as FailedStep[]

/**
 * A kill that leaves the purchase stopped before `next` (its steps before it committed, nothing of it):
 * at the boundary before it (the last step has returned, or for the first no step ran), or inside it
 * (its work and record written in its transaction, the commit never made).
 */
const CRASHES: { stop: string; next: FailedStep }[] = ORDER.flatMap((next, i) => [
  { stop: i === 0 ? `before:${METHOD[next]}` : `after:${METHOD[ORDER[i - 1]!]}`, next },
  { stop: `inside:${METHOD[next]}`, next },
])

/** The purchase's state before `next`, and the rollbacks of what the steps before it did (4.19). */
function expected(next: FailedStep) {
  const done = ORDER.slice(0, ORDER.indexOf(next))
  return {
    status: done.includes('account')
      ? PURCHASE.account_created
      : done.includes('payment')
        ? PURCHASE.paid
        : PURCHASE.pending,
    feeTaken: done.includes('payment'),
    account: done.includes('account'),
    initialBalance: done.includes('initial_balance'),
    rollbacks: [
      ...(done.includes('payment') ? ['PROP_CHALLENGE_PURCHASE_ROLLBACK'] : []),
      ...(done.includes('initial_balance') ? ['PROP_CHALLENGE_INITIAL_BALANCE_ROLLBACK'] : []),
    ],
  }
}

const propOpsSince = (id: number) =>
  rows(
    `select login, amount, comment from balance_operations where id > ? and reason = 'TR_REASON_PROP' order by id`,
    [id],
  )
const baseline = async () => ({
  payer: await balance(PAYER),
  lastOp: Number((await one('select coalesce(max(id), 0) as id from balance_operations')).id),
  lastLogin: Number((await one('select max(login) as login from accounts')).login),
})

type Baseline = Awaited<ReturnType<typeof baseline>>

/**
 * The job, once the purchase is stale, ends it as prop-recovery.test.ts sees it ended: its final state,
 * what was taken given back once and nothing else booked, no challenge, no account but the purchase's own
 * (left empty), every balance its ledger; the job again changes nothing, the customer may buy again.
 */
async function endsOnce(key: string, next: FailedStep, before: Baseline, o = { stale: false }) {
  const e = expected(next)
  const stuck = await purchase(key)
  if (!o.stale) {
    // not stale yet: a purchase in progress is left alone
    await t.runJob('prop.purchases.recover')
    expect(await purchase(key)).toEqual(stuck)
    clock.advance(PURCHASE_STALE_MS + 1000)
  }
  await t.runJob('prop.purchases.recover')
  const ended = await purchase(key)
  expect(ended).toMatchObject({
    id: stuck.id,
    status: e.feeTaken ? PURCHASE.refunded : PURCHASE.failed,
    payment_status: e.feeTaken ? 'refunded' : 'failed',
    activation_status: 'failed',
    failure_reason: FAILURES[next].code,
    next_action: 'RETRY_PURCHASE',
    can_retry: 1,
    can_cancel: 0,
  })

  // the job again, now and once stale again, changes nothing
  const settled = await snapshot(key)
  await t.runJob('prop.purchases.recover')
  clock.advance(PURCHASE_STALE_MS + 1000)
  await t.runJob('prop.purchases.recover')
  expect(await snapshot(key)).toEqual(settled)

  expect(await balance(PAYER)).toBe(before.payer)
  const ops = await propOpsSince(before.lastOp)
  expect(
    ops
      .map((o) => o.comment as string)
      .filter((c) => c.endsWith('ROLLBACK'))
      .sort(),
  ).toEqual([...e.rollbacks].sort())
  expect(ops.filter((o) => Number(o.login) === PAYER).reduce((s, o) => s + Number(o.amount), 0)).toBe(0)
  expect(settled.challenges).toEqual([])
  const opened = await rows('select login from accounts where login > ?', [before.lastLogin])
  expect(opened.map((a) => Number(a.login))).toEqual(e.account ? [Number(ended.account_login)] : [])
  if (e.account) expect(await balance(Number(ended.account_login))).toBe(0)
  expect(await unbalanced()).toEqual([])

  const again = await t.request('POST', '/prop/challenge/buy', {
    token: customer,
    body: { program_id: twoStep, payer_login: PAYER, idempotency_key: `again-${key}` },
  })
  expect(again.status).toBe(200)
}

describe('a purchase process killed with SIGKILL between (and inside) its steps', () => {
  test('every step of the purchase has its kill points', () => {
    expect(CRASHES.map((c) => c.stop)).toEqual([
      'before:takeFee',
      'inside:takeFee',
      'after:takeFee',
      'inside:openAccount',
      'after:openAccount',
      'inside:initialBalance',
      'after:initialBalance',
      'inside:createChallenge',
    ])
  })

  for (const { stop, next } of CRASHES)
    test(`killed ${stop.replace(':', ' ')}: the job rolls back exactly what was committed, once`, async () => {
      const key = `kill-${stop}`
      const e = expected(next)
      const before = await baseline()
      await killedAt('buy', stop, key)

      // what the dead process left: the steps before `next`, each with its record, nothing of `next`
      const stuck = await purchase(key)
      expect(Number(stuck.status)).toBe(e.status)
      expect(stuck.payment_order !== null).toBe(e.feeTaken)
      expect(stuck.account_login !== null).toBe(e.account)
      expect(stuck.initial_balance_order !== null).toBe(e.initialBalance)
      expect(await balance(PAYER)).toBe(e.feeTaken ? before.payer - feeMinor : before.payer)
      const opened = await rows('select login from accounts where login > ?', [before.lastLogin])
      expect(opened.map((a) => Number(a.login))).toEqual(e.account ? [Number(stuck.account_login)] : [])
      expect((await propOpsSince(before.lastOp)).length).toBe(Number(e.feeTaken) + Number(e.initialBalance))

      await endsOnce(key, next, before)
    }, 30_000)

  test('killed after its last step, before answering: the purchase is bought, the job leaves it', async () => {
    const key = 'kill-after-createChallenge'
    const before = await baseline()
    await killedAt('buy', 'after:createChallenge', key)
    const bought = await purchase(key)
    expect(bought).toMatchObject({
      status: PURCHASE.active,
      payment_status: 'paid',
      activation_status: 'active',
    })
    const settled = await snapshot(key)
    expect(settled.challenges).toHaveLength(1)
    await t.runJob('prop.purchases.recover')
    clock.advance(PURCHASE_STALE_MS + 1000)
    await t.runJob('prop.purchases.recover')
    await t.runJob('prop.purchases.recover')
    expect(await snapshot(key)).toEqual(settled)
    expect(await balance(PAYER)).toBe(before.payer - feeMinor)
    const ops = await propOpsSince(before.lastOp)
    expect(ops.map((o) => o.comment)).toEqual(['PROP_CHALLENGE_PURCHASE', 'PROP_CHALLENGE_INITIAL_BALANCE'])
    expect(await balance(Number(bought.account_login))).toBe(Number(ops[1]!.amount))
    expect(await unbalanced()).toEqual([])
  }, 30_000)
})

/**
 * The recovery itself killed between its compensations (latest first: the initial balance taken back,
 * then the fee given back, then the final state): the purchase stays taken (ROLLBACK_PENDING) with what
 * was given back so far, and the next run, once it is stale again, gives back the rest, once.
 */
const RECOVERY_CRASHES: [stop: string, givenBack: string[]][] = [
  ['before:reverseInitialBalance', []],
  ['after:reverseInitialBalance', ['PROP_CHALLENGE_INITIAL_BALANCE_ROLLBACK']],
  ['after:refundFee', ['PROP_CHALLENGE_INITIAL_BALANCE_ROLLBACK', 'PROP_CHALLENGE_PURCHASE_ROLLBACK']],
]

describe('the recovery job killed with SIGKILL between its rollbacks', () => {
  for (const [stop, givenBack] of RECOVERY_CRASHES)
    test(`killed ${stop.replace(':', ' ')}: the next run finishes the rollbacks, once`, async () => {
      const key = `recovery-kill-${stop}`
      const before = await baseline()
      await killedAt('buy', 'after:initialBalance', key)
      clock.advance(PURCHASE_STALE_MS + 1000)
      await killedAt('recover', stop)

      const taken = await purchase(key)
      expect(taken).toMatchObject({
        status: PURCHASE.failed,
        failure_reason: FAILURES.challenge.code,
        next_action: 'ROLLBACK_PENDING',
      })
      const ops = await propOpsSince(before.lastOp)
      expect(ops.map((o) => o.comment as string).filter((c) => c.endsWith('ROLLBACK'))).toEqual(givenBack)

      // the dead run's lease on the job holds it until it lapses: then another run takes the job, the
      // purchase (taken by the dead run) stale again by then
      await expect(t.runJob('prop.purchases.recover')).rejects.toThrow('busy')
      expect(await purchase(key)).toEqual(taken)
      const lease = leaseMs(t.app.jobs.find((j) => j.name === 'prop.purchases.recover')!)
      expect(lease).toBeGreaterThan(PURCHASE_STALE_MS)
      clock.advance(lease + 1000)
      await endsOnce(key, 'challenge', before, { stale: true })
    }, 30_000)
})
