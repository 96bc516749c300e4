// The acceptance suite at the edge (issue 41): what the Bun server's suites send over HTTP, sent to the
// Workers entry under `wrangler dev` (workerd) on sqld and the Upstash REST bridge:
// - the contract walk (tests/support/contract-walk.ts) through a Prism validating proxy: every operation
//   of the document, route by route, every module, with the same examples and the same chained state; the
//   Worker's own request log shows it answered each one;
// - the fuzzer's refusals (tests/support/fuzz-cases.ts): invalid cases of every operation, each answered as
//   the document says (400 INVALID_DATA naming the field, 413 for a body over the limit), never a 5xx.
// The document says where each operation is served (`x-runtime`): both runtimes, for every operation today.

import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createClient } from '@libsql/client'
import { RUNTIMES } from '../../src/kernel/http/openapi-finish'
import { contractWalk } from '../support/contract-walk'
import { type EdgeShape, startEdgeShape } from '../support/edge-shape'
import { fuzzClient, invalidCases, operations } from '../support/fuzz-cases'
import { type Prism, startPrism } from '../support/prism'
import { call, demoTokens } from '../support/server'

const SECRET = 'acceptance-suite-jwt-secret-0123456789ab'
const CRON_SECRET = '9b2e71d04c3fa85e6d1b7c29f0a4e8d3c5b6'
const FEED_TOKEN = 'c41f0e9a7b2d58e6f3a1c907be4d2f86e1b0'
type Json = Record<string, any>

let shape: EdgeShape
let prism: Prism
let doc: Json

beforeAll(async () => {
  shape = await startEdgeShape({
    shared: { JWT_SECRET: SECRET, CRON_SECRET, FEED_TOKEN, QUOTE_SIMULATOR: '0' },
    // the engine is where the walk makes the state an example needs; the operations under test go to the Worker
    engine: { LOG_LEVEL: 'warn' },
    // the affiliate host travels as X-Forwarded-Host: Prism sends its own Host upstream
    worker: { TRUST_PROXY: '1', LOG_LEVEL: 'info' },
  })
  doc = (await call(shape.worker.url, 'GET', '/swagger/json')).json
  prism = await startPrism(doc, shape.worker.url, shape.dir)
}, 180_000)

afterAll(async () => {
  await prism?.stop()
  await shape?.stop()
})

test('every operation of the document through the Worker, with its examples, through Prism', async () => {
  const walk = contractWalk({
    doc,
    through: prism.url,
    origin: shape.worker.url,
    setup: shape.engine.url,
    sql: async (sql, args) => {
      const c = createClient({ url: shape.sqld.url, intMode: 'number' })
      await c.execute({ sql, args })
      c.close()
    },
    feedToken: FEED_TOKEN,
    cronSecret: CRON_SECRET,
  })
  // every operation says where it is served; today that is everywhere
  const all = walk.operations()
  expect(all.filter((o) => !RUNTIMES.every((r) => o.op['x-runtime']?.includes(r))).map((o) => o.id)).toEqual(
    [],
  )
  const { sent, failures } = await walk.run().catch((e) => {
    console.log(`[prism]\n${prism.output()}\n[engine]\n${shape.engine.output().slice(-4000)}`)
    throw e
  })
  console.log(`[acceptance] ${sent} operations sent to the Worker through Prism, ${failures.length} failed`)
  if (failures.length) {
    // what the Worker logged of its errors and 5xx answers, wherever they are in its output
    const errors = shape.worker
      .output()
      .split('\n')
      .filter((l) => /"level":"(error|warn)"|"status":5\d\d|Error|✘/.test(l))
    console.log(`[worker errors]\n${errors.slice(-60).join('\n')}`)
    console.log(shape.worker.output().slice(-3000), prism.output())
  }
  expect(failures).toEqual([])
  expect(sent).toBe(all.length)
  // and the Worker answered each of them itself: its request log has a line for every operation
  const served = new Set(
    shape.worker
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Json)
      .filter((l) => l.msg === 'request')
      .map((l) => `${l.method} ${String(l.route).replace(/:(\w+)/g, '{$1}')}`),
  )
  expect(all.map((o) => o.id).filter((id) => !served.has(id))).toEqual([])
}, 600_000)

/** Refusals per operation sent to the edge: evenly spread over the fuzzer's invalid cases (Bun gets them all). */
const REFUSALS_PER_OPERATION = 15

test("the edge refuses what the Bun server refuses: the fuzzer's invalid cases of every operation", async () => {
  const tokens = await demoTokens(shape.engine.url)
  const fuzz = fuzzClient({ base: shape.worker.url, tokens, feedToken: FEED_TOKEN })
  let sent = 0
  for (const o of operations(doc)) {
    // refused inputs only: they change nothing, so the order and the walk before do not matter
    const refused = invalidCases(o).filter((c) => c.expect.kind === 'field' || c.expect.kind === 'body')
    const step = Math.max(1, refused.length / REFUSALS_PER_OPERATION)
    for (let i = 0; i < refused.length; i += step) {
      const c = refused[Math.floor(i)]!
      fuzz.check(o, c, await fuzz.send(o, c))
      sent++
    }
  }
  console.log(
    `[acceptance] ${sent} invalid requests to the Worker, ${fuzz.failures.length} answered otherwise`,
  )
  expect(fuzz.failures.slice(0, 40)).toEqual([])
  expect(sent).toBeGreaterThan(1000)
}, 600_000)
