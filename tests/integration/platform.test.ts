// runs on sqld too (scripts/test.sh: TEST_DATABASE=sqld)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { AccountsPort } from '../../src/modules/accounts'
import { makeTestApp, type TestApp } from '../support/app'

let t: TestApp
beforeAll(async () => {
  t = await makeTestApp()
})
afterAll(() => t.close())

describe('errors and request ids', () => {
  test('unknown route: 404 NOT_FOUND in the error shape, with X-Request-Id', async () => {
    const r = await t.request('GET', '/nope')
    expect(r.status).toBe(404)
    expect(r.json).toEqual({ error: 'NOT_FOUND', message: expect.any(String) })
    expect(r.headers.get('x-request-id')).toMatch(/^[0-9a-f]{20}-[0-9a-z]+$/)
    // as every JSON answer says, and as the edge says for errors too
    expect(r.headers.get('content-type')).toBe('application/json;charset=utf-8')
  })

  test('generated request ids differ per request, on answers the handler built itself too', async () => {
    const token = await t.userToken()
    const ids = new Set<string>()
    for (const path of ['/nope', '/health', '/health', '/market/watch/list?login=100001&prefix=']) {
      const r = await t.request('GET', path, { token })
      ids.add(r.headers.get('x-request-id') ?? '')
    }
    expect(ids.size).toBe(4)
    expect([...ids].every((id) => /^[0-9a-f]{20}-[0-9a-z]+$/.test(id))).toBe(true)
  })

  test('routing a request waits no turn: the router Elysia composes is synchronous', async () => {
    // one onRequest hook whose source Elysia takes for asynchronous makes it await every request
    await t.request('GET', '/health')
    const router = (t.app as unknown as { fetch: (r: Request) => unknown }).fetch
    expect(router.constructor.name).toBe('Function')
  })

  test('a valid incoming X-Request-Id is echoed', async () => {
    const r = await t.request('GET', '/health', { headers: { 'x-request-id': 'trace-12345678' } })
    expect(r.headers.get('x-request-id')).toBe('trace-12345678')
  })

  test('GET /health reports db and cache', async () => {
    const r = await t.request('GET', '/health', { host: 'anything.example' })
    expect(r.status).toBe(200)
    expect(r.json).toMatchObject({ status: 'ok', db: 'ok', cache: 'ok', cache_kind: 'memory' })
  })

  // a hostile probe: with sqld stopped (SIGSTOP), readiness answered only when it resumed: the outbox
  // backlog's read and the engine holder's were not bounded as the probes are
  test('GET /health answers within its probes’ bound while every database statement hangs', async () => {
    const hung = await makeTestApp()
    try {
      const db = hung.ctx.db
      const never = () => new Promise<never>(() => {})
      const saved = { execute: db.execute, run: db.run, transaction: db.transaction }
      Object.assign(db, { execute: never, run: never, transaction: never })
      try {
        const started = performance.now()
        const r = await hung.request('GET', '/health')
        expect(performance.now() - started).toBeLessThan(4000)
        expect([r.status, r.json.status, r.json.db]).toEqual([503, 'degraded', 'error'])
        expect(r.json.checks.events.state).toBe('down')
      } finally {
        Object.assign(db, saved)
      }
    } finally {
      await hung.close()
    }
  })

  test('a 500 never shows internals and is logged with the request id', async () => {
    const lines: string[] = []
    const broken = await makeTestApp({
      logger: { log: (_l, msg, f) => lines.push(JSON.stringify({ msg, ...f })) },
    })
    try {
      const token = await broken.userToken()
      broken.ports.get(AccountsPort).read.account = async () => {
        throw new Error('secret internal detail: SELECT * FROM accounts')
      }
      const r = await broken.request('GET', '/account/me', { token })
      expect(r.status).toBe(500)
      expect(r.json).toEqual({ error: 'INTERNAL_ERROR', message: 'internal server error' })
      expect(r.text).not.toContain('secret')
      const id = r.headers.get('x-request-id')!
      expect(lines.some((l) => l.includes('unhandled error') && l.includes(id))).toBe(true)
    } finally {
      await broken.close()
    }
  })

  test('one JSON log line per request with request id, route, status and duration, no secrets', async () => {
    const lines: any[] = []
    const logged = await makeTestApp({ logger: { log: (level, msg, f) => lines.push({ level, msg, ...f }) } })
    try {
      const answers = [
        await logged.request('POST', '/sign/in', { body: { login: 100001, password: 'demo-pass-1' } }),
        await logged.request('POST', '/sign/in', { body: { login: 'x' } }),
        await logged.request('GET', '/account/me'),
        await logged.request('GET', '/no/such/route'),
      ]
      expect(answers.map((a) => a.status)).toEqual([200, 400, 401, 404])
      const requests = lines.filter((l) => l.msg === 'request')
      // exactly one line per request, in order, carrying the id its answer carries
      expect(requests.map((l) => [l.method, l.route, l.status, l.request_id])).toEqual([
        ['POST', '/sign/in', 200, answers[0].headers.get('x-request-id')],
        ['POST', '/sign/in', 400, answers[1].headers.get('x-request-id')],
        ['GET', '/account/me', 401, answers[2].headers.get('x-request-id')],
        ['GET', undefined, 404, answers[3].headers.get('x-request-id')],
      ])
      for (const l of requests.slice(0, 3)) expect(typeof l.duration_ms).toBe('number')
      expect(JSON.stringify(lines)).not.toContain('demo-pass-1')
    } finally {
      await logged.close()
    }
  })
})

