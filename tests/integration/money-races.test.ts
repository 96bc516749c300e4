// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
// Money asked for at once (a hostile client's probe): each request is checked where its money moves, so
// requests in parallel cannot each spend the same free margin or KYC allowance, one idempotency key answers
// one transaction, and a provider's partial refund reverses nothing by itself.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { eq } from 'drizzle-orm'
import { Refusal } from '../../src/kernel/refusal'
import { AccountsPort } from '../../src/modules/accounts'
import type { sandboxEvent } from '../../src/modules/cashier/providers/sandbox'
import { cashierTransactions } from '../../src/modules/cashier/schema'
import { MarketPort } from '../../src/modules/market'
import { makeTestApp, type TestApp } from '../support/app'
import { sandboxWebhook } from '../support/cashier'
import { evaluationProgram } from '../support/prop'

let t: TestApp
let customer: string
let manager: string
let dealer: string

beforeAll(async () => {
  t = await makeTestApp()
  customer = await t.customerToken()
  manager = await t.staffToken()
  dealer = await t.staffToken(3, 'dealer-pass-1')
  // withdrawals without KYC steps: the probe is about the money, not the gate
  const settings = (await t.request('GET', '/manager/kyc/settings', { token: manager })).json
  const saved = await t.request('PUT', '/manager/kyc/settings', {
    token: manager,
    body: { steps: settings.steps, tiers: { ...settings.tiers, withdrawal_after: [] } },
  })
  expect(saved.status).toBe(200)
  await t.request('POST', '/market/quotes', {
    token: dealer,
    body: { ticks: [{ symbol: 'EURUSD', bid: 1.1, ask: 1.1002 }] },
  })
})
afterAll(() => t.close())

const me = async (login: number) =>
  (await t.request('GET', `/account/me?login=${login}`, { token: customer })).json as {
    balance: number
    margin_free: number
  }
/** 5 lots of EURUSD on 100001: they hold about 5,500 of its 10,000, so its free margin is well below its balance. */
async function holdMargin() {
  const token = await t.userToken(100001)
  const open = await t.request('POST', '/trade/open', {
    token,
    body: { login: 100001, cmd: 0, volume: 500, symbol: 'EURUSD', sl: 0, tp: 0 },
  })
  expect(open.status).toBe(200)
  return {
    close: () => t.request('DELETE', '/trade/close', { token, body: { order: open.json.order } }),
  }
}
const withdraw = (body: Record<string, unknown>) =>
  t.request('POST', '/cashier/withdrawal', { token: customer, body: { method: 'wire', ...body } })

test('withdrawals asked at once cannot each spend the same free margin', async () => {
  const position = await holdMargin()
  const before = await me(100001)
  const part = Math.floor(before.margin_free * 0.4)
  const asked = await Promise.all(Array.from({ length: 6 }, () => withdraw({ login: 100001, amount: part })))
  const held = asked.filter((r) => r.status === 200)
  for (const r of asked) if (r.status !== 200) expect(r.json.error).toBe('NOT_ENOUGH_FREE_MARGIN')
  expect(held.length).toBeGreaterThanOrEqual(1)
  expect(held.length).toBeLessThanOrEqual(2)
  const after = await me(100001)
  expect(after.margin_free).toBeGreaterThanOrEqual(0)
  expect(after.balance).toBe(Math.round((before.balance - held.length * part) * 100) / 100)
  for (const r of held)
    await t.request('POST', `/manager/cashier/transactions/${r.json.transaction.id}/reject`, {
      token: manager,
      body: { reason: 'test' },
    })
  await position.close()
})

