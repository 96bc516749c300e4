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

/**
 * Other names the same values arrive under (common in tracking tools). A Map, as every lookup by a name
 * from a request must be: a plain object answers `constructor` or `__proto__` from its prototype.
 */
const ALIASES: ReadonlyMap<string, ParamName> = new Map([
  ['aff', 'affiliate'],
  ['aff_id', 'affiliate'],
  ['af_code', 'affiliate'],
  ['gclid', 'click_id'],
  ['fbclid', 'click_id'],
  ['ttclid', 'click_id'],
])
const NAMES: ReadonlySet<string> = new Set(PARAM_NAMES)

const MAX_VALUE = 128
const PLAIN = /^[\p{L}\p{N} ._~:@!$'()*+,;=/%-]+$/u

const nameOf = (k: string): ParamName | null => (NAMES.has(k) ? (k as ParamName) : (ALIASES.get(k) ?? null))

/**
 * A value as kept: plain text of 1..128 characters, its outer spaces trimmed; else null (dropped, never an
 * error). A control character anywhere (CR, LF, NUL, tab) makes it not plain text: it is not trimmed away.
 */
export function cleanValue(raw: unknown): string | null {
  if (typeof raw !== 'string') return null
  const v = raw.trim()
  return v.length === 0 || v.length > MAX_VALUE || !PLAIN.test(raw) ? null : v
}

/**
 * The attribution values of a query string, store referrer or record; the first of a repeated name wins.
 * The answer has no prototype: only the names above are ever its keys, whatever the source held.
 */
export function parseParams(source: URLSearchParams | Record<string, unknown>): Params {
  const out: Params = Object.create(null)
  const entries = source instanceof URLSearchParams ? source.entries() : Object.entries(source)
  for (const [k, raw] of entries) {
    const name = nameOf(k.toLowerCase())
    if (!name || out[name] !== undefined) continue
    const v = cleanValue(raw)
    if (v !== null) out[name] = v
  }
  return out
}

/**
 * A touch's stored values (JSON) under the names above only: a name an older version kept by mistake (one
 * a plain object's prototype answered, `constructor`) is no value. The values stay as stored (a link's
 * campaign comes from staff, not from the request).
 */
export function storedParams(json: string): Params {
  const out: Params = Object.create(null)
  const stored: unknown = JSON.parse(json)
  if (stored && typeof stored === 'object')
    for (const [k, v] of Object.entries(stored))
      if (NAMES.has(k) && typeof v === 'string' && v) out[k as ParamName] = v
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