describe('OpenAPI document', () => {
  let doc: any
  beforeAll(async () => {
    const r = await t.request('GET', '/swagger/json')
    expect(r.status).toBe(200)
    doc = r.json
  })

  test('speaks OpenAPI 3.0 only: no const, patternProperties, tuples, or nullable without a type; integers have a format', () => {
    const found: string[] = []
    const walk = (x: unknown, at: string) => {
      if (!x || typeof x !== 'object') return
      if (Array.isArray(x)) {
        for (const [i, v] of x.entries()) walk(v, `${at}/${i}`)
        return
      }
      const o = x as Record<string, unknown>
      for (const k of ['const', 'patternProperties', 'additionalItems', 'prefixItems', '$defs'])
        if (k in o) found.push(`${at}/${k}`)
      if (Array.isArray(o.items)) found.push(`${at}/items (a tuple)`)
      if (o.nullable === true && o.type === undefined) found.push(`${at}/nullable (no type)`)
      for (const k of ['exclusiveMinimum', 'exclusiveMaximum'])
        if (k in o && typeof o[k] !== 'boolean') found.push(`${at}/${k} (a number)`)
      if (o.type === 'integer' && !['int32', 'int64'].includes(o.format as string))
        found.push(`${at} (integer without format)`)
      for (const [k, v] of Object.entries(o)) walk(v, `${at}/${k}`)
    }
    // the operations and the named models they refer to
    walk(doc.paths, '')
    walk(doc.components.schemas, '#/components/schemas')
    expect(found.slice(0, 20)).toEqual([])
    // ids and amounts that pass 2^31 are int64 for generated clients
    expect(
      doc.paths['/trade/open'].post.responses['200'].content['application/json'].schema.properties.order
        .format,
    ).toBe('int64')
    expect(doc.servers).toHaveLength(1)
    expect(doc.paths['/cron/{job}'].post.security).toEqual([{ CronSecret: [] }])
    expect(doc.components.securitySchemes.CronSecret).toMatchObject({ in: 'header', name: 'X-Cron-Secret' })
    // a request that follows the document works: phase_type is an integer, not a string of digits
    const model = (s: { $ref?: string }) => (s.$ref ? doc.components.schemas[s.$ref.split('/').pop()!] : s)
    const program = model(
      doc.paths['/manager/prop/programs'].post.requestBody.content['application/json'].schema,
    )
    const step = model(program.properties.steps.items).properties
    expect(step.phase_type).toMatchObject({ type: 'integer', enum: [0, 1] })
    // a query value that may be left out is optional, its default said (issue 41)
    const prefix = doc.paths['/market/watch/list'].get.parameters.find(
      (p: { name: string }) => p.name === 'prefix',
    )
    expect([prefix.required, prefix.description ?? prefix.schema.description]).toEqual([
      false,
      expect.stringContaining('absent'),
    ])
    const limit = doc.paths['/notify/list'].get.parameters.find((p: { name: string }) => p.name === 'limit')
    expect([limit.required, limit.schema.default]).toEqual([false, 50])
    // what is not JSON says what it is
    const media = (path: string) => Object.keys(doc.paths[path].get.responses['200'].content)
    expect(media('/upload/{uuid}')).toContain('image/png')
    expect(media('/market/stream')).toEqual(['text/event-stream'])
    expect(media('/cashier/sandbox/done')).toEqual(['text/html'])
  })

  test('is OpenAPI 3.0.3, version 1.0.0, with the ApiTokenAuth scheme', () => {
    expect(doc.openapi).toBe('3.0.3')
    expect(doc.info.version).toBe('1.0.0')
    expect(doc.components.securitySchemes.ApiTokenAuth).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'Authorization',
    })
  })

  test('every route has a tag, a summary, responses with a 200 schema and its error responses', () => {
    const ops = Object.entries(doc.paths).flatMap(([path, item]: [string, any]) =>
      Object.entries(item).map(([method, op]: [string, any]) => ({ path, method, op })),
    )
    expect(ops.length).toBeGreaterThanOrEqual(18)
    for (const { path, method, op } of ops) {
      const where = `${method.toUpperCase()} ${path}`
      expect(op.tags?.length, where).toBeGreaterThan(0)
      expect(typeof op.summary, where).toBe('string')
      // a redirect route (a tracking link) answers 302 where others answer 200
      expect(op.responses?.['200'] ?? op.responses?.['302'], where).toBeDefined()
      const errorStatuses = Object.keys(op.responses).filter((s) => s !== '200' && s !== '302')
      if (path !== '/health') expect(errorStatuses.length, where).toBeGreaterThan(0)
      // actions that take no body: sign-outs, sessions ended, a job run, a dead letter sent back, a new signing key, a
      // revocation, a period's close, a statement's approval, a withdrawal taken back
      const actions = [
        '/manager/affiliate-periods/{period}/close',
        '/manager/affiliate-statements/{id}/approve',
        '/sign/out',
        '/sign/out/all',
        '/manager/accounts/{login}/sessions/end',
        '/manager/customers/{id}/sessions/end',
        '/cron/{job}',
        '/manager/events/dead-letters/{id}/retry',
        '/manager/affiliates/{id}/postback-keys',
        '/api/affiliate/logout',
        '/api/affiliate/logout/all',
        '/manager/affiliate-tokens/{token_id}/revoke',
        '/cashier/transactions/{id}/cancel',
      ]
      if (['post', 'put', 'patch'].includes(method) && !actions.includes(path))
        expect(op.requestBody, where).toBeDefined()
    }
  })

  test('each body declares exactly the content type it takes, an example, and a description per field', () => {
    for (const [path, item] of Object.entries<any>(doc.paths))
      for (const [method, op] of Object.entries<any>(item)) {
        const where = `${method.toUpperCase()} ${path}`
        for (const p of op.parameters ?? []) {
          expect(p.schema?.description, `${where} ${p.name}`).toBeString()
          if (p.required) expect(p.example, `${where} ${p.name}`).toBeDefined()
        }
        if (!op.requestBody) continue
        const types = Object.keys(op.requestBody.content)
        expect(types, where).toEqual([path === '/upload' ? 'multipart/form-data' : 'application/json'])
        const schema = op.requestBody.content[types[0]].schema
        expect(schema.example, where).toBeDefined()
        for (const [name, field] of Object.entries<any>(schema.properties ?? {}))
          expect(field.description, `${where} ${name}`).toBeString()
      }
  })

  test('each error response lists the codes the route answers', () => {
    const codes = (path: string, method: string, status: number) =>
      doc.paths[path][method].responses[status].content['application/json'].schema.properties.error.enum
    expect(codes('/trade/open', 'post', 401)).toEqual(['UNAUTHORIZED', 'PERMISSION_DENIED'])
    expect(codes('/trade/open', 'post', 500)).toEqual(['OPEN_ORDER_ERROR', 'INTERNAL_ERROR'])
    expect(codes('/sign/in', 'post', 403)).toEqual(['USER_NOT_FOUND_OR_INCORRECT'])
    expect(codes('/manager/symbols', 'post', 403)).toEqual([
      'NOT_OPERATOR_BRAND',
      'FORBIDDEN',
      'CSRF_REJECTED',
    ])
    expect(codes('/account/me', 'put', 400)).toEqual(['INVALID_DATA'])
    expect(doc.paths['/trade/open'].post.responses[500].description).toContain('OPEN_ORDER_ERROR')
    expect(doc.paths['/account/me'].put.requestBody.required).toBe(false)
    const upload = doc.paths['/upload'].post.requestBody.content['multipart/form-data'].schema
    expect(upload.properties.file).toEqual(expect.objectContaining({ type: 'string', format: 'binary' }))
    expect(upload.properties.file.default).toBeUndefined()
  })

  test('query integers are published as plain integers (Swagger UI must not pre-fill login=0)', () => {
    const login = doc.paths['/account/me'].get.parameters.find((p: any) => p.name === 'login')
    expect(login.schema).toMatchObject({ type: 'integer', minimum: 0 })
    expect(login.schema.anyOf).toBeUndefined()
    expect(login.schema.default).toBeUndefined()
  })

  test('body integers are published as JSON integers, not as anyOf [string, integer]', () => {
    const body = doc.paths['/trade/open'].post.requestBody.content['application/json'].schema
    expect(body.properties.volume).toMatchObject({ type: 'integer', minimum: 1 })
    expect(body.properties.login.anyOf).toBeUndefined()
  })

  test('lists the spec routes', () => {
    for (const p of ['/sign/in', '/password', '/account/me', '/balance/me', '/upload'])
      expect(doc.paths[p], p).toBeDefined()
  })

  test('Swagger UI page and its assets are served by the app (no CDN)', async () => {
    const page = await t.request('GET', '/swagger')
    expect(page.status).toBe(200)
    expect(page.text).toContain('/swagger/assets/swagger-ui-bundle.js')
    expect(page.text).not.toMatch(/unpkg|jsdelivr|cdn\./)
    const js = await t.request('GET', '/swagger/assets/swagger-ui-bundle.js')
    expect(js.status).toBe(200)
    expect(js.headers.get('content-type')).toContain('javascript')
    expect((await t.request('GET', '/swagger/assets/..%2Fpackage.json')).status).toBe(404)
  })
})
