import { and, eq } from 'drizzle-orm'
import type { UseCase } from '../../../kernel/use-case'
import { refreshAfterCommit } from '../commit/execution'
import { priorRequest, recordRequest, tradeKey } from '../commit/idempotency'
import { refuse } from '../errors'
import { TradeCancelled } from '../events'
import { orders } from '../schema'
import { tradeEvent } from '../views'
import {
  type ActorScope,
  actorName,
  actorOrder,
  orderContext,
  refresh,
  refuseManual,
  replayed,
  type TradingServices,
} from './shared'

/** DELETE /trade/cancel: cancels a pending order of the session's login. */
export async function cancelOrder({
  ctx,
  brandId,
  actor,
  input,
  idempotencyKey,
}: UseCase<TradingServices, { order: number }, ActorScope>) {
  const fail = (m: string) => refuse('cancelRefused', m)
  const found = await actorOrder(ctx, brandId, actor, input.order)
  if (found.kind !== 'ok') throw fail(`order ${input.order} not found`)
  const key = tradeKey(idempotencyKey, 'cancel', input)
  if (await priorRequest(ctx.db, found.order.login, key)) return replayed({ data: 'ok' as const })
  if (found.order.state !== 'pending')
    throw fail(`order ${input.order} is not a pending order (state ${found.order.state})`)
  await refuseManual(ctx, actor, found.order.login, 'cancel', found.order.ticket)
  const oc = await orderContext(ctx, brandId, found.order)
  if (!oc) throw fail(`order ${input.order} not found`)
  const now = ctx.clock.now()
  const done = await ctx.uow.run(async (tx, work) => {
    if (await priorRequest(tx, found.order.login, key)) return { replay: true as const }
    const [r] = await tx
      .update(orders)
      // never filled, nothing charged: the commission estimated when it was placed goes (history shows 0)
      .set({
        state: 'cancelled',
        commission: 0,
        closeTime: now,
        closeReason: 'client',
        updatedAt: now,
        origin: ctx.origin,
      })
      .where(and(eq(orders.ticket, input.order), eq(orders.state, 'pending')))
      .returning()
    if (r) {
      await recordRequest(tx, {
        login: r.login,
        key,
        kind: 'cancel',
        ticket: r.ticket,
        actor: actorName(actor),
        now,
      })
      work.emit(TradeCancelled, brandId, { ...tradeEvent(r, oc.group.currency), reason: 'client' })
      refreshAfterCommit(work, refresh(ctx), r)
    }
    return { row: r }
  })
  if ('replay' in done) return replayed({ data: 'ok' as const })
  if (!done.row) throw fail(`order ${input.order} was filled or cancelled meanwhile`)
  return { data: 'ok' as const }
}
