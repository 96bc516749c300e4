import { type ConfinementDeclaration, SESSION_TYPES } from '../auth/session'
import { BRAND_SITE, type SiteDeclaration } from '../brand/sites'

/** What the guard macros leave on an operation (kernel/security). */
interface Guard {
  brand?: true
  feed?: true
  site?: string | string[]
  access?: string
  refusals?: Record<string, string[]>
  roles?: string[]
  denied?: { status: number; code: string } | null
  whileConfined?: boolean
}

type Json = Record<string, any>

/** The runtimes of the product: the Bun server and the Workers entry (tests/workers/acceptance.test.ts). */
export const RUNTIMES = ['bun', 'workers'] as const

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const

const responseText: Record<string, string> = {
  '400': 'Bad request',
  '401': 'Unauthorized',
  '402': 'Payment required',
  '403': 'Forbidden',
  '404': 'Not found (also for records of another customer or brand)',
  '409': 'Conflict',
  '413': 'Payload too large',
  '429': 'Too many requests',
  '500': 'Internal error (never shows internals), or a code the route names',
  '503':
    'Unavailable (a dependency is away, or this instance is too busy to check a password in time: nothing was done; retry after Retry-After)',
}

function errorResponse(codes: string[]): Json {
  return {
    description: '',
    content: {
      'application/json': {
        schema: {
          title: 'Error',
          type: 'object',
          required: ['error'],
          properties: {
            error: { type: 'string', enum: codes, description: 'Stable error code' },
            message: {
              type: 'string',
              description: 'Human-readable detail; names the field for INVALID_DATA',
            },
          },
        },
      },
    },
  }
}

/** Adds `code` to the error response of `status`, creating it when the route declared none. */
function addCode(op: Json, status: number, code: string) {
  op.responses ??= {}
  const key = String(status)
  if (!op.responses[key]) op.responses[key] = errorResponse([])
  const schema = op.responses[key].content?.['application/json']?.schema
  if (!schema) return
  schema.properties ??= {}
  schema.properties.error ??= { type: 'string' }
  schema.properties.error.enum ??= []
  const list: string[] = schema.properties.error.enum
  if (!list.includes(code)) list.push(code)
}

/**
 * OpenAPI 3.0 schemas are JSON Schema draft 5: `exclusiveMinimum` is a flag beside `minimum`, where
 * TypeBox writes the later form (a number). A binary field keeps no default (Elysia writes "File").
 */
function toOpenApi30(node: unknown) {
  if (!node || typeof node !== 'object') return
  if (Array.isArray(node)) {
    for (const n of node) toOpenApi30(n)
    return
  }
  const o = node as Json
  for (const [bound, flag] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const)
    if (typeof o[bound] === 'number') {
      o[flag] = o[bound]
      o[bound] = true
    }
  if (o.format === 'binary' && o.default !== undefined) delete o.default
  // Elysia writes a union of number literals as a string enum: the values say what the type is
  if (Array.isArray(o.enum) && o.type === 'string' && o.enum.every((v: unknown) => typeof v === 'number'))
    o.type = o.enum.every((v: number) => Number.isInteger(v)) ? 'integer' : 'number'
  // 3.0 has no `const`: a one-value enum says the same
  if ('const' in o) {
    o.enum = [o.const]
    delete o.const
  }
  // nor `patternProperties`: a map whose values follow the schema, the key pattern in words
  if (o.patternProperties && typeof o.patternProperties === 'object') {
    const [[pattern, schema]] = Object.entries<Json>(o.patternProperties)
    o.additionalProperties = schema
    o.description = [o.description, `keys match ${pattern}`].filter(Boolean).join('; ')
    delete o.patternProperties
  }
  // nor tuples: an array of the positions' types, its length fixed by minItems and maxItems
  if (Array.isArray(o.items)) {
    const positions = o.items as Json[]
    o.minItems = o.minItems ?? positions.length
    o.maxItems = o.maxItems ?? positions.length
    o.description = [o.description, `positions: ${positions.map((p) => p.description ?? p.type).join(', ')}`]
      .filter(Boolean)
      .join('; ')
    o.items = { anyOf: positions }
    delete o.additionalItems
  }
  // `nullable` needs a `type` beside it: each branch of an anyOf says it instead
  if (o.nullable === true && Array.isArray(o.anyOf) && o.type === undefined) {
    for (const branch of o.anyOf as Json[]) if (branch.type) branch.nullable = true
    delete o.nullable
  }
  // an integer that can pass 2^31 is int64 for client generators (Java, Kotlin, C#, Go)
  if (o.type === 'integer' && o.format === undefined)
    o.format =
      typeof o.maximum === 'number' && o.maximum <= 2_147_483_647 && (o.minimum ?? 0) >= -2_147_483_648
        ? 'int32'
        : 'int64'
  for (const v of Object.values(o)) toOpenApi30(v)
}

