import { afterAll, beforeAll, expect, test } from 'bun:test'
import { makeTestApp, type TestApp } from '../support/app'
import { PERSONAL_ANSWERS } from '../support/kyc'

// DESIGN "every route has request and response schemas": a schema a client can generate a type from.
// An object that names no field and whose values are untyped (`Record<string, unknown>`, `{ type: object,
// additionalProperties: {} }`) gives a generated client `unknown`; the KYC settings, a payment method
// and a prop phase's rules were documented so although the server checks or answers a fixed shape.

type Json = Record<string, any>
let t: TestApp
let doc: Json
beforeAll(async () => {
  t = await makeTestApp()
  doc = (await t.request('GET', '/swagger/json')).json
})
afterAll(() => t.close())

/**
 * The free-form maps the document may keep, each with why: `<METHOD> <path> <body|status> <field path>`
 * (`[]` an array's items, `#n` the n-th branch of a union). An entry no longer found fails the test too.
 */
const FREE_FORM: Record<string, string> = {
  'POST /manager/accounts/{login}/balance body .api_data':
    "the caller's own machine-readable context, kept on the operation as given (at most 50 keys)",
  'POST /manager/accounts/{login}/balance 200 .operation.api_data': 'the api_data given, as given',
  'GET /manager/accounts/{login}/operations 200 .rows[].api_data': 'the api_data given, as given',
  'GET /notify/list 200 .rows[][]#8':
    "a notification's description parameters: each notification token has its own (spec 2.x tuple)",
  'GET /notify/list 200 .rows[][]#9': "a notification's data: each notification type has its own",
  'GET /market/symbol 200 .ratings':
    "analyst ratings under the broker's own keys; the market module's (its admin body types the values " +
    'as a number or text, the answer does not yet)',
}

/** An annotation only: a schema with nothing but these says nothing about the value. */
const ANNOTATIONS = new Set(['description', 'title', 'example', 'examples', 'nullable', 'deprecated'])
const typed = (s: unknown) =>
  !!s && typeof s === 'object' && Object.keys(s).some((k) => !ANNOTATIONS.has(k) && !k.startsWith('x-'))

