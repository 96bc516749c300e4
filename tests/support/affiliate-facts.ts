import type { ManualClock } from '../../src/kernel/clock'
import type { Topic } from '../../src/kernel/events/topic'
import { BalanceOperation } from '../../src/modules/accounts'
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