const roleNames = (roles: string[]) => roles.map((r) => r.replace('SESSION_', '')).join(', ')

/**
 * Says what the server does, whatever ran before the document was made: a JSON body refuses unknown
 * top-level fields (ADR 0006), and a response may grow fields (spec 9: clients tolerate them). Elysia's
 * dynamic mode (the Workers entry) writes `additionalProperties: false` into the schemas of the routes it
 * has validated, so without this the edge's document depended on which requests came first.
 */
function strictness(op: Json) {
  const body = op.requestBody?.content?.['application/json']?.schema
  if (body?.type === 'object' && body.properties) body.additionalProperties = false
  const open = (s: unknown) => {
    if (!s || typeof s !== 'object') return
    if (Array.isArray(s)) return s.forEach(open)
    const o = s as Json
    if (o.additionalProperties === false) delete o.additionalProperties
    for (const v of Object.values(o)) open(v)
  }
  for (const res of Object.values<Json>(op.responses ?? {})) open(res.content)
}

/** An operationId a generator can use as a function name: `getManagerEventsDeadLetters`. */
const identifier = (id: string) =>
  id.replace(/[^A-Za-z0-9]+([A-Za-z0-9])/g, (_, c: string) => c.toUpperCase()).replace(/[^A-Za-z0-9]/g, '')

/** The success answers say what they hold (the schema's description, else the operation's summary). */
function describeSuccess(op: Json) {
  for (const [status, res] of Object.entries<Json>(op.responses ?? {})) {
    if (status >= '300' || (res.description && !res.description.startsWith('Response for status'))) continue
    const schema = Object.values<Json>(res.content ?? {})[0]?.schema
    res.description = schema?.description ?? op.summary ?? 'Success'
  }
}

/**
 * The null of a nullable model's use: `X | null` to generators, null alone to validators. OpenAPI 3.0.3
 * adds null only to a `type` beside `nullable` (Redocly's nullable-type-sibling), an allOf's branch still
 * refuses it (Prism does), and a one-value enum of null is what openapi-generator's normalizer folds into
 * `nullable`; `string` rather than `object` because orval's zod client cannot make an object of only null.
 * openapi-typescript, @hey-api/openapi-ts and orval (fetch and zod) are run on it in openapi-client.test.ts.
 */
const nullObject = () => ({ type: 'string', nullable: true, enum: [null], description: 'none' })

const ERROR_MODEL = {
  type: 'object',
  title: 'Error',
  description:
    'Every error answer: a stable code and, for people, a message (for INVALID_DATA it names the field)',
  required: ['error'],
  properties: {
    error: { type: 'string', description: 'Stable error code' },
    message: { type: 'string', description: 'Human-readable detail; names the field for INVALID_DATA' },
  },
}

/**
 * Shared models under components.schemas: every error answer refers to one `Error` (its own code enum
 * beside the reference), and each object schema that carries a `title` (the resources of spec part 2)
 * is named once and referred to wherever it appears, so generators make one type per resource.
 */
