import { and, eq } from 'drizzle-orm'
import type { Tx } from '../../../kernel/db/client'
import { assertSameRequest, fingerprint } from '../../../kernel/http/idempotency'
import { tradeRequests } from '../schema'

type TradeKind = 'open' | 'close' | 'modify' | 'cancel'

/** An idempotency key with the fingerprint of the request it names. */
export interface TradeKey {
  value: string
  hash: string
}

/** The key of a request, or none; the fingerprint covers the kind and what the request asks for. */
export const tradeKey = (
  value: string | undefined,
  kind: TradeKind,
  request: Record<string, unknown>,
): TradeKey | undefined => (value ? { value, hash: fingerprint({ kind, ...request }) } : undefined)

/**
 * The order a key already acted on, or null when it is new; a key reused for another request is 409
 * IDEMPOTENCY_KEY_REUSED. Read before the checks (a repeat answers what the first request did, even
 * when its checks would now fail) and again inside the write transaction (two racing repeats).
 */
export async function priorRequest(q: Pick<Tx, 'select'>, login: number, key: TradeKey | undefined) {
  if (!key) return null
  const [row] = await q
    .select()
    .from(tradeRequests)
    .where(and(eq(tradeRequests.login, login), eq(tradeRequests.idempotencyKey, key.value)))
  if (!row) return null
  assertSameRequest(row.requestHash, key.hash)
  return { ticket: row.ticket, kind: row.kind }
}

/** Records that the key acted on `ticket`, in the transaction of the change. */
export async function recordRequest(
  tx: Tx,
  r: {
    login: number
    key: TradeKey | undefined
    kind: TradeKind
    ticket: number
    actor: string
    now: number
  },
) {
  if (!r.key) return
  await tx.insert(tradeRequests).values({
    login: r.login,
    idempotencyKey: r.key.value,
    kind: r.kind,
    requestHash: r.key.hash,
    ticket: r.ticket,
    actor: r.actor,
    createdAt: r.now,
  })
}
