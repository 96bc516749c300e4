import { DEV_CASHIER_SECRETS } from '../../src/modules/cashier/config'
import { signCheckout } from '../../src/modules/cashier/providers/checkout'
import { signSandbox } from '../../src/modules/cashier/providers/sandbox'
import * as F from './files'
import { arbitrary, badText, draw, refusedValues, type Schema, satisfies } from './fuzz'
import { DEMO_AFFILIATE_HOST } from './server'

/**
 * The cases of the schema-driven fuzzer (issue 16), drawn from the OpenAPI document with a fixed seed: at
 * least 100 invalid and 50 valid requests per operation. tests/integration/fuzz.test.ts sends them all to
 * the Bun server; the edge's acceptance suite sends the invalid ones to the Workers entry.
 */

export const SEED = 20261123

export interface Operation {
  method: string
  path: string
  id: string
  op: Record<string, any>
  bodyType?: 'application/json' | 'multipart/form-data'
  body?: Schema
  bodyRequired: boolean
  /** a signed webhook (`x-raw-body`): bodies are signed with the demo brand's sandbox secret */
  signed: boolean
  params: {
    name: string
    in: 'query' | 'path' | 'header'
    required: boolean
    schema: Schema
    example: unknown
  }[]
  documented: Map<number, Set<string>>
  roles: string[]
}

/** How an answer must look: refused naming `field`, refused for the whole body, or anything documented. */
export type Expect =
  | { kind: 'field'; field: string }
  | { kind: 'body' }
  | { kind: 'valid' }
  | { kind: 'ignored' }

export interface Case {
  query: Record<string, string>
  path: Record<string, string>
  /** Header parameters the operation documents (Idempotency-Key). */
  header?: Record<string, string>
  body?: { raw: BodyInit; type?: string }
  expect: Expect
  why: string
}

/** Routes that set a password (and so end the sessions the other routes use). */
export const setsPasswords = (o: { path: string }) => o.path === '/password' || o.path.endsWith('/password')

export function operations(doc: any): Operation[] {
  const out: Operation[] = []
  for (const [path, item] of Object.entries<any>(doc.paths))
    for (const [method, op] of Object.entries<any>(item)) {
      const content = op.requestBody?.content ?? {}
      const bodyType = Object.keys(content)[0] as Operation['bodyType']
      const documented = new Map<number, Set<string>>()
      for (const [status, res] of Object.entries<any>(op.responses ?? {}))
        documented.set(
          Number(status),
          new Set(res.content?.['application/json']?.schema?.properties?.error?.enum ?? []),
        )
      out.push({
        method: method.toUpperCase(),
        path,
        id: `${method.toUpperCase()} ${path}`,
        op,
        bodyType,
        body: bodyType ? content[bodyType].schema : undefined,
        bodyRequired: op.requestBody?.required ?? false,
        signed: op['x-raw-body'] === true,
        params: (op.parameters ?? []).map((p: any) => ({
          name: p.name,
          in: p.in,
          required: !!p.required,
          schema: p.schema,
          example: p.example ?? p.schema?.example,
        })),
        documented,
        roles: op['x-roles'] ?? [],
      })
    }
  // staff routes that change accounts, symbols and groups run last; sign-out and password changes too
  const late = (o: Operation) =>
    o.path.startsWith('/manager') ||
    setsPasswords(o) ||
    o.path === '/sign/out' ||
    o.path === '/sign/out/all' ||
    o.path === '/api/affiliate/logout' ||
    o.path === '/api/affiliate/logout/all'
      ? 1
      : 0
  return out.sort((a, b) => late(a) - late(b))
}

export const textOf = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v))

export function exampleParams(o: Operation) {
  const query: Record<string, string> = {}
  const path: Record<string, string> = {}
  const header: Record<string, string> = {}
  for (const p of o.params) {
    if (p.example === undefined) continue
    ;(p.in === 'query' ? query : p.in === 'header' ? header : path)[p.name] = textOf(p.example)
  }
  return { query, path, header }
}

const json = (v: unknown): Case['body'] => ({ raw: JSON.stringify(v), type: 'application/json' })

