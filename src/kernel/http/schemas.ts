import { type IntegerOptions, type TObject, type TProperties, Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { MAX_EPOCH_SECONDS, MAX_ID } from '../limits'
import { invalid } from './errors'

/**
 * A JSON integer: TypeBox's own schema. Elysia's `t.Integer` also accepts numeric text through a
 * transform, so every request holding one went through TypeBox's Decode pass (a copy of the body or the
 * query: 2-3% of a trade open's CPU, a tenth of a cached watch-list read), a body `{"login": "5"}`
 * passed, and the document showed `anyOf [string, integer]`. Query and path values arrive as text:
 * routes declare them with `textInput`, which turns them into numbers before validation.
 */
export const Int = (options: IntegerOptions = {}) =>
  Type.Integer({ minimum: -MAX_ID, maximum: MAX_ID, ...options })

/** Integer text, at most 15 digits (a larger value stays text and fails the integer schema). */
const INTEGER_TEXT = /^-?\d{1,15}$/

type Text = 'query' | 'params'
/** The integer fields of a query or path schema (`Int`, optional or not). */
const integerKeys = (props: TProperties = {}) =>
  Object.keys(props).filter((k) => (props[k] as { type?: string }).type === 'integer')

/**
 * Refuses a declared query parameter given more than once (`?login=1&login=2`): the query parser keeps
 * one of them, so the others would pass unchecked and unseen.
 */
function refuseRepeated(url: string, declared: ReadonlySet<string>) {
  const q = url.indexOf('?')
  if (q < 0 || url.indexOf('&', q) < 0) return
  const seen = new Set<string>()
  for (const part of url.slice(q + 1).split('&')) {
    const end = part.indexOf('=')
    let key = end < 0 ? part : part.slice(0, end)
    if (/[%+]/.test(key))
      try {
        key = decodeURIComponent(key.replace(/\+/g, ' '))
      } catch {
        continue
      }
    if (!declared.has(key)) continue
    if (seen.has(key)) throw invalid(`query ${key}: given more than once`)
    seen.add(key)
  }
}

/**
 * The query and path schemas of a route, with the `transform` hook (Elysia runs it before validation)
 * that refuses a query parameter given twice and turns their integer fields from integer text into
 * numbers, so their `Int` schemas check them. Anything else stays text and fails its schema: 400
 * INVALID_DATA naming the field.
 */
export function textInput<Q extends TProperties, P extends TProperties>(
  parts: {
    query: Q
    params: P
  },
  opts?: TextOptions,
): { query: TObject<Q>; params: TObject<P>; transform: TextTransform }
export function textInput<Q extends TProperties>(
  parts: {
    query: Q
  },
  opts?: TextOptions,
): {
  query: TObject<Q>
  transform: TextTransform
}
export function textInput<P extends TProperties>(
  parts: {
    params: P
  },
  opts?: TextOptions,
): {
  params: TObject<P>
  transform: TextTransform
}
export function textInput(parts: Partial<Record<Text, TProperties>>, opts: TextOptions = {}) {
  const ints = (['query', 'params'] as const).map((where) => [where, integerKeys(parts[where])] as const)
  const declared = new Set(opts.repeatedQuery === 'allowed' ? [] : Object.keys(parts.query ?? {}))
  const transform: TextTransform = (c) => {
    if (declared.size > 0) refuseRepeated(c.request.url, declared)
    for (const [where, keys] of ints) {
      const values = c[where]
      for (const k of keys) {
        const v = values[k]
        if (typeof v === 'string' && INTEGER_TEXT.test(v)) values[k] = Number(v)
      }
    }
  }
  return {
    // unknown query parameters (a client's cache buster) are ignored, unlike unknown body fields
    ...(parts.query ? { query: t.Object(parts.query, { additionalProperties: true }) } : {}),
    ...(parts.params ? { params: t.Object(parts.params) } : {}),
    transform,
  }
}
interface TextOptions {
  /**
   * `allowed`: a repeated query parameter is not refused (the public pages and links a campaign's URL
   * reaches, where an ad platform may add a parameter the URL already has: they never answer an error).
   */
  repeatedQuery?: 'allowed'
}
type TextTransform = (c: Record<Text, Record<string, unknown>> & { request: Request }) => void

/** Field schemas shared by several modules (spec part 8 limits). */
export const Login = Int({ minimum: 0, description: 'Login of an account (spec: int >= 0)', example: 100001 })
/** A record id (ticket, alert, script, ...): 1 .. 2^53 - 1. */
export const Id = (description: string, example = 1) => Int({ minimum: 1, description, example })
/** The query of a newest-first list paged by id: `cursor` (the last next_cursor) and `limit`. */
export const IdPageQuery = {
  cursor: t.Optional(Id('next_cursor of the previous page')),
  limit: t.Optional(
    Int({ minimum: 1, maximum: 500, description: 'rows per page, default 100', example: 100 }),
  ),
}

/** A newest-first page read `limit + 1` rows at a time: its rows, and the id the next page resumes before. */
export function idPage<R extends { id: number }>(rows: R[], limit: number) {
  const page = rows.slice(0, limit)
  return { page, next_cursor: rows.length > page.length ? page[page.length - 1].id : null }
}

/** Stored text read back as JSON where it is one, else as the text it is (a list shows every row). */
export function jsonOrText(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** Epoch seconds of a real calendar (1970 .. 2100); 0 where the field says it means "none". */
export const EpochSeconds = (description: string) =>
  Int({ minimum: 0, maximum: MAX_EPOCH_SECONDS, description: `${description} (epoch seconds, up to 2100)` })
/** One character: a UTF-16 surrogate pair (an emoji, a CJK extension ideograph) or any other unit. */
const CHARACTER = '(?:[\\uD800-\\uDBFF][\\uDC00-\\uDFFF]|[^\\uD800-\\uDFFF])'

/**
 * A password field (spec part 8: 6..64 characters), counted in characters (Unicode code points): TypeBox's
 * minLength and maxLength count UTF-16 units, so 40 emoji were refused as longer than 64 and 'ab' and two
 * emoji passed as 6 long. The pattern counts characters (the same with or without a validator's `u` flag);
 * maxLength only bounds the text before it (64 characters are at most 128 units). 400 INVALID_DATA
 * naming the field and the length otherwise (`x-error-message`).
 */
export const PasswordText = (description: string, min = 6) =>
  t.String({
    minLength: min,
    maxLength: 128,
    pattern: `^${CHARACTER}{${min},64}$`,
    description: `${description} (${min}..64 characters)`,
    'x-error-message': `${min}..64 characters`,
  })
export const Password = PasswordText('password')

/**
 * A password to check, not to set (a sign-in): 6..64 as the spec has it, the lower bound in UTF-16 units
 * as it was counted when passwords were set before characters were (one of 6 units and fewer characters,
 * `ab😀😀`, still signs in), the upper bound in characters.
 */
export const PasswordToCheck = (description: string) =>
  t.String({
    minLength: 6,
    maxLength: 128,
    pattern: `^${CHARACTER}{1,64}$`,
    description: `${description} (6..64 characters)`,
    'x-error-message': '6..64 characters',
  })
export const Ok = t.Object({ data: t.Literal('OK') })

/**
 * One of a few values. Elysia's `t.UnionEnum` gives the schema its first value as the default, which
 * filled a missing required field with it (a balance operation without `type` became a deposit).
 */
export const OneOf = <const V extends readonly [string, ...string[]]>(
  values: V,
  options: { description: string; example?: V[number] },
) => t.UnionEnum(values, { default: undefined, ...options })

/**
 * Names the resources of a module (spec part 2) in the OpenAPI document: each schema given a title here is
 * hoisted into components.schemas and referred to wherever it appears (kernel/http/openapi-finish.ts).
 */
export function nameModels(models: Record<string, object>) {
  for (const [name, schema] of Object.entries(models)) (schema as { title?: string }).title ??= name
}