test("a position opened after a withdrawal's check counts where its hold is taken", async () => {
  // the interleaving a hostile client can only hope for, made in order: the check (what /account/me
  // shows), then an open that takes most of that free margin, then the hold sized by the check
  const checked = (await me(100001)).margin_free
  const position = await holdMargin()
  const accounts = t.ports.get(AccountsPort)
  const hold = (amount: number) =>
    t.ctx.uow.run((tx, work) =>
      accounts.postOperationTx(tx, work, {
        brandId: 1,
        login: 100001,
        op: 'OP_BALANCE_OUT',
        amountMinor: Math.round(amount * 100),
        reason: 'TR_REASON_WITHDRAWAL',
        createdBy: 'test',
        keepFreeMargin: true,
      }),
    )
  const before = await me(100001)
  expect(before.margin_free).toBeLessThan(checked * 0.6)
  const refused = await hold(checked * 0.6).catch((e: unknown) => e)
  expect(refused).toBeInstanceOf(Refusal)
  expect((refused as Refusal).code).toBe('NOT_ENOUGH_FREE_MARGIN')
  expect((await me(100001)).balance).toBe(before.balance)
  // what the free margin still covers is taken, and leaves it at or above zero
  const taken = await hold(Math.floor(before.margin_free))
  expect(taken.idempotent).toBe(false)
  expect((await me(100001)).margin_free).toBeGreaterThanOrEqual(0)
  await t.ctx.uow.run((tx, work) =>
    accounts.postOperationTx(tx, work, {
      brandId: 1,
      login: 100001,
      op: 'OP_BALANCE_IN',
      amountMinor: Math.round(Math.floor(before.margin_free) * 100),
      reason: 'TR_REASON_WITHDRAWAL',
      createdBy: 'test',
    }),
  )
  await position.close()
})

// a hostile client's probe: money left an account with open positions priced at the last quotes an
// instance had while its feed was cut off (a position's loss since then did not count)
test('with open positions and no current price here, a withdrawal answers 503 PRICE_STALE and holds nothing', async () => {
  const position = await holdMargin()
  const before = await me(100001)
  const quotes = t.ports.get(MarketPort).quotes
  const cutOff = async <T>(run: () => Promise<T>) => {
    // what this instance's price feed says when its bus reader has not read for seconds (Redis away)
    quotes.staleness = () => 'no price update for 9.0 s: the price bus is unreachable'
    try {
      return await run()
    } finally {
      delete (quotes as { staleness?: unknown }).staleness
    }
  }
  const r = await cutOff(() => withdraw({ login: 100001, amount: 50 }))
  expect([r.status, r.json.error]).toEqual([503, 'PRICE_STALE'])
  expect(r.json.message).toContain('no money leaves')
  expect((await me(100001)).balance).toBe(before.balance)
  await position.close()
  // without positions no price is needed
  const free = await cutOff(() => withdraw({ login: 100001, amount: 50 }))
  expect(free.status).toBe(200)
  await t.request('POST', `/manager/cashier/transactions/${free.json.transaction.id}/reject`, {
    token: manager,
    body: { reason: 'test' },
  })
})

// a reviewer's finding: the free margin money leaving was checked against counted the broker's credit, so
// a trader could withdraw their balance and leave their positions standing on the credit alone
test("money leaving never spends the broker's credit: the check and the hold take the free margin less credit", async () => {
  const credit = (type: 'credit_in' | 'credit_out') =>
    t.request('POST', '/manager/accounts/100001/balance', { token: manager, body: { type, amount: 5000 } })
  expect((await credit('credit_in')).status).toBe(200)
  const position = await holdMargin()
  try {
    const m = (await t.request('GET', '/account/me?login=100001', { token: customer })).json as {
      margin_free: number
      credit: number
      balance: number
    }
    const own = m.margin_free - m.credit
    expect(own).toBeGreaterThan(100)
    // within the free margin, beyond what is the trader's own
    const over = await withdraw({ login: 100001, amount: Math.floor(own) + 100 })
    expect([over.status, over.json.error]).toEqual([400, 'NOT_ENOUGH_FREE_MARGIN'])
    expect(over.json.message).toContain('less credit')
    const accounts = t.ports.get(AccountsPort)
    const hold = await t.ctx.uow
      .run((tx, work) =>
        accounts.postOperationTx(tx, work, {
          brandId: 1,
          login: 100001,
          op: 'OP_BALANCE_OUT',
          amountMinor: (Math.floor(own) + 100) * 100,
          reason: 'TR_REASON_WITHDRAWAL',
          createdBy: 'test',
          keepFreeMargin: true,
        }),
      )
      .catch((e: unknown) => e)
    expect((hold as Refusal).code).toBe('NOT_ENOUGH_FREE_MARGIN')
    expect((await me(100001)).balance).toBe(m.balance)
    const within = await withdraw({ login: 100001, amount: Math.floor(own) - 1 })
    expect(within.status).toBe(200)
    await t.request('POST', `/manager/cashier/transactions/${within.json.transaction.id}/reject`, {
      token: manager,
      body: { reason: 'test' },
    })
  } finally {
    await position.close()
    expect((await credit('credit_out')).status).toBe(200)
  }
})

