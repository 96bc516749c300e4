import fc from 'fast-check'

/** A JSON Schema node as the OpenAPI document prints it. */
export type Schema = {
  type?: string
  properties?: Record<string, Schema>
  required?: string[]
  items?: Schema
  enum?: unknown[]
  anyOf?: Schema[]
  minimum?: number
  maximum?: number
  exclusiveMinimum?: boolean
  exclusiveMaximum?: boolean
  minLength?: number
  maxLength?: number
  minItems?: number
  maxItems?: number
  maxProperties?: number
  pattern?: string
  format?: string
  example?: unknown
  additionalProperties?: Schema | boolean
  nullable?: boolean
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER

/** Values that satisfy `s` (a fast-check arbitrary), kept small and realistic where the schema allows. */
export function arbitrary(s: Schema): fc.Arbitrary<unknown> {
  if (s.nullable) return fc.oneof(fc.constant(null), arbitrary({ ...s, nullable: false }))
  if (s.enum) return fc.constantFrom(...s.enum)
  if (s.anyOf) return fc.oneof(...s.anyOf.map(arbitrary))
  switch (s.type) {
    case 'integer': {
      const min = (s.minimum ?? -1000) + (s.exclusiveMinimum ? 1 : 0)
      const max = (s.maximum ?? 1000) - (s.exclusiveMaximum ? 1 : 0)
      return fc.integer({ min: Math.max(min, -MAX_SAFE), max: Math.min(max, MAX_SAFE) })
    }
    case 'number': {
      const min = s.minimum ?? -1000
      const max = s.maximum ?? 1000
      return fc
        .double({ min, max, noNaN: true, noDefaultInfinity: true })
        .filter(
          (n) => (!s.exclusiveMinimum || n > min) && (!s.exclusiveMaximum || n < max) && !Object.is(n, -0),
        )
    }
    case 'boolean':
      return fc.boolean()
    case 'string': {
      const minLength = s.minLength ?? 0
      const maxLength = Math.min(s.maxLength ?? 40, 40)
      if (s.format === 'email') return fc.emailAddress().filter((e) => e.length <= (s.maxLength ?? 254))
      if (s.format === 'uuid') return fc.uuid()
      if (s.format === 'binary') return fc.constant(undefined)
      const base = s.pattern
        ? fc.stringMatching(new RegExp(s.pattern))
        : fc.string({ minLength, maxLength: Math.max(minLength, maxLength) })
      return base.filter(
        (v) => v.length >= minLength && v.length <= (s.maxLength ?? Number.POSITIVE_INFINITY),
      )
    }
    case 'array': {
      const item = s.items ? arbitrary(s.items) : fc.anything()
      const minLength = s.minItems ?? 0
      return fc.array(item, { minLength, maxLength: Math.max(minLength, Math.min(s.maxItems ?? 3, 3)) })
    }
    case 'object': {
      const props = s.properties ?? {}
      if (Object.keys(props).length === 0) return fc.constant({})
      const model: Record<string, fc.Arbitrary<unknown>> = {}
      for (const [k, v] of Object.entries(props)) model[k] = arbitrary(v)
      return fc.record(model, { requiredKeys: s.required ?? [] })
    }
    default:
      return fc.constant('x')
  }
}

/** A value of the wrong kind, out of range or oversized for `s`, with what makes it wrong. */
export function badValues(s: Schema): { value: unknown; why: string }[] {
  const out: { value: unknown; why: string }[] = []
  const add = (value: unknown, why: string) => out.push({ value, why })
  const deep = (n: number) => {
    let v: unknown = 1
    for (let i = 0; i < n; i++) v = { a: v }
    return v
  }
  const type = s.enum ? 'enum' : s.type
  if (type !== 'string' && type !== 'enum') {
    add('12', 'numeric text')
    add('', 'empty text')
    add('x'.repeat(5000), 'long text')
  }
  if (type !== 'number' && type !== 'integer') {
    add(1, 'a number')
    add(-1.5, 'a negative fraction')
  }
  if (type !== 'boolean') add(true, 'a boolean')
  if (type !== 'object') {
    add({}, 'an object')
    add(deep(200), 'deeply nested object')
  }
  if (type !== 'array') add([1, 2], 'an array')
  add(null, 'null')
  if (type === 'integer' || type === 'number') {
    add(2 ** 53, '2^53')
    add(1e16, '1e16')
    add(-1e16, '-1e16')
    add(1e308, '1e308')
    if (s.maximum !== undefined) add(s.maximum + 1, 'above maximum')
    if (s.minimum !== undefined) add(s.minimum - 1, 'below minimum')
    if (s.exclusiveMinimum && s.minimum !== undefined) add(s.minimum, 'at the exclusive minimum')
    if (type === 'integer') add(1.5, 'a fraction')
  }
  if (type === 'string') {
    add('x'.repeat((s.maxLength ?? 100_000) + 1), 'longer than maxLength')
    if ((s.minLength ?? 0) > 0) add('', 'shorter than minLength')
    if (s.pattern) add('!!\u0000 not;matching', 'not matching the pattern')
    if (s.format === 'email') add('not-an-email', 'not an email')
    if (s.format === 'uuid') add('not-a-uuid', 'not a uuid')
  }
  if (type === 'enum') add('__not_one_of_them__', 'not one of the values')
  if (type === 'array') {
    if (s.maxItems !== undefined)
      add(
        Array.from({ length: s.maxItems + 1 }, () => null),
        'too many items',
      )
    add(['x', {}, null], 'items of the wrong type')
  }
  return out
}

/** Text values for query and path parameters that their schema refuses. */
export function badText(s: Schema): { value: string; why: string }[] {
  const out: { value: string; why: string }[] = []
  const add = (value: string, why: string) => out.push({ value, why })
  if (s.type === 'integer') {
    for (const v of ['abc', '1.5', '1e3', '0x10', '9007199254740993', '99999999999999999999', '-', ' 1'])
      add(v, `integer text ${v}`)
    if (s.maximum !== undefined && s.maximum < MAX_SAFE) add(String(s.maximum + 1), 'above maximum')
    if (s.minimum !== undefined && s.minimum > -MAX_SAFE) add(String(s.minimum - 1), 'below minimum')
  } else {
    if (s.maxLength !== undefined) add('x'.repeat(s.maxLength + 1), 'longer than maxLength')
    if (s.pattern) add('not matching!', 'not matching the pattern')
    if (s.format === 'uuid') add('not-a-uuid', 'not a uuid')
    if ((s.minLength ?? 0) > 0) add('', 'empty')
  }
  return out
}

/** Draws `n` values of an arbitrary, the same ones for the same seed. */
export const draw = <T>(a: fc.Arbitrary<T>, n: number, seed: number) => fc.sample(a, { numRuns: n, seed })

const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Whether `v` satisfies `s` (the subset of JSON Schema the document uses). */
export function satisfies(v: unknown, s: Schema): boolean {
  if (v === null && s.nullable) return true
  if (s.anyOf) return s.anyOf.some((b) => satisfies(v, b))
  if (s.enum) return s.enum.includes(v)
  switch (s.type) {
    case 'null':
      return v === null
    case 'boolean':
      return typeof v === 'boolean'
    case 'integer':
    case 'number': {
      if (typeof v !== 'number' || !Number.isFinite(v)) return false
      if (s.type === 'integer' && !Number.isInteger(v)) return false
      if (s.minimum !== undefined && (s.exclusiveMinimum ? v <= s.minimum : v < s.minimum)) return false
      if (s.maximum !== undefined && (s.exclusiveMaximum ? v >= s.maximum : v > s.maximum)) return false
      return true
    }
    case 'string': {
      if (typeof v !== 'string') return false
      if (s.minLength !== undefined && v.length < s.minLength) return false
      if (s.maxLength !== undefined && v.length > s.maxLength) return false
      if (s.pattern && !new RegExp(s.pattern).test(v)) return false
      if (s.format === 'email' && !EMAIL.test(v)) return false
      if (s.format === 'uuid' && !UUID.test(v)) return false
      return true
    }
    case 'array':
      return (
        Array.isArray(v) &&
        v.length >= (s.minItems ?? 0) &&
        v.length <= (s.maxItems ?? Number.POSITIVE_INFINITY) &&
        (!s.items || v.every((i) => satisfies(i, s.items!)))
      )
    case 'object': {
      if (typeof v !== 'object' || v === null || Array.isArray(v)) return false
      const o = v as Record<string, unknown>
      for (const r of s.required ?? []) if (o[r] === undefined) return false
      for (const [k, p] of Object.entries(s.properties ?? {}))
        if (o[k] !== undefined && !satisfies(o[k], p)) return false
      return true
    }
    default:
      return true
  }
}

/** `badValues` of a schema, or of every branch of a union, keeping only what no branch accepts. */
export function refusedValues(s: Schema): { value: unknown; why: string }[] {
  const candidates = s.anyOf ? s.anyOf.flatMap(badValues) : badValues(s)
  const seen = new Set<string>()
  return candidates.filter((c) => {
    if (seen.has(c.why) || satisfies(c.value, s)) return false
    seen.add(c.why)
    return true
  })
}
