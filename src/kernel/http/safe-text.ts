import { invalid } from './errors'

/**
 * Characters no free-text field of this API takes: C0 controls but tab, line feed and carriage return
 * (NUL included), DEL and the C1 controls, and the bidirectional embeddings, overrides and isolates
 * (U+202A–U+202E, U+2066–U+2069) that make "txt.exe" display as "exe.txt" (Trojan Source). Marks that
 * right-to-left scripts need (U+200E, U+200F, U+061C) stay allowed.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNSAFE = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/

/**
 * A UTF-16 surrogate standing alone (with the `u` flag a pair is one code point and never matches): JSON
 * can carry one ("\ud800") but UTF-8 cannot store it, so the text would come back with U+FFFD in its
 * place, and a strict decoder (serde_json) refuses the whole answer that echoes it.
 */
const LONE_SURROGATE = /\p{Cs}/u

/** What is wrong with a text, or null. */
function unsafeText(s: string): 'control' | 'surrogate' | null {
  return UNSAFE.test(s) ? 'control' : LONE_SURROGATE.test(s) ? 'surrogate' : null
}
const CONTROL = 'control or bidirectional-override characters'
const SURROGATE = 'not well-formed text (a lone UTF-16 surrogate such as \\ud800)'
const refusal = (at: string, s: string) => {
  const why = unsafeText(s)
  return why && invalid(`${at}: ${why === 'control' ? `${CONTROL} are not allowed` : SURROGATE}`)
}

/**
 * How deep a body may nest: no body of this API goes past a few levels, and a walk (this one, the
 * validator's) of 10,000 levels overflows a Worker's stack where Bun's holds (the edge answered 500).
 */
export const MAX_BODY_DEPTH = 32

/**
 * Refuses a request value holding an unsafe character anywhere, or nested deeper than MAX_BODY_DEPTH
 * (400 INVALID_DATA naming the field): one rule for every JSON and form body, applied before any route
 * sees them.
 */
export function refuseUnsafeText(value: unknown, path = '', depth = 0): void {
  if (typeof value === 'string') {
    const refused = refusal(path || 'body', value)
    if (refused) throw refused
    return
  }
  if (value instanceof Blob) {
    // a file's name is text the API shows back (uploads: original_name)
    const name = (value as Partial<File>).name
    const why = typeof name === 'string' ? unsafeText(name) : null
    if (why)
      throw invalid(
        `${path || 'body'}: the file name ${why === 'control' ? `has ${CONTROL}` : `is ${SURROGATE}`}`,
      )
    return
  }
  if (!value || typeof value !== 'object') return
  if (depth >= MAX_BODY_DEPTH) throw invalid(`${path}: nested deeper than ${MAX_BODY_DEPTH} levels`)
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) refuseUnsafeText(v, path ? `${path}.${i}` : String(i), depth + 1)
    return
  }
  for (const k of Object.keys(value)) {
    const at = path ? `${path}.${k}` : k
    const refused = refusal(at, k)
    if (refused) throw refused
    // no schema of this API has the key, and a copy made by assignment turns it into the prototype
    if (k === '__proto__') throw invalid(`${at}: not allowed`)
    refuseUnsafeText((value as Record<string, unknown>)[k], at, depth + 1)
  }
}
