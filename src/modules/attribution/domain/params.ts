/**
 * The public attribution values of spec 4.16, as query parameters of a brand page or a tracking link, in
 * an install's store referrer, or in a registration body. They are values, not credentials: anything
 * unknown is ignored and anything too long or not plain text is dropped, never an error.
 */
export const PARAM_NAMES = [
  'affiliate',
  'link',
  'campaign',
  'utm_source',
  'utm_medium',
  'utm_campaign',
  'utm_term',
  'utm_content',
  'sub1',
  'sub2',
  'sub3',
  'sub4',
  'sub5',
  'click_id',
] as const
type ParamName = (typeof PARAM_NAMES)[number]
export type Params = Partial<Record<ParamName, string>>

/** Other names the same values arrive under (common in tracking tools). */
const ALIASES: Record<string, ParamName> = {
  aff: 'affiliate',
  aff_id: 'affiliate',
  af_code: 'affiliate',
  gclid: 'click_id',
  fbclid: 'click_id',
  ttclid: 'click_id',
}

const MAX_VALUE = 128
const PLAIN = /^[\p{L}\p{N} ._~:@!$'()*+,;=/%-]+$/u

const nameOf = (k: string): ParamName | null =>
  (PARAM_NAMES as readonly string[]).includes(k) ? (k as ParamName) : (ALIASES[k] ?? null)

/** The attribution values of a query string, store referrer or record; the first of a repeated name wins. */
export function parseParams(source: URLSearchParams | Record<string, string | undefined>): Params {
  const out: Params = {}
  const entries = source instanceof URLSearchParams ? source.entries() : Object.entries(source)
  for (const [k, raw] of entries) {
    const name = nameOf(k.toLowerCase())
    if (!name || out[name] !== undefined || typeof raw !== 'string') continue
    const v = raw.trim()
    if (v.length === 0 || v.length > MAX_VALUE || !PLAIN.test(v)) continue
    out[name] = v
  }
  return out
}

export const hasValues = (p: Params) => Object.keys(p).length > 0

/** A store install referrer (`utm_source=x&affiliate=Y`, possibly URL-encoded once more). */
export function parseReferrer(referrer: string): Params {
  const text = referrer.length > 1024 ? '' : referrer.includes('%3D') ? safeDecode(referrer) : referrer
  return parseParams(new URLSearchParams(text))
}

function safeDecode(s: string) {
  try {
    return decodeURIComponent(s)
  } catch {
    return ''
  }
}
