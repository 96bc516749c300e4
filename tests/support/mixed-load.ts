import { createClient } from '@libsql/client'
import { dirBytes, rssMb, type ScaleShape } from './scale-shape'
import { call } from './server'

/**
 * An operator's mixed load against the scale-out shape (issue 38), open loop (requests leave at the rate,
 * whatever the answers do, as real clients' do): sign-ins, profile and position reads, symbol details,
 * trade opens and closes by a pool of accounts, dealer quote pushes, landing-page touches, spread over the
 * API instances, and a copy master opening and closing a position with its followers at a fixed period.
 * Every few seconds it samples a write probe on the database, the undelivered event backlog, readiness,
 * resident memory and the database size.
 */

/** Share of each request kind in the load (they sum to 1). */
export const MIX = {
  me: 0.24,
  list: 0.14,
  symbol: 0.1,
  open: 0.13,
  close: 0.13,
  quotes: 0.1,
  touch: 0.12,
  signin: 0.04,
} as const
type Kind = keyof typeof MIX | 'master_open' | 'master_close'

export interface LoadOptions {
  /** Requests per second (open loop). */
  rate: number
  seconds: number
  /** The master opens a position and closes it half a period later, every period. */
  masterPeriodMs?: number
  sampleEveryMs?: number
  /** An answer slower than this counts as hung. */
  hungMs?: number
  /** Printed per sample (the bench); silent in the test. */
  onSample?: (s: Sample) => void
}

export interface Sample {
  at: number
  /** A `BEGIN IMMEDIATE; ROLLBACK` by another client: how long the write lock took to get, ms (null: timed out). */
  writeProbeMs: number | null
  /** Why the probe failed (its error, or `timed out` after 10 s). */
  writeProbeError?: string
  backlog: number
  /** Age of the oldest undelivered event, ms. */
  backlogAgeMs: number
  /** /health/ready of each instance. */
  ready: number[]
  readyBody: string[]
  rssMb: number[]
  dbMb: number
  sent: number
  inFlight: number
}

interface Result {
  kind: Kind
  status: number
  ms: number
  code?: string
  /** When it was sent (performance.now()). */
  at: number
}

const SYMBOLS = ['EURUSD', 'GBPUSD', 'USDJPY'] as const
const BASE: Record<string, number> = { EURUSD: 1.1, GBPUSD: 1.27, USDJPY: 150 }

async function ok(r: Promise<{ status: number; json: any; text: string }>) {
  const x = await r
  if (x.status !== 200) throw new Error(`${x.status} ${x.text}`)
  return x.json
}

export interface Prepared {
  dealer: string
  demo: string
  master: string
  masterId: number
  traders: { login: number; token: string }[]
  followers: number[]
}

/** Accounts of the load: `accounts` traders, `followers` demo accounts following the demo master. */
export async function prepareLoad(shape: ScaleShape, opts: { accounts: number; followers: number }) {
  const base = shape.api[0]!.url
  const token = async (path: string, body: unknown) =>
    (await ok(call(base, 'POST', path, { body }))).__token as string
  const manager = await token('/manager/sign/in', { login: 1, password: 'manager-pass-1' })
  const dealer = await token('/manager/sign/in', { login: 3, password: 'dealer-pass-1' })
  const demo = await token('/customer/sign/in', { email: 'demo@example.com', password: 'demo-pass-1' })
  const master = await token('/sign/in', { login: 100004, password: 'master-pass-1' })
  const customerId = (await ok(call(base, 'GET', '/customer/me', { token: demo }))).id as number
  const listed = (await ok(call(base, 'GET', '/copytrade/masters', { token: demo }))).rows[0]
  const masterId = listed.id as number
  const policyVersion = listed.policy_version as number
  await pushQuotes(base, dealer, 0)
  const traders: Prepared['traders'] = []
  for (let i = 0; i < opts.accounts; i++) {
    const login = (
      await ok(
        call(base, 'POST', '/manager/accounts', {
          token: manager,
          body: { group: 'demo\\USD', password: 'soak-pass-1' },
        }),
      )
    ).login as number
    traders.push({ login, token: await token('/sign/in', { login, password: 'soak-pass-1' }) })
  }
  const followers: number[] = []
  const one = async () => {
    const a = await ok(
      call(base, 'POST', '/manager/accounts', {
        token: manager,
        body: { group: 'demo\\USD', password: 'soak-pass-1', customer_id: customerId },
      }),
    )
    await ok(
      call(base, 'POST', '/copytrade/follower', {
        token: demo,
        body: { login: a.login, defaults: { volume_mode: 0, volume_param: 1 } },
      }),
    )
    await ok(
      call(base, 'POST', '/copytrade/subscription', {
        token: demo,
        body: { follower_login: a.login, master_id: masterId, policy_version: policyVersion },
      }),
    )
    followers.push(a.login)
  }
  for (let i = 0; i < opts.followers; i += 4)
    await Promise.all(Array.from({ length: Math.min(4, opts.followers - i) }, one))
  return { dealer, demo, master, masterId, traders, followers } satisfies Prepared
}

