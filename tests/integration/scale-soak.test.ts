// A regression guard of the scale-out shape under load (issue 38; the full run is npm run bench:scale-soak):
// an engine, a standby and two ROLE=api instances on one sqld and one redis-server, driven for 60 s at
// 100 mixed requests/s while a copy master with 50 followers opens and closes every 6 s. No answer is a
// 5xx, none takes 5 s, the write path answers every probe within 1 s, every instance stays ready, and no
// copy is opened after its master closed.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { copyFigures, prepareLoad, runMixedLoad, summarize } from '../support/mixed-load'
import { type ScaleShape, startScaleShape } from '../support/scale-shape'

const FOLLOWERS = 50
let shape: ScaleShape

beforeAll(async () => {
  shape = await startScaleShape()
}, 120_000)

afterAll(async () => {
  await shape?.stop()
})

test('60 s at 100 requests/s with copy fan-out: no 5xx, nothing over 5 s, the write path healthy', async () => {
  const prep = await prepareLoad(shape, { accounts: 20, followers: FOLLOWERS })
  const run = await runMixedLoad(shape, prep, { rate: 100, seconds: 60 })
  const s = summarize(run)
  const copies = await copyFigures(shape.sqld.url, run.masterTickets, FOLLOWERS)
  const report = JSON.stringify({ ...s, byKind: undefined, copies })
  expect(s.requests, report).toBeGreaterThan(5500)
  expect(s.fivexx, report).toBe(0)
  expect(s.hung, report).toBe(0)
  expect(s.probeMaxMs, report).not.toBeNull()
  expect(s.probeMaxMs!, report).toBeLessThan(1000)
  expect(s.notReady, report).toBe(0)
  expect(copies.trades, report).toBeGreaterThan(5)
  expect(copies.incomplete, report).toBe(0)
  expect(copies.afterMasterClose, report).toBe(0)
  for (const srv of shape.servers) expect(srv.output()).not.toContain('unhandled')
}, 240_000)