function multipart(fields: Record<string, unknown>): Case['body'] {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined) continue
    form.set(k, v instanceof File ? v : textOf(v))
  }
  return { raw: form }
}

const png = () => new File([F.PNG], 'avatar.png', { type: 'image/png' })

export function bodyOf(o: Operation, value: Record<string, unknown> | undefined): Case['body'] {
  if (value === undefined) return undefined
  if (o.bodyType === 'multipart/form-data') return multipart(value)
  return json(value)
}

export function exampleBody(o: Operation): Record<string, unknown> | undefined {
  if (!o.body) return undefined
  const ex = { ...((o.body.example as Record<string, unknown>) ?? {}) }
  if (o.bodyType === 'multipart/form-data') ex.file = png()
  return ex
}

/** 50 valid requests: the example, then the example with fields replaced by values drawn from their schema. */
export function validCases(o: Operation): Case[] {
  const base = exampleParams(o)
  const example = exampleBody(o)
  const cases: Case[] = [{ ...base, body: bodyOf(o, example), expect: { kind: 'valid' }, why: 'the example' }]
  const props = Object.entries(o.body?.properties ?? {}).filter(([, s]) => s.format !== 'binary')
  const params = o.params.filter((p) => p.in === 'query')
  let i = 0
  while (cases.length < 50) {
    i++
    const body = example ? { ...example } : undefined
    const query = { ...base.query }
    const slot = i % Math.max(1, props.length + params.length)
    if (body && slot < props.length) {
      const [name, schema] = props[slot]
      body[name] = draw(arbitrary(schema), 1, SEED + i)[0]
      if (!satisfies(body[name], schema)) throw new Error(`${o.id}: drew an invalid ${name}`)
    } else if (params.length > 0) {
      const p = params[(slot - props.length + params.length) % params.length]
      const v = draw(arbitrary(p.schema), 1, SEED + i)[0]
      if (v === undefined) continue
      query[p.name] = textOf(v)
    }
    cases.push({
      query,
      path: base.path,
      body: bodyOf(o, body),
      expect: { kind: 'valid' },
      why: `variant ${i}`,
    })
  }
  return cases
}

function deepJson(levels: number) {
  return `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`
}

