import type { Tx } from '../../kernel/db/client'
import type { Consumer, DeliveredEvent, Topic } from '../../kernel/events/topic'
import { CustomerRegistered } from '../accounts'
import { CashierCredited, CashierReversed } from '../cashier'
import { KycApproved } from '../kyc'
import { TradeClosed, TradeStoppedOut } from '../trading'
import type { AffiliateCtx } from './context'
import type { Fact } from './domain/conversions'
import { recordFact } from './service/ledger'
import { type Referral, referralOf, referralOfLogin } from './service/referral'

/**
 * One consumer per source of a conversion (spec 4.17): each turns its event into a fact of a referred
 * customer. Whether a customer was referred is known from registration on (its record is written in the
 * registration's transaction) and read through the shared cache: asked as the event is written
 * (`interested`), so an event of a customer nobody referred is written delivered and never claimed, and
 * again before delivery (`wants`). Not at write time for the registration itself (its transaction is the
 * one writing the record, which a read beside it does not see yet), nor for trades (below).
 */
function factConsumer<T>(
  ctx: AffiliateCtx,
  name: string,
  topic: Topic<T>,
  who: (p: T) => Promise<Referral | null>,
  fact: (e: DeliveredEvent<T>) => Omit<Fact, 'eventId'>,
  atWrite = true,
): Consumer<T> {
  const referred = async (e: { payload: T }) => (await who(e.payload)) !== null
  return {
    name: `affiliate.${name}`,
    topic,
    ...(atWrite ? { interested: (_tx, es) => Promise.all(es.map(referred)) } : {}),
    wants: referred,
    async handle(e, tx: Tx) {
      const ref = await who(e.payload)
      if (!ref || ref.brandId !== e.brandId) return
      await recordFact(ctx, tx, ref, { ...fact(e), eventId: e.id })
    },
  }
}

export function affiliateConsumers(ctx: AffiliateCtx): Consumer<any>[] {
  const byCustomer = (p: { customer_id: number }) => referralOf(ctx, p.customer_id)
  const byLogin = (p: { login: number }) => referralOfLogin(ctx, p.login)
  const trade = (e: DeliveredEvent<{ ticket: number; volume: number; close_time: number }>) => ({
    kind: 'trade' as const,
    reference: String(e.payload.ticket),
    valueMinor: null,
    currency: '',
    volume: e.payload.volume,
    eventTime: e.payload.close_time || e.createdAt,
  })
  return [
    factConsumer(
      ctx,
      'registration',
      CustomerRegistered,
      byCustomer,
      (e) => ({
        kind: 'registration',
        reference: String(e.payload.customer_id),
        valueMinor: null,
        currency: '',
        volume: 0,
        eventTime: e.createdAt,
      }),
      false,
    ),
    factConsumer(ctx, 'kyc-approved', KycApproved, byCustomer, (e) => ({
      kind: 'kyc',
      reference: String(e.payload.customer_id),
      valueMinor: null,
      currency: '',
      volume: 0,
      eventTime: e.createdAt,
    })),
    factConsumer(ctx, 'deposit-credited', CashierCredited, byCustomer, (e) => ({
      kind: 'deposit',
      reference: String(e.payload.transaction_id),
      valueMinor: Math.abs(e.payload.amount_minor),
      currency: e.payload.currency,
      volume: 0,
      eventTime: e.createdAt,
    })),
    factConsumer(ctx, 'deposit-reversed', CashierReversed, byCustomer, (e) => ({
      kind: 'reversal',
      reference: String(e.payload.transaction_id),
      valueMinor: Math.abs(e.payload.amount_minor),
      currency: e.payload.currency,
      volume: 0,
      eventTime: e.createdAt,
    })),
    // a batch of closes (a master's followers' copies, a stop-out sweep) would ask two cached reads per
    // close inside the batch's write: trades are asked at delivery only
    factConsumer(ctx, 'trade-closed', TradeClosed, byLogin, trade, false),
    factConsumer(ctx, 'trade-stopped-out', TradeStoppedOut, byLogin, trade, false),
  ]
}
