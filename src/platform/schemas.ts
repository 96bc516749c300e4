import { type IntegerOptions, Type } from '@sinclair/typebox'
import { t } from 'elysia'

/**
 * A JSON integer: TypeBox's own schema. Elysia's `t.Integer` also accepts numeric text through a
 * transform, so every request holding one went through TypeBox's Decode pass (a copy of the body or the
 * query: 2-3% of a trade open's CPU, a tenth of a cached watch-list read), a body `{"login": "5"}`
 * passed, and the document showed `anyOf [string, integer]`. Query and path values arrive as text:
 * routes turn theirs into numbers with `textToInt` before validation.
 */
export const Int = (options?: IntegerOptions) => Type.Integer(options)

/** Integer text, at most 15 digits (a larger value stays text and fails the integer schema). */
const INTEGER_TEXT = /^-?\d{1,15}$/

/**
 * A `transform` hook (Elysia runs it before validation) turning the named query and path values from
 * integer text into numbers, so the route's `Int` schemas check them. Anything else stays text and
 * fails its schema: 400 INVALID_DATA naming the field.
 */
export function textToInt(fields: { query?: readonly string[]; params?: readonly string[] }) {
  return (c: { query: Record<string, unknown>; params: Record<string, unknown> }) => {
    for (const where of ['query', 'params'] as const) {
      const values = c[where]
      for (const k of fields[where] ?? []) {
        const v = values[k]
        if (typeof v === 'string' && INTEGER_TEXT.test(v)) values[k] = Number(v)
      }
    }
  }
}

/** Field schemas shared by several modules (spec part 8 limits). */
export const Login = Int({ minimum: 0, description: 'Trading account login' })
export const Password = t.String({ minLength: 6, maxLength: 64, description: '6..64 characters' })
export const Ok = t.Object({ data: t.Literal('OK') })