// a hostile client's probe: a reject that lost its race answered "is pending_payment", the state it read
// before the winner moved it (a withdrawal is never pending_payment)
test('staff actions racing on one withdrawal: one wins, the others name the state that refused them', async () => {
  const w = await withdraw({ login: 100001, amount: 60 })
  expect(w.status).toBe(200)
  const asked = await Promise.all(
    Array.from({ length: 4 }, () =>
      t.request('POST', `/manager/cashier/transactions/${w.json.transaction.id}/reject`, {
        token: manager,
        body: { reason: 'race' },
      }),
    ),
  )
  expect(asked.filter((r) => r.status === 200)).toHaveLength(1)
  for (const r of asked.filter((x) => x.status !== 200)) {
    expect([r.status, r.json.error]).toEqual([409, 'TRANSACTION_STATE_CONFLICT'])
    expect(r.json.message).toContain('is cancelled: cannot')
  }
})

test('one idempotency key asked at once: one withdrawal, one hold, every answer names it', async () => {
  const before = (await me(100001)).balance
  const asked = await Promise.all(
    Array.from({ length: 8 }, () =>
      withdraw({ login: 100001, amount: 100, idempotency_key: 'race-key-0001' }),
    ),
  )
  expect(asked.map((r) => `${r.status} ${r.json.error ?? ''}`)).toEqual(Array(8).fill('200 '))
  expect(new Set(asked.map((r) => r.json.transaction.id)).size).toBe(1)
  expect(asked.filter((r) => r.json.idempotent === false)).toHaveLength(1)
  expect((await me(100001)).balance).toBe(before - 100)
  await t.request('POST', `/manager/cashier/transactions/${asked[0]!.json.transaction.id}/reject`, {
    token: manager,
    body: { reason: 'test' },
  })
})

test("a provider's refund of part of a deposit moves nothing and flags the deposit for staff", async () => {
  const webhook = (id: string, type: Parameters<typeof sandboxEvent>[1], tx: number, amount: number) =>
    sandboxWebhook(t, id, type, { id: tx, amount })
  // 100003 holds EUR: this one is a USD account of the demo customer
  const d = await t.request('POST', '/cashier/deposit', {
    token: customer,
    body: { login: 100001, method: 'card', amount: 20 },
  })
  if (d.status !== 200) throw new Error(d.text)
  const id = d.json.transaction.id as number
  expect((await webhook('evt-part-1', 'payment.succeeded', id, 2000)).status).toBe(200)
  const credited = (await me(100001)).balance
  expect((await webhook('evt-part-2', 'payment.refunded', id, 200)).status).toBe(200)
  expect((await me(100001)).balance).toBe(credited)
  const [row] = await t.ctx.db.select().from(cashierTransactions).where(eq(cashierTransactions.id, id))
  expect([row!.status, row!.flagged]).toEqual([3, 1])
  expect(row!.staffNote).toContain('refunded of 2 USD for a deposit of 20 USD')
  // the whole amount refunded still takes it back
  expect((await webhook('evt-part-3', 'payment.refunded', id, 2000)).status).toBe(200)
  expect((await me(100001)).balance).toBe(Math.round((credited - 20) * 100) / 100)
})

test('deposits asked at once stay within the KYC limit before verification', async () => {
  const limit = (await t.request('GET', '/cashier/methods?login=100001', { token: customer })).json
    .deposit_limit_remaining as number
  expect(limit).toBeGreaterThan(0)
  const each = Math.floor(limit / 2)
  const asked = await Promise.all(
    Array.from({ length: 8 }, () =>
      t.request('POST', '/cashier/deposit', {
        token: customer,
        body: { login: 100001, method: 'card', amount: each },
      }),
    ),
  )
  const started = asked.filter((r) => r.status === 200)
  for (const r of asked) if (r.status !== 200) expect(r.json.error).toBe('KYC_LIMIT_EXCEEDED')
  expect(started.length * each).toBeLessThanOrEqual(limit)
  expect(started).toHaveLength(2)
})