function nameSchemas(doc: Json) {
  doc.components ??= {}
  doc.components.schemas ??= {}
  const schemas: Json = doc.components.schemas
  schemas.Error = ERROR_MODEL
  const seen = new Map<string, string>()
  const hoist = (node: unknown): unknown => {
    if (!node || typeof node !== 'object') return node
    if (Array.isArray(node)) return node.map(hoist)
    const o = node as Json
    for (const [k, v] of Object.entries(o)) if (k !== 'example' && k !== 'examples') o[k] = hoist(v)
    if (o.type !== 'object' || typeof o.title !== 'string' || o.title === 'Error') return o
    // where it is used may make it nullable or describe the field: those stay at the use
    const { nullable, description, ...model } = o
    const text = JSON.stringify(model)
    let name = seen.get(text)
    if (!name) {
      name = o.title as string
      for (let i = 2; schemas[name] && JSON.stringify(schemas[name]) !== text; i++) name = `${o.title}${i}`
      schemas[name] = model
      seen.set(text, name)
    }
    const ref = { $ref: `#/components/schemas/${name}` }
    // OpenAPI 3.0.3: `nullable` adds null only to the `type` beside it, and an allOf's branch still
    // refuses null (validating proxies do); so a nullable use is the model or a null of its own
    if (nullable) return { anyOf: [ref, nullObject()], ...(description ? { description } : {}) }
    return description ? { type: 'object', allOf: [ref], description } : ref
  }
  for (const item of Object.values<Json>(doc.paths ?? {}))
    for (const method of METHODS) {
      const op = item[method]
      if (!op) continue
      for (const [status, res] of Object.entries<Json>(op.responses ?? {})) {
        const media = res.content?.['application/json']
        if (!media?.schema) continue
        if (status >= '400' && media.schema.title === 'Error') {
          const codes = media.schema.properties?.error?.enum
          media.schema = {
            allOf: [{ $ref: '#/components/schemas/Error' }],
            type: 'object',
            properties: { error: { type: 'string', enum: codes, description: 'Stable error code' } },
          }
        } else media.schema = hoist(media.schema)
      }
      for (const media of Object.values<Json>(op.requestBody?.content ?? {}))
        if (media.schema) media.schema = hoist(media.schema)
    }
}

/**
 * Completes the generated document so that each operation says everything a client needs: the error
 * codes every route of its kind answers next to its own (INVALID_DATA for any input, 413 for a body,
 * 401/403 and the denial code for guarded routes, BRAND_NOT_FOUND for an unknown host, INTERNAL_ERROR),
 * each error response's description listing its codes, who may call it, and parameter examples where
 * Swagger UI's "Try it out" picks them up. Runs once per document.
 */
