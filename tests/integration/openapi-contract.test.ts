import { afterAll, beforeAll, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { createClient } from '@libsql/client'
import { contractWalk } from '../support/contract-walk'
import { type Prism, startPrism } from '../support/prism'
import { call, type RealServer, serverDir, startRealServer } from '../support/server'

/**
 * The contract test of issue 28: every operation of the document served at /swagger/json is sent once,
 * with its own examples (tests/support/contract-walk.ts), through a Prism validating proxy
 * (`prism proxy --errors`) in front of a real Bun server on a fresh demo database. Any request or response
 * that breaks the document, and any answer that is not 2xx, fails the test. The edge runs the same walk
 * (tests/workers/acceptance.test.ts).
 *
 * Prism buffers an answer before it validates it and follows redirects: the endless price stream and
 * the tracking link's 302 are checked against the document directly (status, media type, Location).
 */

const ROOT = resolve(import.meta.dir, '../..')
const FEED_TOKEN = 'c41f0e9a7b2d58e6f3a1c907be4d2f86e1b0'
const CRON_SECRET = '9b2e71d04c3fa85e6d1b7c29f0a4e8d3c5b6'
type Json = Record<string, any>

let home: ReturnType<typeof serverDir>
let server: RealServer
let prism: Prism
let doc: Json

beforeAll(async () => {
  home = serverDir()
  server = await startRealServer(home.dir, {
    FEED_TOKEN,
    CRON_SECRET,
    // the affiliate host travels as X-Forwarded-Host: Prism sends its own Host upstream
    TRUST_PROXY: '1',
    LOG_LEVEL: 'warn',
  })
  doc = (await call(server.url, 'GET', '/swagger/json')).json
  prism = await startPrism(doc, server.url, home.dir)
}, 60_000)

afterAll(async () => {
  await prism?.stop()
  await server?.stop()
  home?.remove()
})

/** Where the recorded success answers go (`npm run openapi:examples`): the document's examples. */
const EXAMPLES_FILE = join(ROOT, 'src/main/openapi-examples.json')

test('every operation, with its examples, through a Prism validating proxy', async () => {
  const walk = contractWalk({
    doc,
    through: prism.url,
    origin: server.url,
    setup: server.url,
    sql: async (sql, args) => {
      const c = createClient({ url: `file:${join(home.dir, 'app.db')}`, intMode: 'number' })
      // the server writes beside it: wait for its lock as the server's own connections do
      await c.execute('PRAGMA busy_timeout = 5000')
      await c.execute({ sql, args })
      c.close()
    },
    feedToken: FEED_TOKEN,
    cronSecret: CRON_SECRET,
  })
  const { sent, failures, recorded, operations } = await walk.run()
  console.log(`[contract] ${sent} operations sent through Prism, ${failures.length} failed`)
  expect(failures).toEqual([])
  if (process.env.RECORD_EXAMPLES) {
    const sorted = Object.fromEntries(Object.entries(recorded).sort(([a], [b]) => a.localeCompare(b)))
    writeFileSync(EXAMPLES_FILE, `${JSON.stringify(sorted, null, 2)}\n`)
    console.log(`[contract] ${Object.keys(sorted).length} success examples written to ${EXAMPLES_FILE}`)
  }
  // every JSON success carries an example (a real answer, validated by Prism when it was recorded, and
  // against the schema by Spectral's oas3-valid-media-example since); a new route needs a recording
  const missing = operations
    .filter(
      (o) => walk.answersJson(o) && o.op.responses['200'].content['application/json'].example === undefined,
    )
    .map((o) => o.id)
  if (!process.env.RECORD_EXAMPLES)
    expect(missing, 'operations without a success example: run npm run openapi:examples').toEqual([])
}, 300_000)
