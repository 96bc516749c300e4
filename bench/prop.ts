// Prop challenges at scale (issue 20), on the embedded default (one process, libSQL file):
//  1. CHALLENGES active challenges, each holding one small position, spread over the demo's non-stock
//     symbols; the day's first evaluator pass over all of them (it takes the day's snapshots), then
//     BENCH_PASSES (5) later passes of the same day, p50 and min (goal: under 250 ms; issue 43);
//  2. ticks per second with breach checks on: batches of random-walk ticks over every symbol, ended by a
//     sentinel breach whose record marks when the engine has worked through the flood (goal: 20,000+);
//  3. breach latency: a tick sent that breaks a challenge's daily loss -> the breach record's detection
//     time, p50/p99 (goal: p99 under 250 ms); BENCH_BANDED=1 sends a tick at the price first, so the
//     account has its price band when the breaking tick comes;
//  4. the next day's first pass, as the job meets it at the zone's midnight in a process that has run all
//     day: every open day row is moved back (yesterday's, not ended) in the database, and one pass ends
//     them all and takes today's snapshots; BENCH_PASSES times, p50 and min.
// BENCH_HISTORY (0) gives every phase that many ended days before any pass, as a phase some weeks into
// its challenge has (the passes read and end its days not ended yet among them); BENCH_POSITIONS (0)
// closed positions over those days too, as an active trader's (the phases start that many days earlier).
// Forex and metals trade on weekdays only (the demo's sessions): run it Monday to Friday. Symbols in a
// session break (metals and energies pause daily) are left out of the positions.
import { join } from 'node:path'
import { createClient } from '@libsql/client'
import { demoSymbols } from '../src/modules/market/demo-symbols'
import { call, serverDir, startRealServer } from '../tests/support/server'

const CHALLENGES = Number(process.env.BENCH_CHALLENGES ?? 10_000)
const BREACHES = Number(process.env.BENCH_BREACHES ?? 50)
const FLOOD = Number(process.env.BENCH_TICKS ?? 50_000)
const BANDED = process.env.BENCH_BANDED === '1'
const PASSES = Number(process.env.BENCH_PASSES ?? 5)
const HISTORY = Number(process.env.BENCH_HISTORY ?? 0)
const POSITIONS = HISTORY > 0 ? Number(process.env.BENCH_POSITIONS ?? 0) : 0
const CRON = 'bench-cron-secret-0123456789abcdef'

const home = serverDir()
const server = await startRealServer(home.dir, {
  LOG_LEVEL: 'warn',
  CRON_SECRET: CRON,
  // the bench runs the evaluator's passes itself: the job's own pass (every 60 s) took the day's snapshots
  // during the setup's opens in some runs, and the pass timed as the day's first then was not
  CLUSTER_JOBS: 'external',
  SIGNIN_MAX_FAILURES_PER_IP: '1000000',
  QUOTE_SIMULATOR: '0',
  SEED_HISTORY: '0',
})
const base = server.url
const ok = async (r: Promise<{ status: number; json: any; text: string }>) => {
  const x = await r
  if (x.status !== 200) throw new Error(`${x.status} ${x.text.slice(0, 300)}`)
  return x.json
}
const token = async (path: string, body: unknown) =>
  (await ok(call(base, 'POST', path, { body }))).__token as string
const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!
async function pool<T>(n: number, width: number, job: (i: number) => Promise<T>) {
  const out: T[] = new Array(n)
  let next = 0
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) {
        const i = next++
        out[i] = await job(i)
      }
    }),
  )
  return out
}

