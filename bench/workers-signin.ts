// Sign-in at the edge (issue 26): CPU per password verification in workerd (`wrangler dev`, local mode)
// and on Bun, and the workerd process's peak memory with 4 concurrent sign-ins. Real sqld, redis-server
// and the Upstash REST bridge, as in tests/workers; the Bun engine seeds the database.
//   bun bench/workers-signin.ts            (BENCH_SIGNINS: sequential sign-ins measured, default 20)
// Both the hash the seed wrote (today's parameters) and an old 64 MiB hash are measured.
import { readFileSync, writeFileSync } from 'node:fs'
import { createClient } from '@libsql/client'
import { startRedis } from '../tests/support/redis'
import { call, serverDir, startRealServer } from '../tests/support/server'
import { startSqld } from '../tests/support/sqld'
import { startUpstashBridge } from '../tests/support/upstash-bridge'
import { startWranglerDev } from '../tests/support/wrangler'

const N = Number(process.env.BENCH_SIGNINS ?? 20)
const SECRET = 'bench-workers-jwt-secret-0123456789abcdef'

/** The workerd processes under wrangler (found by parent pid: wrangler's children and theirs). */
function workerdPids(root: number): number[] {
  const kids = (pid: number) =>
    Bun.spawnSync(['pgrep', '-P', String(pid)])
      .stdout.toString()
      .split('\n')
      .filter(Boolean)
      .map(Number)
  const all = [root, ...kids(root)]
  for (const k of kids(root)) all.push(...kids(k))
  const named = all.filter((p) => {
    try {
      return readFileSync(`/proc/${p}/comm`, 'utf8').trim().startsWith('workerd')
    } catch {
      return false
    }
  })
  if (!named.length) throw new Error('workerd not found under wrangler')
  return named
}

const cpuOf = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100 // utime + stime, 100 ticks a second
}
const cpuMs = (pids: number[]) => pids.reduce((sum, p) => sum + cpuOf(p), 0)
const memKb = (pid: number, field: 'VmRSS' | 'VmHWM') =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)

const sqld = await startSqld()
const redis = await startRedis()
const bridge = startUpstashBridge(redis.url, 'bridge-token')
const home = serverDir()
const engine = await startRealServer(home.dir, {
  DATABASE_URL: sqld.url,
  REDIS_URL: redis.url,
  ROLE: 'engine',
  JWT_SECRET: SECRET,
  LOG_LEVEL: 'warn',
})
const worker = await startWranglerDev({
  APP_ENV: 'test',
  SEED_DEMO: '0',
  JWT_SECRET: SECRET,
  DATABASE_URL: sqld.url,
  UPSTASH_REDIS_REST_URL: bridge.url,
  UPSTASH_REDIS_REST_TOKEN: 'bridge-token',
  LOG_LEVEL: 'warn',
  SIGNIN_MAX_FAILURES: '1000',
})
const db = createClient({ url: sqld.url })
try {
  // wrangler runs two workerd processes (its proxy and the Worker): CPU is summed, memory is the one's
  // that runs the Worker (the largest)
  const pid = workerdPids(worker.pid)
  const signIn = async (base: string, login: number) => {
    const r = await call(base, 'POST', '/sign/in', { body: { login, password: 'demo-pass-1' } })
    if (r.status !== 200) throw new Error(`sign-in ${login}: ${r.status} ${r.text}`)
  }
  const old = await Bun.password.hash('demo-pass-1', {
    algorithm: 'argon2id',
    memoryCost: 65536,
    timeCost: 2,
  })
  const stored = async (login: number) =>
    String(
      (await db.execute({ sql: 'select password_hash from accounts where login = ?', args: [login] })).rows[0]
        .password_hash,
    )
  const rows: string[] = []
  const isolate = pid.reduce((a, b) => (memKb(b, 'VmRSS') > memKb(a, 'VmRSS') ? b : a))
  for (let i = 0; i < 5; i++) await call(worker.url, 'GET', '/health')
  for (const label of ['hash of today', 'old hash'] as const) {
    const login = label === 'old hash' ? 100002 : 100001
    const reset = async () => {
      if (label === 'old hash')
        await db.execute({ sql: 'update accounts set password_hash = ? where login = 100002', args: [old] })
    }
    await reset()
    const params = /m=\d+,t=\d+/.exec(await stored(login))?.[0]
    // peak memory of the Worker's workerd with 4 sign-ins at once (the peak counter is reset first); the
    // first row is the isolate's first sign-in ever, so its WebAssembly memory is part of the growth
    writeFileSync(`/proc/${isolate}/clear_refs`, '5')
    const base = memKb(isolate, 'VmRSS')
    const at = await Promise.all(
      [0, 1, 2, 3].map(() =>
        signIn(worker.url, login).then(
          () => 0,
          () => 1,
        ),
      ),
    )
    const peak = memKb(isolate, 'VmHWM')
    // an old hash is replaced at its first sign-in: it is put back before each, so each verifies it
    let edgeCpu = 0
    for (let i = 0; i < N; i++) {
      await reset()
      const before = cpuMs(pid)
      await signIn(worker.url, login)
      edgeCpu += cpuMs(pid) - before
    }
    let bunMs = 0
    for (let i = 0; i < N; i++) {
      await reset()
      const t0 = performance.now()
      await signIn(engine.url, login)
      bunMs += performance.now() - t0
    }
    rows.push(
      `| ${label} (stored ${params}) | ${(edgeCpu / N).toFixed(1)} ms | ${(bunMs / N).toFixed(1)} ms | ${(base / 1024).toFixed(0)} MB | ${(peak / 1024).toFixed(0)} MB | ${((peak - base) / 1024).toFixed(0)} MB | ${at.filter(Boolean).length} |`,
    )
  }
  console.log(`\nSign-in, ${N} sequential each (workerd CPU from /proc; Bun: wall time of a sign-in)`)
  console.log(
    '| Stored hash | workerd CPU / sign-in | Bun sign-in | Worker process RSS before | peak, 4 at once | growth | failed of 4 |',
  )
  console.log('|---|---|---|---|---|---|---|')
  for (const r of rows) console.log(r)
} finally {
  db.close()
  await worker.stop()
  await engine.stop()
  bridge.stop()
  await Promise.all([sqld.stop(), redis.stop()])
  home.remove()
}