test("challenge fees asked at once leave the payer's free margin at or above zero", async () => {
  const position = await holdMargin()
  const free = (await me(100001)).margin_free
  const rules = { profit_target_pct: 8, daily_loss_pct: 5, total_loss_pct: 10, min_trading_days: 0 }
  const program = await t.request('POST', '/manager/prop/programs', {
    token: manager,
    body: evaluationProgram(rules, { name: 'Race', price: Math.floor(free * 0.4) }),
  })
  expect(program.status).toBe(200)
  const asked = await Promise.all(
    Array.from({ length: 6 }, () =>
      t.request('POST', '/prop/challenge/buy', {
        token: customer,
        body: { program_id: program.json.id, payer_login: 100001 },
      }),
    ),
  )
  const bought = asked.filter((r) => r.status === 200)
  expect(bought.length).toBeGreaterThanOrEqual(1)
  expect(bought.length).toBeLessThanOrEqual(2)
  expect((await me(100001)).margin_free).toBeGreaterThanOrEqual(0)
  await position.close()
})

// a reviewer's finding: with the feed cut off, a challenge fee refused at current prices failed the whole
// purchase for good (PAYMENT_FAILED) instead of answering a retryable 503
test('a challenge bought with positions open and no current price here: 503 PRICE_STALE, nothing written', async () => {
  const position = await holdMargin()
  const rules = { profit_target_pct: 8, daily_loss_pct: 5, total_loss_pct: 10, min_trading_days: 0 }
  const program = await t.request('POST', '/manager/prop/programs', {
    token: manager,
    body: evaluationProgram(rules, { name: 'Stale', price: 10 }),
  })
  expect(program.status).toBe(200)
  const quotes = t.ports.get(MarketPort).quotes
  const purchases = async () =>
    (await t.request('GET', '/prop/purchases', { token: customer })).json.rows.length as number
  const before = await purchases()
  const buy = () =>
    t.request('POST', '/prop/challenge/buy', {
      token: customer,
      body: { program_id: program.json.id, payer_login: 100001, idempotency_key: 'stale-prices-1' },
    })
  quotes.staleness = () => 'no price update for 9.0 s: the price bus is unreachable'
  try {
    const r = await buy()
    expect([r.status, r.json.error]).toEqual([503, 'PRICE_STALE'])
  } finally {
    delete (quotes as { staleness?: unknown }).staleness
  }
  expect(await purchases()).toBe(before)
  // the same key once prices are current: the purchase is made
  const again = await buy()
  expect([again.status, again.json.accepted, again.json.idempotent]).toEqual([200, true, false])
  expect(await purchases()).toBe(before + 1)
  await position.close()
})

test("an account in a prop program's staff-only group is the firm's before its phase row exists", async () => {
  // as a phase's next account is between its funding and its phase row (a crash there leaves it so)
  const customerId = (await t.request('GET', '/customer/me', { token: customer })).json.id
  const funded = await t.request('POST', '/manager/accounts', {
    token: manager,
    body: { group: 'prop\\funded\\USD', password: 'funded-pass-1', customer_id: customerId },
  })
  expect(funded.status).toBe(200)
  const methods = await t.request('GET', `/cashier/methods?login=${funded.json.login}`, { token: customer })
  expect([methods.status, methods.json.error]).toEqual([403, 'ACCOUNT_MANAGED'])
  // a regular group stays the customer's
  expect((await t.request('GET', '/cashier/methods?login=100001', { token: customer })).status).toBe(200)
})

test("nothing is paid into a prop account's capital either (a copy reward into a funded account)", async () => {
  // a probe: fees paid into a funded account propped up its equity against its loss limits, then were
  // paid out as profit through the program's split
  const customerId = (await t.request('GET', '/customer/me', { token: customer })).json.id
  const funded = await t.request('POST', '/manager/accounts', {
    token: manager,
    body: { group: 'prop\\funded\\USD', password: 'funded-pass-2', customer_id: customerId },
  })
  expect(funded.status).toBe(200)
  const accounts = t.ports.get(AccountsPort)
  const refused = await t.ctx.uow
    .run((tx, work) =>
      accounts.transferTx(tx, work, {
        brandId: 1,
        from: { login: 100001, amountMinor: 100 },
        to: { login: funded.json.login, amountMinor: 100 },
        reason: 'TR_REASON_COPY_REWARD',
        idempotencyKey: 'copy-reward-into-funded',
        createdBy: 'test',
      }),
    )
    .then(
      () => null,
      (e) => e,
    )
  expect(refused).toBeInstanceOf(Refusal)
  expect((refused as Refusal).code).toBe('ACCOUNT_MANAGED')
})
