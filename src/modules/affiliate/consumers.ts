import type { Tx } from '../../kernel/db/client'
import type { Consumer, DeliveredEvent, Topic } from '../../kernel/events/topic'
import { BalanceOperation, CustomerRegistered } from '../accounts'
import { CashierCredited, CashierReversed, WithdrawalPaid } from '../cashier'
import { KycApproved } from '../kyc'
import { TradeClosed, type TradePayload, TradeStoppedOut } from '../trading'
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
  fact: (e: DeliveredEvent<T>, ref: Referral) => Omit<Fact, 'eventId'> | Promise<Omit<Fact, 'eventId'>>,
  atWrite = true,
  /** events of the topic that can be a fact at all (asked before any read) */
  relevant: (p: T) => boolean = () => true,
): Consumer<T> {
  const referred = async (e: { payload: T }) => relevant(e.payload) && (await who(e.payload)) !== null
  return {
    name: `affiliate.${name}`,
    topic,
    ...(atWrite ? { interested: (_tx, es) => Promise.all(es.map(referred)) } : {}),
    wants: (es) => Promise.all(es.map(referred)),
    async handle(e, tx: Tx) {
      if (!relevant(e.payload)) return
      const ref = await who(e.payload)
      if (!ref || ref.brandId !== e.brandId) return
      await recordFact(ctx, tx, ref, { ...(await fact(e, ref)), eventId: e.id })
    },
  }
}

const isBonus = (p: { op: string; reason: string }) =>
  p.op === 'OP_CREDIT_IN' || p.op === 'OP_CREDIT_OUT' || p.reason === 'TR_REASON_BONUS'

/**
 * A REAL account whose money is its customer's: a prop challenge's funded account trades the firm's
 * capital (accounts' ManagedFundsPort), and what it pays in commission and swap is no revenue from the
 * referred customer, as a demo account's is none.
 */
async function realAccount(ctx: AffiliateCtx, login: number) {
  const account = await ctx.accounts.read.account(login)
  const group = account ? await ctx.accounts.read.group(account.groupId) : null
  return group?.accountMode === 'REAL' && (await ctx.accounts.managedFunds(login)) === null
}

export function affiliateConsumers(ctx: AffiliateCtx): Consumer<any>[] {
  const byCustomer = (p: { customer_id: number }) => referralOf(ctx, p.customer_id)
  const byLogin = (p: { login: number }) => referralOfLogin(ctx, p.login)
  // a close on a real account carries the broker's revenue: the commission and swap the customer paid
  const trade = async (e: DeliveredEvent<TradePayload>) => {
    const real = await realAccount(ctx, e.payload.login)
    return {
      kind: 'trade' as const,
      reference: String(e.payload.ticket),
      valueMinor: real ? -(e.payload.commission_minor + e.payload.storage_minor) : null,
      currency: real ? e.payload.currency : '',
      volume: e.payload.volume,
      eventTime: e.payload.close_time || e.createdAt,
    }
  }
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
    // net-deposit RevShare takes a withdrawal paid off
    factConsumer(ctx, 'withdrawal-paid', WithdrawalPaid, byCustomer, (e) => ({
      kind: 'withdrawal',
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
    // a bonus (credit in or out, or a balance operation booked as a bonus) on a real account
    factConsumer(
      ctx,
      'bonus',
      BalanceOperation,
      byLogin,
      async (e) => {
        const real = await realAccount(ctx, e.payload.login)
        return {
          kind: 'bonus',
          reference: String(e.payload.id),
          valueMinor: real ? e.payload.amount_minor : 0,
          currency: e.payload.currency,
          volume: 0,
          eventTime: e.createdAt,
        }
      },
      true,
      isBonus,
    ),
  ]
}
