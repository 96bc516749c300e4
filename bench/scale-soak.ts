// The scale-out shape under an operator's mixed load (issue 38): one sqld, one redis-server, an engine, a
// standby and two API instances (ROLE=api), each its own process on loopback. An open-loop load of sign-ins,
// profile and position reads, symbol details, trade opens and closes by 20 accounts, dealer quote pushes
// and landing touches, spread over both API instances, while a copy master with FOLLOWERS followers opens
// and closes a position every 6 s. Every 5 s it samples a write probe (BEGIN IMMEDIATE; ROLLBACK by
// another client), the backlog of undelivered events and its age, /health/ready of every instance,
// resident memory and the database size; at the end it prints the figures against the goals:
// 0 hung requests (> 5 s), 0 5xx, p99 < 250 ms, write probe < 1 s, backlog age < 2 s; copies:
// none opened after its master closed (their fill-to-last-fill times under this load are printed; the
// goals of issue 38 for them, p99 < 250 ms with 100 followers and < 1 s with 1,000, are measured without
// other load by npm run bench:copytrade).
//   npm run bench:scale-soak                 (SOAK_RATE=300 SOAK_SECONDS=600 FOLLOWERS=100)
//   SOAK_RATES=100,200,300,400 SOAK_SECONDS=60 npm run bench:scale-soak   (steps: the highest rate held)
//   SOAK_SHAPE=all ...                       (two ROLE=all instances with the quote simulator)
import {
  copyFigures,
  prepareLoad,
  runMixedLoad,
  type Sample,
  slowByMasterMove,
  summarize,
} from '../tests/support/mixed-load'
import { startScaleShape } from '../tests/support/scale-shape'

const rates = (process.env.SOAK_RATES ?? process.env.SOAK_RATE ?? '300').split(',').map(Number)
const seconds = Number(process.env.SOAK_SECONDS ?? 600)
const followers = Number(process.env.FOLLOWERS ?? 100)
const roleAll = process.env.SOAK_SHAPE === 'all'

const shape = await startScaleShape({ roleAll })
const goals = (s: ReturnType<typeof summarize>, copies: Awaited<ReturnType<typeof copyFigures>>) => ({
  'hung requests = 0': s.hung === 0,
  '5xx = 0': s.fivexx === 0,
  'p99 < 250 ms': s.p99 < 250,
  'write probe < 1 s': s.probeMaxMs !== null && s.probeMaxMs < 1000,
  'backlog age < 2 s': s.backlogAgeMaxMs < 2000,
  'instances ready throughout': s.notReady === 0,
  'no copy after its master closed': copies.afterMasterClose === 0,
})
try {
  const prep = await prepareLoad(shape, { accounts: 20, followers })
  console.log(
    `shape: ${roleAll ? '2 x ROLE=all (simulator)' : 'engine + standby + 2 x ROLE=api'} on sqld + redis; ${followers} followers`,
  )
  let held = 0
  for (const rate of rates) {
    console.log(`\n== ${rate} req/s for ${seconds} s`)
    const onSample = (x: Sample) =>
      console.log(
        `  t+${Math.round((x.at - t0) / 1000)}s sent ${x.sent} in flight ${x.inFlight} | write probe ${x.writeProbeMs === null ? `FAILED (${x.writeProbeError})` : `${x.writeProbeMs.toFixed(1)} ms`} | backlog ${x.backlog} (oldest ${x.backlogAgeMs} ms) | ready ${x.ready.join(',')} | rss ${x.rssMb.join('/')} MB | db ${x.dbMb} MB`,
      )
    const t0 = Date.now()
    const run = await runMixedLoad(shape, prep, { rate, seconds, onSample })
    const s = summarize(run)
    const copies = await copyFigures(shape.sqld.url, run.masterTickets, followers)
    console.log(
      `  requests ${s.requests} (${s.rate}/s): p50 ${s.p50} ms, p99 ${s.p99} ms, max ${s.max} ms; 5xx ${s.fivexx}; hung ${s.hung}`,
    )
    for (const [kind, k] of Object.entries(s.byKind))
      console.log(
        `    ${kind.padEnd(13)} n ${String(k.n).padStart(6)}  p50 ${k.p50} p99 ${k.p99} max ${k.max}  ${JSON.stringify(k.statuses)}`,
      )
    const slow = slowByMasterMove(run, 250)
    console.log(
      `  over 250 ms by the master's last move: after its open ${slow.afterOpen}, after its close ${slow.afterClose}, before its first ${slow.before}`,
    )
    console.log(
      `  write probe max ${s.probeMaxMs ?? 'TIMEOUT'} ms; backlog max ${s.backlogMax}, oldest ${s.backlogAgeMaxMs} ms; samples not ready ${s.notReady}`,
    )
    console.log(
      `  rss max (engine, standby, api, api, sqld, redis) ${s.rssMaxMb.join('/')} MB; db ${s.dbMb[0]} -> ${s.dbMb[1]} MB`,
    )
    console.log(
      `  copies: ${copies.trades} master trades x ${followers}: fill to last follower fill p50 ${copies.p50} ms, p99 ${copies.p99} ms, max ${copies.max} ms; incomplete ${copies.incomplete}; opened after the master closed ${copies.afterMasterClose}; skipped ${JSON.stringify(copies.skipped)}`,
    )
    const g = goals(s, copies)
    for (const [goal, met] of Object.entries(g)) console.log(`  ${met ? 'met ' : 'MISS'} ${goal}`)
    if (Object.values(g).every(Boolean)) held = rate
    else if (rates.length > 1) break
  }
  console.log(`\nhighest rate held: ${held || 'none'} req/s`)
} finally {
  await shape.stop()
  // SOAK_LOGS=dir: each process's output (its warnings and errors; GC logs when BUN_JSC_logGC is set)
  if (process.env.SOAK_LOGS) {
    const names = roleAll ? ['all-1', 'all-2'] : ['engine', 'standby', 'api-1', 'api-2']
    for (const [i, s] of shape.servers.entries())
      await Bun.write(`${process.env.SOAK_LOGS}/${names[i]}-${s.pid}.log`, s.output())
  }
}
