import { sha256 } from '@noble/hashes/sha2.js'
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js'
import { ApiError } from './errors'

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
