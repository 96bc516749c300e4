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

/**
 * Postback macros (as Cellxpert and Affise offer): `{click_id}`, `{sub1}`…`{sub5}`, `{utm_source}`…,
 * `{event}` (the conversion kind), `{value}`, `{currency}`, `{conversion_id}`, `{customer_id}`,
 * `{reference_id}`, `{event_time}` in the path or query of a postback URL are replaced by the
 * conversion's values, URL-encoded (an unknown macro or a missing value becomes empty). The host is
 * never templated: it is checked as written.
 */
export function expandPostbackUrl(url: string, body: string): string {
  let c: Record<string, unknown> = {}
  try {
    c = (JSON.parse(body) as { conversion?: Record<string, unknown> }).conversion ?? {}
  } catch {}
  const tracking = (c.tracking ?? {}) as Record<string, unknown>
  const values: Record<string, unknown> = {
    ...tracking,
    event: c.kind,
    value: c.value,
    currency: c.currency,
    conversion_id: c.id,
    customer_id: c.customer_id,
    reference_id: c.reference_id,
    event_time: c.event_time,
  }
  const u = new URL(url)
  const fill = (text: string) =>
    text.replace(/\{([a-z0-9_]{1,32})\}|%7B([a-z0-9_]{1,32})%7D/gi, (_, a: string, b: string) => {
      // own keys only: `{constructor}` or `{__proto__}` would answer from Object's prototype
      const name = (a ?? b).toLowerCase()
      const v = Object.hasOwn(values, name) ? values[name] : undefined
      return v === undefined || v === null ? '' : encodeURIComponent(String(v))
    })
  return `${u.protocol}//${u.host}${fill(u.pathname)}${fill(u.search)}`
}