export function finishDocument(
  doc: Json,
  facts: {
    jobNames: string[]
    examples?: Record<string, unknown>
    sites?: SiteDeclaration[]
    confinements?: readonly ConfinementDeclaration[]
  } = {
    jobNames: [],
  },
): Json {
  const allRoles = SESSION_TYPES.length
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {}))
    for (const method of METHODS) {
      const op = item[method]
      if (!op) continue
      // a success answer's example is a real one (Swagger UI would show 9007199254740991 for an integer)
      const example = facts.examples?.[`${method.toUpperCase()} ${path}`]
      const success = op.responses?.['200']?.content?.['application/json']
      if (example !== undefined && success) success.example = example
      const guard: Guard | undefined = op['x-guard']
      delete op['x-guard']
      // where it is served: both runtimes, unless the route says otherwise (the edge then answers
      // 501 NOT_AT_THE_EDGE); the acceptance suite sends every operation to each runtime it names
      op['x-runtime'] ??= [...RUNTIMES]
      // a raw body (a signed webhook) is verified as bytes, then parsed: the route documents its shape
      // (`x-raw-body` stays in the document: clients learn that the bytes, not the JSON value, are signed)
      if (op['x-body-raw']) {
        op.requestBody = { required: true, content: { 'application/json': { schema: op['x-body-raw'] } } }
        op['x-raw-body'] = true
      }
      delete op['x-body-raw']
      if (op['x-idempotent']) {
        op.parameters = [
          ...(op.parameters ?? []),
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            description:
              "Makes a retry safe: a request repeated with its key answers what the first did (`idempotent: true`, header Idempotent-Replayed) and changes nothing; the key reused for another request is 409 IDEMPOTENCY_KEY_REUSED. 8 to 64 of A-Z a-z 0-9 _ . : -, per account, kept 7 days; keys starting with copy: or copy- are the platform's own (400 INVALID_DATA).",
            schema: {
              type: 'string',
              pattern: '^[A-Za-z0-9_.:-]{8,64}$',
              description: 'a key of the client, unique per account for 7 days',
            },
            // one key per operation: the same key for two different requests is a 409
            // (a path parameter's braces are not a key's characters)
            example: `${path
              .split('/')
              .filter(Boolean)
              .join('-')
              .replace(/[^A-Za-z0-9_.:-]/g, '')}-2026-11-24-0001`.slice(-64),
          },
        ]
        addCode(op, 409, 'IDEMPOTENCY_KEY_REUSED')
      }
      delete op['x-idempotent']
      // a 200 that is not JSON says what it is, so a generated client does not parse a PNG as JSON
      // a non-JSON answer has no response schema (Elysia's dynamic mode, the edge, would validate the
      // Response object against it): the document gets its 200 from the media alone
      if (op['x-media']) {
        op.responses ??= {}
        op.responses['200'] ??= { description: op.summary ?? 'Success' }
        const media: string[] = op['x-media']
        op.responses['200'].content = Object.fromEntries(
          media.map((m) => [
            m,
            { schema: m.startsWith('text/') ? { type: 'string' } : { type: 'string', format: 'binary' } },
          ]),
        )
      }
      delete op['x-media']
      // a route answering JSON or, with format=csv, the same table as CSV: each media type its own schema
      if (op['x-csv']) {
        const json = op.responses?.['200']?.content?.['application/json']
        const branches: Record<string, unknown>[] | undefined = json?.schema?.anyOf ?? json?.schema?.oneOf
        const text = branches?.find((b) => b.type === 'string')
        if (!json || !branches || !text)
          throw new Error(`${path}: x-csv needs a 200 of a JSON schema or a string`)
        const rest = branches.filter((b) => b !== text)
        json.schema = rest.length === 1 ? rest[0] : { anyOf: rest }
        op.responses['200'].content['text/csv'] = { schema: text }
      }
      delete op['x-csv']
      if (op['x-redirect']) {
        op.responses ??= {}
        delete op.responses['200']
        op.responses['302'] = {
          description: op['x-redirect'],
          headers: { Location: { description: 'a path on the same host', schema: { type: 'string' } } },
        }
      }
      delete op['x-redirect']
      // a required query text whose empty value means "all" (prefix=, filter=) is sent empty
      for (const p of op.parameters ?? [])
        if (p.in === 'query' && p.required && p.schema?.type === 'string' && !(p.schema.minLength > 0))
          p.allowEmptyValue = true
      if (op.parameters?.length || op.requestBody) addCode(op, 400, 'INVALID_DATA')
      if (op.requestBody) addCode(op, 413, 'PAYLOAD_TOO_LARGE')
      // a form's example names its file parts too (a placeholder: an example cannot hold the bytes)
      const form = op.requestBody?.content?.['multipart/form-data']?.schema
      if (form?.example)
        for (const name of form.required ?? [])
          if (form.properties?.[name]?.format === 'binary' && form.example[name] === undefined)
            form.example[name] = 'scan.png'
      if (guard && !guard.feed && !guard.site) addCode(op, 404, 'BRAND_NOT_FOUND')
      if (guard?.site) {
        // served only on the hosts of its sites: elsewhere the path does not exist (or, on any host of a
        // brand, no brand is served on an unknown host)
        const sites = [guard.site].flat()
        addCode(op, 404, sites.includes(BRAND_SITE) ? 'BRAND_NOT_FOUND' : 'NOT_FOUND')
        // one declared site: a client (or a generated one) must call these on the brand's host of it
        const site = sites.length === 1 ? facts.sites?.find((s) => s.name === sites[0]) : undefined
        if (site) {
          op['x-served-on'] = site.hostName
          op.servers = [
            {
              url: `https://{${site.hostName}}`,
              description: site.description,
              variables: { [site.hostName]: { default: site.exampleHost } },
            },
          ]
        }
        for (const [status, codes] of Object.entries(guard.refusals ?? {}))
          for (const code of codes) addCode(op, Number(status), code)
        const access = `**Access:** ${guard.access}`
        op.description = op.description ? `${access} ${op.description}` : access
      } else if (guard?.feed) {
        addCode(op, 401, 'UNAUTHORIZED')
        const access = '**Access:** the price feed, with the X-Feed-Token header.'
        op.description = op.description ? `${access} ${op.description}` : access
      } else if (guard?.roles) {
        addCode(op, 401, 'UNAUTHORIZED')
        if (guard.roles.length < allRoles) {
          const d = guard.denied ?? { status: 403, code: 'FORBIDDEN' }
          addCode(op, d.status, d.code)
        }
        // a confined principal (an account with a generated password) is refused all but what lifts it
        if (!guard.whileConfined)
          for (const c of facts.confinements ?? [])
            if (guard.roles.some((r) => c.roles.includes(r as never))) addCode(op, 403, c.code)
        // a change signed in by the session cookie from a page of another host (kernel/http/security.ts)
        if (method !== 'get') addCode(op, 403, 'CSRF_REJECTED')
        op['x-roles'] = guard.roles
        const access = `**Access:** ${roleNames(guard.roles)} sessions.`
        op.description = op.description ? `${access} ${op.description}` : access
      } else if (guard?.brand) {
        const access = '**Access:** public (no token); the brand comes from the Host.'
        op.description = op.description ? `${access} ${op.description}` : access
      }
      addCode(op, 500, 'INTERNAL_ERROR')
      // a dependency away (database, cache, bus) or password work shed: nothing done, retry after Retry-After
      if (!path.startsWith('/health')) addCode(op, 503, 'SERVICE_UNAVAILABLE')
      if (op['x-body-optional'] && op.requestBody) op.requestBody.required = false
      delete op['x-body-optional']
      for (const [status, res] of Object.entries<Json>(op.responses ?? {})) {
        const codes: string[] | undefined = res.content?.['application/json']?.schema?.properties?.error?.enum
        if (status >= '400' && codes?.length)
          res.description = `${responseText[status] ?? 'Error'}: ${codes.join(', ')}`
      }
      for (const p of op.parameters ?? [])
        if (p.example === undefined && p.schema?.example !== undefined) p.example = p.schema.example
      describeSuccess(op)
      if (op.operationId) op.operationId = identifier(op.operationId)
      strictness(op)
    }
  nameSchemas(doc)
  // the jobs of this deployment, for external schedulers (they depend on its configuration)
  const job = doc.paths?.['/cron/{job}']?.post?.parameters?.find((p: Json) => p.name === 'job')
  if (job && facts.jobNames.length) job.schema.enum = [...facts.jobNames].sort()
  toOpenApi30(doc.paths)
  toOpenApi30(doc.components)
  // one deployment serves several brands, each chosen by the Host of the request (spec 1)
  doc.servers ??= [
    {
      url: '/',
      description:
        "The host this document was loaded from: the brand is resolved from the request's Host (each brand has its own hosts)",
    },
  ]
  return doc
}
