/**
 * A registration's attribution (service/resolve.ts): the winning touch's public values, the affiliate and
 * link its codes named, and the decision that chose it.
 */
interface Attribution {
  /** the winning touch's values; its codes as affiliate_code and link_code */
  values: Record<string, string>
  affiliateId: number | null
  linkId: number | null
  /** the install whose touch won (`wonBy` install) */
  installationId: string | null
  touchId: number | null
  /** the rule: install, body, touch, direct (the demo's own: demo) */
  wonBy: string
  decisionId: number | null
}

/** The names the record gives what is not a value of the touch. */
const FIELDS = new Set(['affiliate_id', 'link_id', 'installation_id', 'touch_id', 'won_by', 'decision_id'])

/**
 * What the customer's record keeps (accounts stores it with the customer as given, JSON of text values):
 * the values, then the ids and the rule.
 */
export function toRecord(a: Attribution): Record<string, string> {
  // no prototype: a name such as `__proto__` from an old touch is a key like any other, never a setter
  const out: Record<string, string> = Object.create(null)
  for (const [k, v] of Object.entries(a.values)) if (v && !FIELDS.has(k)) out[k] = v
  if (a.affiliateId) out.affiliate_id = String(a.affiliateId)
  if (a.linkId) out.link_id = String(a.linkId)
  if (a.installationId) out.installation_id = a.installationId
  if (a.touchId) out.touch_id = String(a.touchId)
  out.won_by = a.wonBy
  if (a.decisionId) out.decision_id = String(a.decisionId)
  return out
}

const positive = (v: unknown) => {
  const n = Number(v)
  return Number.isSafeInteger(n) && n > 0 ? n : null
}

/** The attribution a customer's record keeps, or null: none, or not a record this module wrote. */
export function fromRecord(text: string | null): Attribution | null {
  if (!text) return null
  let r: unknown
  try {
    r = JSON.parse(text)
  } catch {
    return null
  }
  if (!r || typeof r !== 'object' || Array.isArray(r)) return null
  const record = r as Record<string, unknown>
  const values: Record<string, string> = Object.create(null)
  for (const [k, v] of Object.entries(record)) if (!FIELDS.has(k) && typeof v === 'string' && v) values[k] = v
  return {
    values,
    affiliateId: positive(record.affiliate_id),
    linkId: positive(record.link_id),
    installationId: typeof record.installation_id === 'string' ? record.installation_id : null,
    touchId: positive(record.touch_id),
    wonBy: typeof record.won_by === 'string' ? record.won_by : 'unknown',
    decisionId: positive(record.decision_id),
  }
}
