import { expect } from 'bun:test'
import { eq } from 'drizzle-orm'
import type { ManualClock } from '../../src/kernel/clock'
import type { Topic } from '../../src/kernel/events/topic'
import { BalanceOperation } from '../../src/modules/accounts'
import { customers } from '../../src/modules/accounts/schema'
import { commissions } from '../../src/modules/affiliate/schema'
import { TradeClosed } from '../../src/modules/trading'
import type { TestApp } from './app'
import { closedTrade } from './events'

type Customer = { id: number; login: number }

/**
 * The events an affiliate's customer makes facts of, emitted through the real outbox at a time of the test
 * clock: money of the cashier, closed trades with the revenue they carry, bonuses.
 */
export function affiliateEvents(app: () => TestApp, clock: ManualClock) {
  const emitAt = async <T>(at: number, topic: Topic<T>, payload: T) => {
    clock.set(at)
    await app().ctx.uow.run(async (_tx, work) => work.emit(topic, 1, payload))
  }
  const money = (c: Customer, transaction_id: number, amount_minor: number, currency = 'USD') => ({
    transaction_id,
    customer_id: c.id,
    login: c.login,
    method: 'card',
    provider: 'sandbox',
    amount_minor,
    fee_minor: 0,
    currency,
  })
  /** a close whose commission and swap (negative: the customer paid) are the broker's revenue */
  const trade = (
    c: { login: number },
    ticket: number,
    at: number,
    commission: number,
    swap = 0,
    volume = 100,
  ) =>
    emitAt(at, TradeClosed, {
      ...closedTrade({ ticket, login: c.login, volume, at }),
      commission_minor: commission,
      storage_minor: swap,
    })
  const bonus = (c: { login: number }, id: number, at: number, amount_minor: number) =>
    emitAt(at, BalanceOperation, {
      id,
      login: c.login,
      op: 'OP_CREDIT_IN',
      ticket: null,
      amount_minor,
      balance_after_minor: 0,
      credit_after_minor: amount_minor,
      currency: 'USD',
      reason: 'TR_REASON_BONUS',
      comment: 'welcome bonus',
      api_data: null,
      idempotency_key: null,
      created_by: 'manager:1',
      created_time: Math.floor(at / 1000),
    })
  return { emitAt, money, trade, bonus }
}

/**
 * Staff's side of an affiliate test: a partner with a link and a plan of its own, a customer registered
 * through its link with a REAL account, the commission rows of an affiliate, and a month's close, each at
 * a time of the test clock (`at0` when none is given). `prefix` keeps the emails of one file apart from
 * another's.
 */
export function affiliatePartners(app: () => TestApp, clock: ManualClock, prefix: string, at0?: number) {
  let n = 0
  const asStaff = async (method: string, path: string, body?: unknown) =>
    app().request(method, path, { token: await app().staffToken(), ...(body === undefined ? {} : { body }) })
  const setAt = (at: number | undefined) => {
    const when = at ?? at0
    if (when !== undefined) clock.set(when)
  }
  async function partner(name: string, terms: Record<string, unknown>, at?: number) {
    setAt(at)
    const p = await asStaff('POST', '/manager/affiliates', {
      email: `${name}@example.com`,
      code: `${name.toUpperCase()}1`,
      password: `${name}-pass-1`,
    })
    expect(p.status).toBe(200)
    expect(
      (await asStaff('POST', '/manager/affiliate-links', { affiliate_id: p.json.id, code: `${name}-link` }))
        .status,
    ).toBe(200)
    const plan = await asStaff('POST', '/manager/affiliate-plans', { name, terms })
    expect(plan.status).toBe(200)
    expect(
      (await asStaff('PUT', `/manager/affiliates/${p.json.id}/plan`, { plan_id: plan.json.id })).status,
    ).toBe(200)
    return { id: p.json.id as number, planId: plan.json.id as number }
  }
  async function referred(name: string, at?: number) {
    setAt(at)
    const email = `${prefix}-${++n}@example.com`
    const r = await app().request('POST', '/customer/register', {
      body: { email, password: `${prefix}-pass-1`, name: 'P', attribution: { link: `${name}-link` } },
    })
    expect(r.status).toBe(200)
    const [c] = await app().ctx.db.select().from(customers).where(eq(customers.email, email))
    const acc = await asStaff('POST', '/manager/accounts', {
      group: 'real\\USD',
      password: `${prefix}-pass-1`,
      customer_id: c!.id,
    })
    expect(acc.status).toBe(200)
    return { id: c!.id, login: acc.json.login as number }
  }
  const rowsOf = (affiliateId: number) =>
    app()
      .ctx.db.select()
      .from(commissions)
      .where(eq(commissions.affiliateId, affiliateId))
      .orderBy(commissions.id)
  const sum = (rows: { amountMinor: number }[]) => rows.reduce((s, r) => s + r.amountMinor, 0)
  async function close(period: string, at: number) {
    clock.set(at)
    await app().settle()
    const r = await asStaff('POST', `/manager/affiliate-periods/${period}/close`)
    expect(r.status).toBe(200)
  }
  return { asStaff, partner, referred, rowsOf, sum, close }
}