/** The object schemas under `schema` that name no field and type no value, by field path. */
function opaque(schema: unknown, at: string, seen: ReadonlySet<string>, out: string[]) {
  let s = schema as Json | undefined
  if (!s || typeof s !== 'object') return
  if (s.$ref) {
    const name = String(s.$ref).split('/').pop()!
    if (seen.has(name)) return
    seen = new Set([...seen, name])
    s = doc.components.schemas[name] as Json
  }
  const objectLike = s.type === 'object' || 'additionalProperties' in s || 'patternProperties' in s
  const named = Object.keys(s.properties ?? {}).length > 0 || s.allOf || s.anyOf || s.oneOf
  const values = [s.additionalProperties, ...Object.values<unknown>(s.patternProperties ?? {})]
  if (objectLike && !named && !values.some(typed)) out.push(at)
  for (const [k, v] of Object.entries<unknown>(s.properties ?? {})) opaque(v, `${at}.${k}`, seen, out)
  if (s.items && typeof s.items === 'object') opaque(s.items, `${at}[]`, seen, out)
  for (const key of ['allOf', 'anyOf', 'oneOf'])
    for (const [i, v] of (s[key] ?? []).entries()) opaque(v, key === 'allOf' ? at : `${at}#${i}`, seen, out)
  for (const v of values) if (v && typeof v === 'object') opaque(v, `${at}{}`, seen, out)
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch']

test('no request body or success answer documents an object without its fields (allowlist aside)', () => {
  const found: string[] = []
  for (const [path, item] of Object.entries<Json>(doc.paths))
    for (const method of METHODS) {
      const op = item[method] as Json | undefined
      if (!op) continue
      const where = `${method.toUpperCase()} ${path}`
      for (const media of Object.values<Json>(op.requestBody?.content ?? {}))
        opaque(media.schema, `${where} body `, new Set(), found)
      for (const [status, res] of Object.entries<Json>(op.responses ?? {}))
        if (status.startsWith('2'))
          for (const media of Object.values<Json>(res.content ?? {}))
            opaque(media.schema, `${where} ${status} `, new Set(), found)
    }
  const unique = [...new Set(found)]
  expect(unique.filter((f) => !(f in FREE_FORM))).toEqual([])
  // the list stays true: a map given its shape leaves it
  expect(Object.keys(FREE_FORM).filter((f) => !unique.includes(f))).toEqual([])
})

// the probe's findings (module-contract probe, openapi-opaque)

/** A schema behind its reference; a described reference (`allOf` of one, beside a description) too. */
const resolve = (s: any): any => {
  while (s?.$ref || s?.allOf?.length === 1)
    s = s.$ref ? doc.components.schemas[s.$ref.split('/').pop()] : s.allOf[0]
  return s
}
/** An object schema that names its fields (not `{ type: object, additionalProperties: {} }`). */
const described = (s: any) => Object.keys(resolve(s)?.properties ?? {}).length > 0
const json = (op: any, status = '200') => op.responses[status].content['application/json'].schema
const body = (op: any) => op.requestBody.content['application/json'].schema

test('PUT /manager/kyc/settings documents the steps and tiers it checks', () => {
  const op = doc.paths['/manager/kyc/settings'].put
  const b = resolve(body(op))
  expect(described(resolve(b.properties.steps).items)).toBe(true)
  expect(described(b.properties.tiers)).toBe(true)
  expect(described(json(op))).toBe(true)
  expect(described(json(doc.paths['/manager/kyc/settings'].get))).toBe(true)
})

test('PUT /manager/cashier/methods/{method} documents the method it answers', () => {
  expect(described(json(doc.paths['/manager/cashier/methods/{method}'].put))).toBe(true)
})

test("a prop program's phase rules are documented field by field", () => {
  const program = resolve(json(doc.paths['/prop/programs/{id}'].get))
  const step = resolve(resolve(program.properties.steps).items)
  expect(described(step.properties.rules)).toBe(true)
})

// the documented shapes refuse and accept what the routes did: domain/ keeps the last word

test('an answer that is no text, number or boolean is 400 INVALID_DATA naming it', async () => {
  const token = await t.customerToken()
  const r = await t.request('POST', '/customer/kyc/steps/personal/submit', {
    token,
    body: { answers: { ...PERSONAL_ANSWERS, first_name: { given: 'Ada' } } },
  })
  expect([r.status, r.json.error, r.json.message]).toEqual([
    400,
    'INVALID_DATA',
    'answers.first_name: text, a number, true or false',
  ])
})

test('KYC settings leaving out what has a default are saved, and answered with the defaults filled in', async () => {
  const token = await t.staffToken()
  const before = (await t.request('GET', '/manager/kyc/settings', { token })).json
  const put = (body: unknown) => t.request('PUT', '/manager/kyc/settings', { token, body })
  const saved = await put({
    steps: [
      { code: 'personal', title: 'Personal', questions: [{ key: 'city', label: 'City', type: 'text' }] },
    ],
    tiers: { deposit_limit_unverified: {} },
  })
  expect(saved.status).toBe(200)
  expect(saved.json).toEqual({
    steps: [
      {
        code: 'personal',
        title: 'Personal',
        required: true,
        questions: [{ key: 'city', label: 'City', type: 'text', required: true }],
      },
    ],
    tiers: { deposit_limit_unverified: {}, deposit_unlimited_after: [], withdrawal_after: [] },
  })
  // a misspelt key deep inside is still refused by name (never dropped)
  const typo = await put({
    steps: [
      { code: 'personal', title: 'Personal', documents: { types: ['passport'], min: 1, valid_untill: true } },
    ],
    tiers: { deposit_limit_unverified: {} },
  })
  expect([typo.status, typo.json.error]).toEqual([400, 'INVALID_DATA'])
  expect(typo.json.message).toStartWith('steps.0.documents.valid_untill')
  expect((await put(before)).status).toBe(200)
})
