import { ApiError } from '../../kernel/http/errors'
import {
  cancelOrder,
  closeOrder,
  modifyOrder,
  type OpenInput,
  openFor,
  type TradingServices,
} from './service'

/** What a call of the write port answers: done (with what), or refused with the code and reason. */
export type TradeResult<T> = ({ ok: true } & T) | { ok: false; status: number; code: string; reason: string }

/**
 * A trade asked by a module, not a session: who acts (`copy:<subscription>`, `prop:<challenge>`,
 * `staff-tool:<name>`), recorded on the order; the brand it acts in; and an idempotency key, unique per
 * account, so a redelivered event repeats nothing.
 */
export interface SystemRequest {
  brandId: number
  actor: string
  idempotencyKey: string
}

/** Runs a trade; a refusal (every check of the HTTP routes applies) comes back as data, not thrown. */
async function attempt<T extends object>(run: () => Promise<T>): Promise<TradeResult<T>> {
  try {
    return { ok: true, ...(await run()) }
  } catch (e) {
    if (e instanceof ApiError) return { ok: false, status: e.status, code: e.code, reason: e.message }
    throw e
  }
}

const notFound = (login: number) =>
  new ApiError(403, 'USER_NOT_FOUND', `account ${login} not found in this brand`)

/** Trading's write port (TradingApi): open, close (whole or part), modify and cancel for a system actor. */
export function writePort(ctx: TradingServices) {
  return {
    open: (r: SystemRequest & OpenInput) =>
      attempt(async () => {
        const { brandId, actor, idempotencyKey, ...input } = r
        const account = await ctx.accountsRead.account(input.login)
        const group = account && (await ctx.accountsRead.group(account.groupId))
        if (!account || !group || account.brandId !== brandId) throw notFound(input.login)
        const opened = await openFor(ctx, brandId, account, group, input, actor, idempotencyKey)
        return { order: opened.order, idempotent: 'idempotent' in opened }
      }),
    close: (r: SystemRequest & { order: number; volume?: number; comment?: string }) =>
      attempt(async () => {
        const { brandId, actor, idempotencyKey, ...input } = r
        const done = await closeOrder(ctx, brandId, { system: actor }, input, idempotencyKey)
        return { idempotent: 'idempotent' in done }
      }),
    modify: (r: SystemRequest & { order: number; sl: number; tp: number }) =>
      attempt(async () => {
        const { brandId, actor, idempotencyKey, ...input } = r
        const done = await modifyOrder(ctx, brandId, { system: actor }, input, idempotencyKey)
        return { idempotent: 'idempotent' in done }
      }),
    cancel: (r: SystemRequest & { order: number }) =>
      attempt(async () => {
        const { brandId, actor, idempotencyKey, ...input } = r
        const done = await cancelOrder(ctx, brandId, { system: actor }, input, idempotencyKey)
        return { idempotent: 'idempotent' in done }
      }),
  }
}

export type TradingWritePort = ReturnType<typeof writePort>