/** At least 100 invalid requests: each field and parameter broken in every way its schema refuses, whole bodies broken, junk added. */
export function invalidCases(o: Operation): Case[] {
  const base = exampleParams(o)
  const example = exampleBody(o)
  const cases: Case[] = []
  const props = o.body?.properties ?? {}
  const required = new Set(o.body?.required ?? [])
  if (example) {
    for (const [name, schema] of Object.entries(props)) {
      if (schema.format === 'binary') {
        cases.push({
          ...base,
          body: bodyOf(o, { ...example, [name]: 'not a file' }),
          expect: { kind: 'field', field: name },
          why: `${name} as text`,
        })
        continue
      }
      for (const bad of refusedValues(schema)) {
        if (o.bodyType === 'multipart/form-data' && typeof bad.value === 'object') continue
        cases.push({
          ...base,
          body: bodyOf(o, { ...example, [name]: bad.value }),
          expect: { kind: 'field', field: name },
          why: `${name}: ${bad.why}`,
        })
      }
      if (required.has(name)) {
        const { [name]: _gone, ...rest } = example
        cases.push({
          ...base,
          body: bodyOf(o, rest),
          expect: { kind: 'field', field: name },
          why: `${name} missing`,
        })
      }
    }
    const refuse: Expect = required.size > 0 ? { kind: 'body' } : { kind: 'ignored' }
    const raw = (raw: string, type: string, why: string, e: Expect = { kind: 'body' }) =>
      cases.push({ ...base, body: { raw, type }, expect: e, why })
    if (o.bodyType === 'application/json') {
      raw('{"login":', 'application/json', 'truncated JSON')
      raw('[1,2]', 'application/json', 'an array')
      raw('null', 'application/json', 'null')
      raw('"text"', 'application/json', 'a string')
      raw('\u00ff\u00fe', 'application/json', 'not JSON at all')
      raw(JSON.stringify(example), 'text/plain', 'text/plain content type')
      raw('login=1', 'application/x-www-form-urlencoded', 'form content type')
      raw(deepJson(10_000), 'application/json', 'nested 10,000 levels', refuse)
      raw(deepJson(100), 'application/json', 'nested 100 levels', refuse)
      raw(
        JSON.stringify({ ...example, pad: 'x'.repeat(1_100_000) }),
        'application/json',
        'over the size limit',
      )
      const form = new FormData()
      form.set('login', '1')
      cases.push({ ...base, body: { raw: form }, expect: { kind: 'body' }, why: 'multipart content type' })
      if (o.bodyRequired) cases.push({ ...base, body: undefined, expect: { kind: 'body' }, why: 'no body' })
    } else if (o.bodyType === 'multipart/form-data') {
      raw(JSON.stringify(example), 'application/json', 'JSON instead of a form')
      raw('--x\r\nbroken', 'multipart/form-data; boundary=x', 'malformed multipart')
      cases.push({ ...base, body: undefined, expect: { kind: 'body' }, why: 'no body' })
    }
  }
  for (const p of o.params) {
    const where = p.in === 'query' ? 'query' : p.in === 'header' ? 'header' : 'path'
    for (const bad of badText(p.schema)) {
      if (p.in === 'path' && (bad.value === '' || bad.value.includes('/'))) continue
      // a header carries printable ASCII only: fetch refuses anything else before it is sent
      if (p.in === 'header' && (bad.value === '' || ![...bad.value].every((ch) => ch >= ' ' && ch <= '~')))
        continue
      const params = { ...base, [where]: { ...base[where], [p.name]: bad.value } }
      cases.push({
        ...params,
        body: bodyOf(o, example),
        expect: {
          kind: 'field',
          field: p.in === 'header' ? p.name : `${p.in === 'query' ? 'query' : 'params'} ${p.name}`,
        },
        why: `${p.name}: ${bad.why}`,
      })
    }
    if (p.in === 'query' && p.required) {
      const { [p.name]: _gone, ...rest } = base.query
      cases.push({
        query: rest,
        path: base.path,
        body: bodyOf(o, example),
        expect: { kind: 'field', field: `query ${p.name}` },
        why: `${p.name} missing`,
      })
    }
  }
  // extra fields: an unknown body field is refused by name; an unknown query parameter is ignored
  let i = 0
  while (cases.length < 100) {
    i++
    const junkKey = `junk_${i}`
    const junk = draw(arbitrary({ type: 'string', maxLength: 30 }), 1, SEED + i)[0] as string
    // a provider adds fields to its events over time: a signed webhook ignores unknown ones
    if (example && o.bodyType === 'application/json' && i % 2 === 0 && !o.signed)
      cases.push({
        ...base,
        body: json({ ...example, [junkKey]: { nested: junk } }),
        expect: { kind: 'field', field: junkKey },
        why: `unknown field ${junkKey}`,
      })
    else
      cases.push({
        query: { ...base.query, [junkKey]: junk },
        path: base.path,
        body: bodyOf(o, example),
        expect: { kind: 'ignored' },
        why: `unknown parameter ${junkKey}`,
      })
  }
  return cases
}

/** Where a fuzzer's requests go, with what credentials. */
export interface FuzzTarget {
  base: string
  /** the demo sessions by security scheme or session type (tests/support/server.ts demoTokens) */
  tokens: Record<string, string>
  feedToken: string
}

/**
 * Sends cases to a runtime and checks each answer: no INTERNAL_ERROR and no 5xx the route does not
 * document; every answer's status and code are the ones the document lists for the route; every refusal
 * of an invalid input is 400 INVALID_DATA naming the field (or 413 for an oversized body).
 */
