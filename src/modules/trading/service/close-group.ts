import { and, eq } from 'drizzle-orm'
import { rootMessage } from '../../../kernel/db/errors'
import { ApiError } from '../../../kernel/http/errors'
import { unavailable } from '../../../kernel/http/http'
import { Refusal } from '../../../kernel/refusal'
import type { UseCase } from '../../../kernel/use-case'
import { pricePositions } from '../book/exposure'
import type { OrderRow } from '../book/positions'
import type { CloseRequest } from '../commit/close-commit'
import { isPriceTooOld } from '../commit/fill-age'
import { refuse, TRADING } from '../errors'
import { orders } from '../schema'
import { type CloseBasis, closeRequest } from './close'
import {
  fillRates,
  orderContext,
  refuseManual,
  refuseStalePrices,
  type SessionScope,
  type TradingServices,
  tradableSymbol,
  tradingAccount,
} from './shared'

/** A close check's refusal (trading's own kinds): the position is skipped. Anything else is a fault. */
const refused = (e: unknown): e is Refusal => e instanceof Refusal && e.table === TRADING.table

/**
 * What a batch stopped by `fault` answers, saying how many it closed before: 503 SERVICE_UNAVAILABLE as
 * the kernel answers a dependency away or busy (kernel/http), 503 PRICE_STALE when the instance's prices
 * went stale between two transactions; any other fault as it is (500, logged by the kernel).
 */
function stoppedBy(fault: Error, closed: number, of: number): Error {
  const after = `after closing ${closed} of ${of} positions; retry to close the rest`
  if (refused(fault)) return new Refusal(fault.table, fault.kind, `${fault.message}; stopped ${after}`)
  const down = unavailable(fault)
  if (!down) return fault
  return new ApiError(503, 'SERVICE_UNAVAILABLE', `${down} ${after}`, { 'retry-after': '1' })
}

/**
 * DELETE /trade/close/group: closes a login's open positions (all, only winners or only losers, of one
 * symbol or every one) together. The account is read once, each symbol's quote and the cross rates once
 * for the batch; the closes go to the committer together (commit/close-commit.ts submitAll: the group
 * commit's batches on a Bun server, transactions of 100 in sequence at the edge, where a transaction that
 * starts 250 ms or more after the last read reads the quotes and rates again, once a symbol, and checks
 * its closes at them).
 *
 * Spec 4.7: only positions that fail the close check are skipped (logged), and the batch answers 200 with
 * the number closed. A fault (the database refused or did not answer) is no skip: the request answers it
 * (503 SERVICE_UNAVAILABLE for a database or cache away or busy, saying how many it closed) after the
 * closes committed before it.
 */
export async function closeGroup({
  ctx,
  brand,
  session,
  input,
}: UseCase<
  TradingServices,
  { login: number; type: number; symbol?: string; comment?: string },
  SessionScope
>) {
  const { account, group } = await tradingAccount(ctx, brand, session, input.login)
  await refuseManual(ctx, { session }, account.login, 'close')
  // the whole batch waits for current prices rather than each position being skipped
  refuseStalePrices(ctx)
  const open = await ctx.db
    .select()
    .from(orders)
    .where(
      and(
        eq(orders.login, account.login),
        eq(orders.state, 'open'),
        input.symbol ? eq(orders.symbol, input.symbol) : undefined,
      ),
    )
  const priced = (await pricePositions(ctx, account, group, open)) ?? []
  // and again once the prices are read: at the edge, reading them reads the engine's word that they are current
  refuseStalePrices(ctx)
  const chosen = priced
    .filter((p) => (input.type === 1 ? p.profit > 0 : input.type === -1 ? p.profit < 0 : true))
    .map((p) => p.order)
  const skip = (o: OrderRow, e: unknown) =>
    ctx.logger.log('info', 'group close skipped a position', {
      ticket: o.ticket,
      reason: e instanceof Error ? e.message : String(e),
    })
  const first = chosen[0]
  if (!first) return { data: 'OK' as const, closed: 0 }
  // every position is the login's: its account and group, read once
  const oc = await orderContext(ctx, brand.id, first)
  if (!oc) {
    for (const o of chosen) skip(o, `order ${o.ticket} not found`)
    return { data: 'OK' as const, closed: 0 }
  }
  const fail = (m: string) => refuse('closeRefused', m)
  const each = { comment: input.comment !== undefined ? 'GROUP_CLOSE' : undefined }
  /** The positions' close checks at the quotes (one read a symbol) and cross rates of now. */
  const price = async (batch: OrderRow[]): Promise<(CloseRequest | Refusal)[]> => {
    const symbols = new Map<string, CloseBasis['sym'] | Refusal>()
    for (const s of new Set(batch.map((o) => o.symbol)))
      symbols.set(
        s,
        await tradableSymbol(ctx, oc.group, s, fail).catch((e: unknown) => {
          if (refused(e)) return e
          throw e
        }),
      )
    // the instance's prices gone stale while the quotes were read: the whole batch waits, as above
    refuseStalePrices(ctx)
    const rates = await fillRates(ctx)
    return batch.map((o) => {
      const sym = symbols.get(o.symbol)!
      if (sym instanceof Refusal) return sym
      try {
        return closeRequest(ctx, o, { oc, sym, rates }, each, 'group_close')
      } catch (e) {
        if (!refused(e)) throw e
        return e
      }
    })
  }
  const reqs: CloseRequest[] = []
  for (const [i, r] of (await price(chosen)).entries()) {
    if (r instanceof Refusal) skip(chosen[i]!, r)
    else reqs.push(r)
  }
  // a batch that stops between two transactions (its prices stale, a dependency away): a fault, no skip
  let stopped: Error | undefined
  const outcomes = await ctx.tradeCloses.submitAll(reqs, async (part) => {
    try {
      return await price(part.map((r) => r.input.order))
    } catch (e) {
      stopped = e instanceof Error ? e : new Error(String(e))
      throw stopped
    }
  })
  let closed = 0
  let fault: Error | undefined
  outcomes.forEach((d, i) => {
    const o = reqs[i]!.input.order
    if (d instanceof Error) {
      // a close whose price grew old waiting for the database: the batch waits for current prices (as
      // refuseStalePrices above), no position is skipped for it
      if (d !== stopped && refused(d) && !isPriceTooOld(d)) skip(o, d)
      else fault ??= d
    } else if (d.kind === 'closed') closed++
    // closed or changed meanwhile (its SL or TP, a stop-out, another close): no longer this batch's
    else skip(o, `order ${o.ticket} closed or changed meanwhile`)
  })
  if (fault) {
    ctx.logger.log('warn', 'group close stopped', {
      login: account.login,
      closed,
      not_closed: outcomes.filter(
        (d) => d instanceof Error && (d === stopped || !refused(d) || isPriceTooOld(d)),
      ).length,
      err: rootMessage(fault),
    })
    throw stoppedBy(fault, closed, chosen.length)
  }
  return { data: 'OK' as const, closed }
}