try {
  const dealer = await token('/manager/sign/in', { login: 3, password: 'dealer-pass-1' })
  const manager = await token('/manager/sign/in', { login: 1, password: 'manager-pass-1' })
  const customer = await token('/customer/sign/in', { email: 'demo@example.com', password: 'demo-pass-1' })
  const symbols = demoSymbols(Date.now()).filter((s) => s.secGroup !== 'Stocks')
  const mid = new Map(symbols.map((s) => [s.symbol, s.simPrice as number]))
  const quote = (symbol: string) => {
    const s = symbols.find((x) => x.symbol === symbol)!
    const m = mid.get(symbol)!
    const spread = (s.simSpread ?? 2) * 10 ** -s.digits
    const r = (x: number) => Math.round(x * 10 ** s.digits) / 10 ** s.digits
    return { symbol, bid: r(m), ask: r(m + spread) }
  }
  const ingest = (ticks: { symbol: string; bid: number; ask: number }[]) =>
    ok(call(base, 'POST', '/market/quotes', { token: dealer, body: { ticks } }))
  await ingest(symbols.map((s) => quote(s.symbol)))

  const program = await ok(
    call(base, 'POST', '/manager/prop/programs', {
      token: manager,
      body: {
        name: 'Bench',
        price: 0,
        currency: 'USD',
        active: true,
        // one customer buys them all: no purchase limits (a free program's default is one trial)
        limits: {},
        steps: [
          {
            account_group: 'prop\\eval\\USD',
            phase_type: 0,
            rules: { profit_target_pct: 10, daily_loss_pct: 5, total_loss_pct: 10 },
          },
        ],
      },
    }),
  )
  let t0 = performance.now()
  const bought = await pool(CHALLENGES + BREACHES, 8, async () => {
    const b = await ok(
      call(base, 'POST', '/prop/challenge/buy', {
        token: customer,
        body: { program_id: program.id, payer_login: 100001 },
      }),
    )
    return { login: b.account.login as number, challenge: b.challenge.id as number }
  })
  const buySeconds = (performance.now() - t0) / 1000
  // one small position each (0.01 lot), every symbol in turn; a sentinel holds 1 lot of EURUSD
  const open = (login: number, symbol: string, volume: number) =>
    ok(
      call(base, 'POST', '/trade/open', {
        token: dealer,
        body: { login, cmd: 0, volume, symbol, sl: 0, tp: 0 },
      }),
    )
  // symbols in a session break now (metals and energies pause daily) are left out
  const closed = new Set<string>()
  const openSome = async (login: number, i: number) => {
    for (let k = 0; k < symbols.length; k++) {
      const symbol = symbols[(i + k) % symbols.length]!.symbol
      if (closed.has(symbol)) continue
      const r = await call(base, 'POST', '/trade/open', {
        token: dealer,
        body: { login, cmd: 0, volume: 1, symbol, sl: 0, tp: 0 },
      })
      if (r.status === 200) return
      if (!/market closed/.test(r.text)) throw new Error(`${r.status} ${r.text.slice(0, 300)}`)
      closed.add(symbol)
    }
    throw new Error('every symbol is outside its session: run the bench on a weekday')
  }
  t0 = performance.now()
  await pool(CHALLENGES, 8, (i) => openSome(bought[i]!.login, i))
  const openSeconds = (performance.now() - t0) / 1000
  const sentinels = bought.slice(CHALLENGES)
  await open(sentinels[0]!.login, 'EURUSD', 100)
  const sentinelOpenMid = mid.get('EURUSD')!

  // settled days far enough back that no round of part 4 moves a latest day onto one
  if (HISTORY > 0) {
    const file = createClient({ url: `file:${join(home.dir, 'app.db')}` })
    // the server writes the same file meanwhile (its jobs, its checkpointer): wait for its lock
    await file.execute('PRAGMA busy_timeout = 10000')
    await file.execute({
      sql: `insert into prop_days (phase_id, day, start_balance, start_equity, min_equity, settled, created_at)
        select p.id, date('now', '-' || (1000 + k.value) || ' day'), p.initial_balance, p.initial_balance,
          p.initial_balance, 1, 0
        from prop_phases p, json_each(?) k where p.status = 1`,
      args: [JSON.stringify(Array.from({ length: HISTORY }, (_, k) => k))],
    })
    if (POSITIONS > 0) {
      const DAY = 86_400_000
      await file.execute(
        `update prop_phases set start_time = start_time - ${HISTORY * DAY},
           start_day = date(start_day, '-${HISTORY} day') where status = 1`,
      )
      // a minute each, spread evenly from the phase's start to a day ago
      const step = Math.floor(((HISTORY - 1) * DAY) / POSITIONS)
      await file.execute({
        sql: `insert into orders (brand_id, login, symbol, cmd, volume, state, open_price, open_time,
            close_price, close_time, updated_at)
          select brand_id, account_login, 'EURUSD', 0, 1, 'closed', 1.1, at, 1.1, at + 60000, at
          from (select p.brand_id, p.account_login, p.start_time + k.value * ${step} as at
            from prop_phases p, json_each(?) k where p.status = 1)`,
        args: [JSON.stringify(Array.from({ length: POSITIONS }, (_, k) => k))],
      })
    }
    file.close()
  }

  // 1. one evaluator pass over every active phase (it also takes each day's start snapshot)
  t0 = performance.now()
  const evaluated = await ok(
    call(base, 'POST', '/cron/prop.evaluate', { headers: { 'x-cron-secret': CRON } }),
  )
  const evaluatorMs = performance.now() - t0
  // later passes of the same day (what the job does every run): no snapshots to take; several, as one
  // pass moves with the host by a third from one run to the next
  const later: number[] = []
  for (let i = 0; i < PASSES; i++)
    later.push(
      (await ok(call(base, 'POST', '/cron/prop.evaluate', { headers: { 'x-cron-secret': CRON } }))).ms,
    )

  // the engine's first look at the new positions: each account gets its price bands on the first tick of
  // its symbols (one tick of every symbol)
  t0 = performance.now()
  await ingest(symbols.map((s) => quote(s.symbol)))
  const firstLookMs = performance.now() - t0

  // 2. a flood of small moves in batches of 100, then one sentinel breach: its record marks the end
  const walk = () => {
    const s = symbols[Math.floor(Math.random() * symbols.length)]!.symbol
    mid.set(s, mid.get(s)! * (1 + (Math.random() - 0.5) * 0.0004))
    return quote(s)
  }
  const breachOf = async (challenge: number) =>
    (await ok(call(base, 'GET', `/prop/challenges/${challenge}/breaches`, { token: customer }))).rows[0] as
      | { detected_time_ms: number }
      | undefined
  t0 = performance.now()
  for (let sent = 0; sent < FLOOD; sent += 100) await ingest(Array.from({ length: 100 }, walk))
  // 1 lot, 1% under its open (or under the walk's price, if lower): about 1,000 USD lost, over the 500 of
  // the daily limit. 1% under the walk's price alone left it short when EURUSD's walk rose by more than
  // about 0.5% (one run in several ended "no breach recorded": the walk's spread over ~1,700 ticks is ~0.5%)
  mid.set('EURUSD', Math.min(mid.get('EURUSD')!, sentinelOpenMid) * 0.99)
  await ingest([quote('EURUSD')])
  const deadline = (what: string) => {
    const until = Date.now() + 60_000
    return () => {
      if (Date.now() > until) throw new Error(`no breach recorded within 60 s: ${what}`)
    }
  }
  const floodDue = deadline('the flood sentinel')
  while (!(await breachOf(sentinels[0]!.challenge))) {
    floodDue()
    await Bun.sleep(1)
  }
  const floodSeconds = (performance.now() - t0) / 1000

  // 3. breach latency: each other sentinel opens 1 lot at the price now, then a tick 1% lower breaks it
  const latencies: number[] = []
  for (const s of sentinels.slice(1)) {
    await open(s.login, 'EURUSD', 100)
    // BENCH_BANDED=1: a tick at the price first, so the account has its price band (else, just changed, it
    // is looked at on every tick until its next look)
    if (BANDED) {
      await ingest([quote('EURUSD')])
      await Bun.sleep(20)
    }
    mid.set('EURUSD', mid.get('EURUSD')! * 0.99)
    const sentAt = Date.now()
    await ingest([quote('EURUSD')])
    let b = await breachOf(s.challenge)
    const due = deadline(`challenge ${s.challenge}`)
    while (!b) {
      due()
      await Bun.sleep(1)
      b = await breachOf(s.challenge)
    }
    latencies.push(b.detected_time_ms - sentAt)
  }
  // 4. the next day: yesterday's rows not ended yet, today's not taken (as at a zone's midnight), PASSES
  // times (round r moves each phase's latest row r days back: the days before are taken by the rounds
  // before)
  const file = createClient({ url: `file:${join(home.dir, 'app.db')}` })
  await file.execute('PRAGMA busy_timeout = 10000')
  const rollovers: number[] = []
  const afterRollover: number[] = []
  for (let r = 1; r <= PASSES; r++) {
    await file.execute(`update prop_days set day = date(day, '-${r} day')
      where (phase_id, day) in (select phase_id, max(day) from prop_days group by phase_id)`)
    const passAt = Date.now()
    for (const into of [rollovers, afterRollover])
      into.push(
        (await ok(call(base, 'POST', '/cron/prop.evaluate', { headers: { 'x-cron-secret': CRON } }))).ms,
      )
    // every active phase's latest day is the one its first pass made today, settled
    const left = Number(
      (
        await file.execute({
          sql: `select count(*) as n from prop_phases p join prop_days d on d.rowid =
              (select x.rowid from prop_days x where x.phase_id = p.id order by x.day desc limit 1)
            where p.status = 1 and (d.created_at < ? or d.settled = 0)`,
          args: [passAt],
        })
      ).rows[0]!.n,
    )
    if (left > 0) throw new Error(`${left} phases' days were not settled by the next day's first pass`)
  }
  file.close()

  console.log(
    `prop, embedded default, ${CHALLENGES} challenges with a position each over ${symbols.length - closed.size} symbols, ${HISTORY} ended days and ${POSITIONS} closed positions each before the passes`,
  )
  console.log(
    `  setup: ${bought.length} purchases in ${buySeconds.toFixed(1)} s, opens in ${openSeconds.toFixed(1)} s`,
  )
  console.log(
    `  evaluator pass over ${bought.length} phases: ${evaluated.ms} ms in the job, ${evaluatorMs.toFixed(0)} ms for the call (a restarted process's first, cold: the new phases' first snapshots and trading days); later passes p50 ${pct(later, 50)} ms, min ${Math.min(...later)} ms over ${PASSES} (goal < 250)`,
  )
  console.log(
    `  first look at the new positions (one tick of every symbol): ${firstLookMs.toFixed(0)} ms for ${CHALLENGES + 1} accounts`,
  )
  console.log(
    `  ticks processed with breach checks: ${(FLOOD / floodSeconds).toFixed(0)}/s over ${FLOOD} (goal >= 20000)`,
  )
  console.log(
    `  the next day's first pass (the previous day ended, today's snapshots; warm): p50 ${pct(rollovers, 50)} ms, min ${Math.min(...rollovers)} ms over ${PASSES} (${rollovers.join(', ')}); the pass after it p50 ${pct(afterRollover, 50)} ms (goal < 250)`,
  )
  if (latencies.length)
    console.log(
      `  breach latency tick -> record${BANDED ? ' (accounts with their band)' : ''}: p50 ${pct(latencies, 50)} ms, p99 ${pct(latencies, 99)} ms over ${latencies.length} (goal p99 < 250)`,
    )
} finally {
  await server.stop()
  home.remove()
}