export function fuzzClient(rt: FuzzTarget) {
  const failures: string[] = []
  function tokenFor(o: Operation): Record<string, string> {
    if (o.op.security?.some((s: object) => 'FeedToken' in s)) return { 'x-feed-token': rt.feedToken }
    for (const scheme of ['AffiliateSession', 'AffiliateToken'])
      if (o.op.security?.some((s: object) => scheme in s)) return { authorization: rt.tokens[scheme]! }
    const order = ['SESSION_USER', 'SESSION_CUSTOMER', 'SESSION_ADMIN', 'SESSION_MANAGER', 'SESSION_DEALER']
    const role = order.find((r) => o.roles.includes(r))
    return role ? { authorization: rt.tokens[role]! } : {}
  }

  async function send(o: Operation, c: Case) {
    let path = o.path
    for (const [k, v] of Object.entries(c.path)) path = path.replace(`{${k}}`, encodeURIComponent(v))
    const qs = new URLSearchParams(c.query).toString()
    const headers: Record<string, string> = { ...c.header, ...tokenFor(o) }
    if (o.op['x-served-on'] === 'affiliate_host') headers.host = DEMO_AFFILIATE_HOST
    if (c.body?.type) headers['content-type'] = c.body.type
    let raw = c.body?.raw
    const provider = o.path.startsWith('/cashier/webhook/') ? o.path.slice('/cashier/webhook/'.length) : null
    if (o.signed && (provider === 'sandbox' || provider === 'checkout')) {
      // the real signature replaces the example's
      for (const k of Object.keys(headers)) if (/-signature$/i.test(k)) delete headers[k]
      // the signature covers the exact bytes sent: a form is encoded first, no body is the empty string
      const encoded = new Request('http://x/', { method: 'POST', body: raw ?? '', headers })
      const text = await encoded.text()
      if (!c.body?.type && encoded.headers.get('content-type') && raw)
        headers['content-type'] = encoded.headers.get('content-type')!
      raw = raw === undefined ? undefined : text
      if (provider === 'sandbox')
        headers['sandbox-signature'] = signSandbox(
          DEV_CASHIER_SECRETS.Demo!.sandbox![0]!,
          text,
          Math.floor(Date.now() / 1000),
        )
      else headers['cko-signature'] = signCheckout(DEV_CASHIER_SECRETS.Demo!.checkout![0]!, text)
    }
    const controller = new AbortController()
    const timer = setTimeout(() => controller.abort(), 15_000)
    try {
      const res = await fetch(`${rt.base}${path}${qs ? `?${qs}` : ''}`, {
        method: o.method,
        headers,
        body: raw,
        signal: controller.signal,
      })
      if ((res.headers.get('content-type') ?? '').includes('text/event-stream')) {
        controller.abort()
        return { status: res.status, json: undefined as any }
      }
      const text = await res.text()
      let body: any
      try {
        body = JSON.parse(text)
      } catch {}
      return { status: res.status, json: body }
    } finally {
      clearTimeout(timer)
    }
  }

  function check(o: Operation, c: Case, r: { status: number; json: any }) {
    const fail = (what: string) =>
      failures.push(`${o.id} [${c.why}] ${what}: ${r.status} ${JSON.stringify(r.json)?.slice(0, 200)}`)
    if (r.status >= 200 && r.status < 300) {
      if (c.expect.kind === 'field' || c.expect.kind === 'body') fail('accepted an invalid input')
      return
    }
    const code = r.json?.error
    if (code === 'INTERNAL_ERROR') return fail('internal error')
    const listed = o.documented.get(r.status)
    if (!listed?.has(code)) return fail('status and code not documented for the route')
    if (c.expect.kind === 'field') {
      // a field may declare its own refusal code (`x-error-code`: reward_policy's INVALID_REWARD_POLICY)
      const declared = (
        o.body?.properties?.[c.expect.field.split('.')[0]!] as Record<string, unknown> | undefined
      )?.['x-error-code']
      const wanted = typeof declared === 'string' ? declared : 'INVALID_DATA'
      if (r.status !== 400 || code !== wanted) return fail(`expected 400 ${wanted} naming ${c.expect.field}`)
      const field = c.expect.field
      if (!(r.json.message.startsWith(`${field}:`) || r.json.message.startsWith(`${field}.`)))
        return fail(`message does not name ${field}`)
    }
    if (c.expect.kind === 'body') {
      const ok =
        (r.status === 400 && code === 'INVALID_DATA') || (r.status === 413 && code === 'PAYLOAD_TOO_LARGE')
      if (!ok) return fail('expected 400 INVALID_DATA or 413 for the body')
    }
    if (code === 'INVALID_DATA' && !/^(query |params )?[\w.-]+: /.test(r.json.message ?? ''))
      fail('INVALID_DATA without a field name')
  }

  return { send, check, failures }
}