function pushQuotes(base: string, dealer: string, step: number) {
  const ticks = SYMBOLS.map((symbol) => {
    const b = BASE[symbol]!
    const digits = symbol === 'USDJPY' ? 3 : 5
    const bid = Number((b * (1 + 0.0005 * Math.sin(step / 7))).toFixed(digits))
    const ask = Number((bid + (symbol === 'USDJPY' ? 0.02 : 0.0002)).toFixed(digits))
    return { symbol, bid, ask }
  })
  return call(base, 'POST', '/market/quotes', { token: dealer, body: { ticks } })
}

const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return 0
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!
}

/** Runs the load; resolves with every answer, the samples and the master's tickets. */
export async function runMixedLoad(shape: ScaleShape, prep: Prepared, o: LoadOptions) {
  const hungMs = o.hungMs ?? 5000
  const period = o.masterPeriodMs ?? 6000
  const sampleEvery = o.sampleEveryMs ?? 5000
  const urls = shape.api.map((s) => s.url)
  const results: Result[] = []
  const open = new Map<number, number[]>()
  for (const t of prep.traders) open.set(t.login, [])
  let sent = 0
  let inFlight = 0
  let quoteStep = 0
  const masterTickets: number[] = []
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)]!

  const timed = async (kind: Kind, run: (signal: AbortSignal) => Promise<Response>) => {
    const t0 = performance.now()
    inFlight++
    sent++
    let status = 0
    let code: string | undefined
    let body: any
    try {
      const res = await run(AbortSignal.timeout(30_000))
      status = res.status
      const text = await res.text()
      try {
        body = JSON.parse(text)
        code = body?.error
      } catch {}
    } catch (e) {
      status = (e as Error).name === 'TimeoutError' ? -1 : -2
      code = (e as Error).message
    } finally {
      inFlight--
    }
    results.push({ kind, status, ms: performance.now() - t0, code, at: t0 })
    return { status, body }
  }
  const req =
    (url: string, method: string, path: string, token?: string, body?: unknown) => (signal: AbortSignal) =>
      fetch(`${url}${path}`, {
        method,
        signal,
        headers: {
          ...(token ? { authorization: token } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      })

  const one = async () => {
    const url = pick(urls)
    const r = Math.random()
    let acc = 0
    let kind: keyof typeof MIX = 'me'
    for (const [k, share] of Object.entries(MIX)) {
      acc += share
      if (r < acc) {
        kind = k as keyof typeof MIX
        break
      }
    }
    const t = pick(prep.traders)
    switch (kind) {
      case 'me':
        return timed(kind, req(url, 'GET', '/account/me', t.token))
      case 'list':
        return timed(kind, req(url, 'GET', `/trade/list?login=${t.login}`, t.token))
      case 'symbol':
        return timed(
          kind,
          req(url, 'GET', `/market/symbol?login=${t.login}&symbol=${pick(SYMBOLS)}`, t.token),
        )
      case 'quotes': {
        const step = quoteStep++
        return timed(kind, () => pushQuotes(url, prep.dealer, step).then((x) => new Response(x.text, x)))
      }
      case 'touch':
        return timed(kind, req(url, 'GET', `/?affiliate=DEMOPARTNER&utm_source=soak&sub1=${sent}`))
      case 'signin':
        return timed(
          kind,
          req(url, 'POST', '/sign/in', undefined, { login: t.login, password: 'soak-pass-1' }),
        )
      case 'close': {
        const mine = open.get(t.login)!
        const ticket = mine.shift()
        if (ticket !== undefined)
          return timed(kind, req(url, 'DELETE', '/trade/close', t.token, { order: ticket }))
        break
      }
    }
    const r2 = await timed(
      'open',
      req(url, 'POST', '/trade/open', t.token, {
        login: t.login,
        cmd: Math.random() < 0.5 ? 0 : 1,
        volume: 1,
        symbol: pick(SYMBOLS),
        sl: 0,
        tp: 0,
      }),
    )
    if (r2.status === 200) open.get(t.login)!.push(r2.body.order)
    return r2
  }

  // the master: open, close half a period later, at a fixed period
  let stopping = false
  const masterLoop = (async () => {
    let next = performance.now() + 1000
    while (!stopping) {
      await Bun.sleep(Math.max(0, next - performance.now()))
      if (stopping) break
      next += period
      const url = pick(urls)
      const r = await timed(
        'master_open',
        req(url, 'POST', '/trade/open', prep.master, {
          login: 100004,
          cmd: 0,
          volume: 10,
          symbol: 'EURUSD',
          sl: 0,
          tp: 0,
        }),
      )
      if (r.status !== 200) continue
      masterTickets.push(r.body.order)
      await Bun.sleep(period / 2)
      await timed(
        'master_close',
        req(pick(urls), 'DELETE', '/trade/close', prep.master, { order: r.body.order }),
      )
    }
  })()

  // samples
  const db = createClient({ url: shape.sqld.url, intMode: 'number' })
  const samples: Sample[] = []
  const pids = [...shape.servers.map((s) => s.pid), shape.sqld.pid, shape.redis.pid]
  const sample = async (): Promise<Sample> => {
    const t0 = performance.now()
    let writeProbeMs: number | null = null
    let writeProbeError: string | undefined
    try {
      await Promise.race([
        (async () => {
          const tx = await db.transaction('write')
          try {
            await tx.execute('select 1')
          } finally {
            await tx.rollback().catch(() => {})
            tx.close()
          }
        })(),
        Bun.sleep(10_000).then(() => {
          throw new Error('write probe timed out')
        }),
      ])
      writeProbeMs = performance.now() - t0
    } catch (e) {
      writeProbeError = `${Math.round(performance.now() - t0)} ms: ${(e as Error).message}`
    }
    let backlog = -1
    let backlogAgeMs = -1
    try {
      const row = (
        await db.execute(
          'select count(*) as n, min(created_at) as oldest from outbox where dispatched_at is null',
        )
      ).rows[0]!
      backlog = Number(row.n)
      backlogAgeMs = row.oldest === null ? 0 : Math.max(0, Date.now() - Number(row.oldest))
    } catch {}
    const health = await Promise.all(
      shape.servers.map(async (s) => {
        try {
          const r = await fetch(`${s.url}/health/ready`, { signal: AbortSignal.timeout(5000) })
          return { status: r.status, body: await r.text() }
        } catch (e) {
          return { status: -1, body: String(e) }
        }
      }),
    )
    return {
      at: Date.now(),
      writeProbeMs,
      writeProbeError,
      backlog,
      backlogAgeMs,
      ready: health.map((h) => h.status),
      readyBody: health.map((h) => h.body),
      rssMb: pids.map(rssMb),
      dbMb: Math.round(dirBytes(shape.sqld.dir) / 1e5) / 10,
      sent,
      inFlight,
    }
  }
  const sampler = (async () => {
    while (!stopping) {
      await Bun.sleep(sampleEvery)
      if (stopping) break
      const s = await sample()
      samples.push(s)
      o.onSample?.(s)
    }
  })()

  // the open loop: a tick every 10 ms sends what the rate owes by now
  const started = performance.now()
  const pending: Promise<unknown>[] = []
  let due = 0
  while (performance.now() - started < o.seconds * 1000) {
    const owed = Math.floor(((performance.now() - started) / 1000) * o.rate) - due
    for (let i = 0; i < owed; i++) pending.push(one())
    due += Math.max(0, owed)
    if (pending.length > 5000) pending.splice(0, pending.length - 1000)
    await Bun.sleep(10)
  }
  stopping = true
  await Promise.allSettled(pending)
  await masterLoop
  await sampler
  const elapsed = (performance.now() - started) / 1000
  db.close()
  return { results, samples, masterTickets, elapsed, hungMs, sentRate: due / o.seconds }
}

export type LoadRun = Awaited<ReturnType<typeof runMixedLoad>>

/**
 * Requests slower than `overMs` (the master's own left out) by the master's last move before they were
 * sent: its open (the copies' opens fan out) or its close (the copies' closes). A tail that gathers after
 * one of them is that fan-out's.
 */
export function slowByMasterMove(run: { results: Result[] }, overMs: number) {
  const moves = run.results
    .filter((r) => r.kind === 'master_open' || r.kind === 'master_close')
    .sort((a, b) => a.at - b.at)
  const out = { afterOpen: 0, afterClose: 0, before: 0 }
  for (const r of run.results) {
    if (r.ms <= overMs || r.kind === 'master_open' || r.kind === 'master_close') continue
    let last: Result | undefined
    for (const m of moves) if (m.at <= r.at) last = m
    if (!last) out.before++
    else if (last.kind === 'master_open') out.afterOpen++
    else out.afterClose++
  }
  return out
}

/** The figures of a run against the goals of issue 38. */
export function summarize(run: LoadRun) {
  const answered = run.results.filter((r) => r.status > 0)
  const lat = answered.map((r) => r.ms)
  const byKind: Record<
    string,
    { n: number; p50: number; p99: number; max: number; statuses: Record<string, number> }
  > = {}
  for (const r of run.results) {
    byKind[r.kind] ??= { n: 0, p50: 0, p99: 0, max: 0, statuses: {} }
    const k = byKind[r.kind]!
    k.n++
    const s =
      r.status > 0 ? `${r.status}${r.code ? ` ${r.code}` : ''}` : r.status === -1 ? 'timeout' : 'error'
    k.statuses[s] = (k.statuses[s] ?? 0) + 1
  }
  for (const [kind, k] of Object.entries(byKind)) {
    const xs = run.results.filter((r) => r.kind === kind && r.status > 0).map((r) => r.ms)
    k.p50 = Math.round(pct(xs, 50) * 10) / 10
    k.p99 = Math.round(pct(xs, 99) * 10) / 10
    k.max = Math.round(Math.max(0, ...xs))
  }
  const probes = run.samples.map((s) => s.writeProbeMs)
  return {
    requests: run.results.length,
    rate: Math.round((run.results.length / run.elapsed) * 10) / 10,
    p50: Math.round(pct(lat, 50) * 10) / 10,
    p99: Math.round(pct(lat, 99) * 10) / 10,
    max: Math.round(Math.max(0, ...lat)),
    fivexx: run.results.filter((r) => r.status >= 500).length,
    hung: run.results.filter((r) => r.status <= 0 || r.ms > run.hungMs).length,
    probeMaxMs: probes.some((p) => p === null) ? null : Math.round(Math.max(0, ...(probes as number[]))),
    /** Each failed probe's error, at its second of the run: a null probeMaxMs says why. */
    probeErrors: run.samples
      .filter((s) => s.writeProbeError !== undefined)
      .map((s) => `t+${Math.round((s.at - run.samples[0]!.at) / 1000)}s ${s.writeProbeError}`),
    backlogMax: Math.max(0, ...run.samples.map((s) => s.backlog)),
    backlogAgeMaxMs: Math.max(0, ...run.samples.map((s) => s.backlogAgeMs)),
    notReady: run.samples.filter((s) => s.ready.some((r) => r !== 200)).length,
    rssMaxMb: run.samples.length
      ? run.samples[0]!.rssMb.map((_, i) => Math.max(...run.samples.map((s) => s.rssMb[i]!)))
      : [],
    dbMb: [run.samples[0]?.dbMb ?? 0, run.samples.at(-1)?.dbMb ?? 0],
    byKind,
  }
}

/** The copies of the master's trades: fill-to-last-follower-fill times and what was skipped, from the database. */
export async function copyFigures(dbUrl: string, tickets: number[], followers: number) {
  const db = createClient({ url: dbUrl, intMode: 'number' })
  try {
    const fan: number[] = []
    const skipped: Record<string, number> = {}
    let incomplete = 0
    let afterMasterClose = 0
    for (const t of tickets) {
      const r = (
        await db.execute({
          sql: `select (select open_time from orders where ticket = ?) as fill,
                       (select close_time from orders where ticket = ?) as closed,
                       max(follower_time) as last, count(*) as n, sum(result = 'copied') as copied
                from copy_records where master_ticket = ? and action = 'open'`,
          args: [t, t, t],
        })
      ).rows[0]!
      if (Number(r.n) < followers) incomplete++
      if (Number(r.copied) > 0) fan.push(Number(r.last) - Number(r.fill))
      const late = (
        await db.execute({
          sql: `select count(*) as n from copy_records where master_ticket = ? and action = 'open'
                and result = 'copied' and follower_time > ? and ? > 0`,
          args: [t, Number(r.closed), Number(r.closed)],
        })
      ).rows[0]!
      afterMasterClose += Number(late.n)
      for (const s of (
        await db.execute({
          sql: `select reason, count(*) as n from copy_records where master_ticket = ? and result = 'skipped' group by reason`,
          args: [t],
        })
      ).rows)
        skipped[String(s.reason)] = (skipped[String(s.reason)] ?? 0) + Number(s.n)
    }
    return {
      trades: tickets.length,
      p50: Math.round(pct(fan, 50)),
      p99: Math.round(pct(fan, 99)),
      max: Math.round(Math.max(0, ...fan)),
      incomplete,
      afterMasterClose,
      skipped,
    }
  } finally {
    db.close()
  }
}
