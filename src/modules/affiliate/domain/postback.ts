import { hmacHex } from '../../../kernel/hmac'

/** Sends of one postback before it is parked as dead (spanning about eight hours with the backoff below). */
export const MAX_ATTEMPTS = 10
/** Failed sends in a row after which an affiliate's endpoint is disabled (and staff told). */
export const ENDPOINT_FAILURE_LIMIT = 20

/** Wait before the next send after `attempts` failed ones: 30 s doubling, at most an hour. */
export const backoffMs = (attempts: number) => Math.min(30_000 * 2 ** Math.max(0, attempts - 1), 3_600_000)

/**
 * The signature header of a postback: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. The
 * timestamp is signed, so a receiver refuses replays older than its tolerance (Stripe's scheme); the key
 * id travels in its own header, so a receiver knows which of two secrets to check while they rotate.
 */
export const signPostback = (secret: string, timestampSec: number, body: string) =>
  `t=${timestampSec},v1=${hmacHex(secret, `${timestampSec}.${body}`)}`
