import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'
import { ApiError, invalid } from './errors'

/** Canonical JSON: keys sorted at every level, so the same request always gives the same text. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`
  if (v && typeof v === 'object')
    return `{${Object.keys(v)
      .sort()
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
      .join(',')}}`
  return JSON.stringify(v)
}

/**
 * The fingerprint stored with an idempotency key (Stripe's rule): the SHA-256 of what the request asks
 * for, so a key replayed with another request is told apart from a retry of the same one.
 */
export const fingerprint = (request: Record<string, unknown>) =>
  bytesToHex(sha256(utf8ToBytes(canonical(request))))

/**
 * A key already used: the same request gets the first result; another request under it is a client
 * bug, answered 409 IDEMPOTENCY_KEY_REUSED (a row stored before fingerprints existed matches anything).
 */
export function assertSameRequest(stored: string | null, current: string) {
  if (stored !== null && stored !== current)
    throw new ApiError(
      409,
      'IDEMPOTENCY_KEY_REUSED',
      'idempotency_key: already used for a different request; use a new key for a new request',
    )
}

const KEY = /^[A-Za-z0-9_.:-]{8,64}$/
/**
 * The keys the platform's own modules act with on a client's account (copy trading's `copy:<subscription>
 * :<ticket>:open`): a client's key of that form would take the copier's place (its own order recorded as
 * the copy) or block it.
 */
const RESERVED = /^copy[:-]/i

/**
 * The `Idempotency-Key` header of a request (Stripe's convention), when sent: 8 to 64 letters, digits
 * and `_ . : -`, not starting with `copy:` or `copy-`, else 400 INVALID_DATA. Read from the request, not
 * Elysia's `headers` (which copies every header of every request into an object).
 */
export function idempotencyKeyOf(request: Request): string | undefined {
  const v = request.headers.get('idempotency-key')
  if (v === null) return undefined
  if (!KEY.test(v)) throw invalid('Idempotency-Key: 8 to 64 letters, digits or _ . : -')
  if (RESERVED.test(v)) throw invalid("Idempotency-Key: keys starting with copy: or copy- are the platform's")
  return v
}
