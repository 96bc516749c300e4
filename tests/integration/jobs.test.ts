import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RedisClient } from 'bun'
import { MemoryStore } from '../../src/kernel/cache/memory'
import { ManualClock } from '../../src/kernel/clock'
import { openDatabase } from '../../src/kernel/db/client'
import { migrateDatabase } from '../../src/kernel/db/migrate'
import { FetchMeter } from '../../src/kernel/jobs/budget'
import type { Job } from '../../src/kernel/jobs/job'
import { StoreLeases } from '../../src/kernel/jobs/leases'
import { JobRunner, leaseMs, scheduledHere } from '../../src/kernel/jobs/runner'
import { silentLogger } from '../../src/kernel/logger'
import { defineModule } from '../../src/kernel/module'
import { makeTestApp, type TestApp } from '../support/app'
import { type RedisServer, startRedis } from '../support/redis'

let redis: RedisServer
let r: RedisClient
const dirs: string[] = []
beforeAll(async () => {
  redis = await startRedis()
  r = new RedisClient(redis.url)
})
afterAll(async () => {
  r.close()
  await redis.stop()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

const EVERY = 250
const LEASE = leaseMs({ name: 'test.tick', every: EVERY, scope: 'cluster', run: async () => {} })

function runnerProcess(owner: string, env: Record<string, string>) {
  const proc = Bun.spawn(['bun', 'tests/support/job-process.ts'], {
    env: { ...process.env, OWNER: owner, REDIS_URL: redis.url, EVERY: String(EVERY), ...env },
    stdout: 'pipe',
    stderr: 'inherit',
  })
  return proc
}
async function ready(proc: ReturnType<typeof runnerProcess>) {
  const reader = proc.stdout.getReader()
  let out = ''
  while (!out.includes('READY')) {
    const { done, value } = await reader.read()
    if (done) throw new Error(`runner exited: ${out}`)
    out += new TextDecoder().decode(value)
  }
  reader.releaseLock()
}
async function runs() {
  const list = (await r.send('LRANGE', ['runs', '0', '-1'])) as string[]
  return list.map((x) => {
    const [owner, at] = x.split(' ')
    return { owner, at: Number(at) }
  })
}

for (const leases of ['redis', 'db'] as const)
  describe(`cluster jobs across processes, leases in ${leases}`, () => {
    test('two runners: one runs each period; the holder dies and the other takes over within the lease', async () => {
      await r.send('FLUSHDB', [])
      const env: Record<string, string> = { LEASES: leases }
      if (leases === 'db') {
        const dir = mkdtempSync(join(tmpdir(), 'tcs-jobs-'))
        dirs.push(dir)
        env.DB_URL = `file:${join(dir, 'jobs.db')}`
        const database = await openDatabase(env.DB_URL)
        await migrateDatabase(database.db)
        database.close()
      }
      const a = runnerProcess('runner-a', env)
      const b = runnerProcess('runner-b', env)
      try {
        await Promise.all([ready(a), ready(b)])
        const started = Date.now()
        await Bun.sleep(3000)
        const before = await runs()
        const span = (before.at(-1)?.at ?? 0) - (before[0]?.at ?? 0)
        // one execution per period: a single holder, never two runs closer than most of a period
        expect(new Set(before.map((x) => x.owner)).size).toBe(1)
        expect(before.length).toBeGreaterThanOrEqual(Math.floor(span / EVERY) - 1)
        expect(before.length).toBeLessThanOrEqual(Math.floor((Date.now() - started) / EVERY) + 2)
        for (let i = 1; i < before.length; i++)
          expect(before[i].at - before[i - 1].at).toBeGreaterThan(EVERY * 0.6)

        const holder = before[0].owner === 'runner-a' ? a : b
        const survivor = holder === a ? 'runner-b' : 'runner-a'
        holder.kill('SIGKILL')
        await holder.exited
        const killedAt = Date.now()
        const lastRun = before.at(-1)!.at
        await Bun.sleep(LEASE + 1500)
        const after = (await runs()).filter((x) => x.at > lastRun)
        const firstBySurvivor = after.find((x) => x.owner === survivor)
        expect(firstBySurvivor).toBeDefined()
        // the dead holder's lease ran at most LEASE from its last renewal; the survivor asked again then
        expect(firstBySurvivor!.at - killedAt).toBeLessThanOrEqual(LEASE + 250)
        expect(after.every((x) => x.owner === survivor || x.at <= killedAt)).toBe(true)
        const survivorRuns = after.filter((x) => x.owner === survivor)
        for (let i = 1; i < survivorRuns.length; i++)
          expect(survivorRuns[i].at - survivorRuns[i - 1].at).toBeGreaterThan(EVERY * 0.6)
      } finally {
        a.kill('SIGKILL')
        b.kill('SIGKILL')
        await Promise.all([a.exited, b.exited])
      }
    }, 30_000)
  })

/** Leases in memory whose every hold answers `ms` late (a slow sqld or Redis). */
function slowLeases(ms: number) {
  const leases = new StoreLeases(new MemoryStore())
  return {
    hold: async (name: string, owner: string, ttl: number) => {
      await Bun.sleep(ms)
      return leases.hold(name, owner, ttl)
    },
    release: (name: string, owner: string) => leases.release(name, owner),
    holder: (name: string) => leases.holder(name),
  }
}

describe('a job never overlaps itself in one process', () => {
  test('ticks that wait for a slow lease answer do not run beside each other', async () => {
    // a lease store slower than the period: every tick waits on it while the next one starts (as a
    // takeover's new schedule meets the old period's tick still asking)
    const leases = slowLeases(30)
    let inFlight = 0
    let most = 0
    let runs = 0
    const job = {
      name: 'test.slow-lease',
      every: 10,
      scope: 'cluster' as const,
      run: async () => {
        most = Math.max(most, ++inFlight)
        runs++
        await Bun.sleep(25)
        inFlight--
      },
    }
    const runner = new JobRunner([job], leases, 'one', new ManualClock(0), silentLogger)
    runner.start()
    await Bun.sleep(300)
    await runner.stop()
    expect(runs).toBeGreaterThan(2)
    expect(most).toBe(1)
  })

  // a hostile probe: two POST /cron/{job} at once on one instance, with sqld slow to answer the lease,
  // both answered ran: true and their runs overlapped
  test('two calls of the cron route at once on one instance: one runs, the other is busy', async () => {
    const leases = slowLeases(50)
    let runs = 0
    const job = {
      name: 'test.cron-twice',
      every: 60_000,
      scope: 'cluster' as const,
      run: async () => {
        runs++
        await Bun.sleep(50)
      },
    }
    const runner = new JobRunner([job], leases, 'one', new ManualClock(0), silentLogger)
    const answers = await Promise.all([runner.runOnce('test.cron-twice'), runner.runOnce('test.cron-twice')])
    expect(answers.filter((a) => a.ran)).toHaveLength(1)
    expect(answers.filter((a) => !a.ran)).toEqual([{ ran: false, reason: 'busy' }])
    expect(runs).toBe(1)
  })
})

describe('a cluster job never runs on two instances at once', () => {
  test('a run longer than its lease keeps it: the other instance waits', async () => {
    // a hostile client's probe: a postback pass outlived its 6 s lease, and the other instances ran the
    // same job beside it (the same postbacks sent twice)
    const store = new MemoryStore()
    let inFlight = 0
    let most = 0
    const ran: string[] = []
    const job = (owner: string) => ({
      name: 'test.long-run',
      every: 200,
      scope: 'cluster' as const,
      run: async () => {
        most = Math.max(most, ++inFlight)
        ran.push(owner)
        // past leaseMs (3 s): an unrenewed lease lapses while it runs
        await Bun.sleep(leaseMs({ every: 200 } as never) + 1000)
        inFlight--
      },
    })
    const one = new JobRunner([job('one')], new StoreLeases(store), 'one', new ManualClock(0), silentLogger)
    const two = new JobRunner([job('two')], new StoreLeases(store), 'two', new ManualClock(0), silentLogger)
    one.start()
    await Bun.sleep(50)
    two.start()
    await Bun.sleep(leaseMs({ every: 200 } as never) + 600)
    await Promise.all([one.stop(), two.stop()])
    expect(ran).toEqual(['one'])
    expect(most).toBe(1)
  }, 20_000)
})

describe('runOnce and runDue (the cron route, Workers scheduled())', () => {
  test('CLUSTER_JOBS=external: the process schedules its own jobs only; the cluster job runs when called', async () => {
    const store = new MemoryStore(new ManualClock(0))
    const ran: string[] = []
    const jobs = [
      { name: 'c.each', every: 20, scope: 'cluster' as const, run: async () => ran.push('c') },
      { name: 'i.each', every: 20, scope: 'instance' as const, run: async () => ran.push('i') },
    ]
    const runner = new JobRunner(jobs, new StoreLeases(store), 'one', new ManualClock(0), silentLogger)
    runner.start(scheduledHere('external'))
    await Bun.sleep(100)
    expect(ran).toContain('i')
    expect(ran).not.toContain('c')
    expect(await runner.runOnce('c.each')).toMatchObject({ ran: true })
    await runner.stop()
    expect(ran.filter((x) => x === 'c')).toHaveLength(1)
    expect(scheduledHere('internal')).toBeUndefined()
  })

  test('runDue runs a cluster job once per period across callers, an instance job on every call', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 5))
    const store = new MemoryStore(clock)
    const ran: string[] = []
    const jobs = [
      { name: 'c.hourly', every: 3_600_000, scope: 'cluster' as const, run: async () => ran.push('c') },
      { name: 'i.fast', every: 1000, scope: 'instance' as const, run: async () => ran.push('i') },
    ]
    const one = new JobRunner(jobs, new StoreLeases(store), 'isolate-1', clock, silentLogger)
    const two = new JobRunner(jobs, new StoreLeases(store), 'isolate-2', clock, silentLogger)
    expect((await one.runDue())['c.hourly']).toMatchObject({ ran: true })
    expect((await one.runDue())['c.hourly']).toEqual({ ran: false, reason: 'busy' })
    expect((await two.runDue())['c.hourly']).toEqual({ ran: false, reason: 'busy' })
    clock.advance(3_600_000 - 5000) // a call a moment early still finds it due
    expect((await two.runDue())['c.hourly']).toMatchObject({ ran: true })
    expect(ran).toEqual(['c', 'i', 'i', 'i', 'c', 'i'])
  })

  test("CLUSTER_JOBS=external at the edge: the Worker's scheduled() (runDue) runs the instance jobs only", async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 5))
    const ran: string[] = []
    const jobs = [
      { name: 'c.hourly', every: 3_600_000, scope: 'cluster' as const, run: async () => ran.push('c') },
      { name: 'i.fast', every: 1000, scope: 'instance' as const, run: async () => ran.push('i') },
    ]
    const edge = new JobRunner(jobs, new StoreLeases(new MemoryStore(clock)), 'isolate', clock, silentLogger)
    expect(await edge.runDue(scheduledHere('external'))).toEqual({
      'i.fast': { ran: true, ms: expect.any(Number) },
    })
    expect(ran).toEqual(['i'])
    expect((await edge.runDue(scheduledHere('internal')))['c.hourly']).toMatchObject({ ran: true })
  })

  test('a scheduled() call starts no job past its budget of subrequests: the rest run on a later call, which starts with them', async () => {
    // an edge probe: the jobs due in one invocation share its 1,000 subrequests; one cut off inside a
    // transaction left sqld's write lock held for 5 s; and in a fixed order the last job (the equity
    // stops) never had a turn while those before it spent the budget
    const clock = new ManualClock(Date.UTC(2026, 0, 5))
    const meter = new FetchMeter()
    const call = meter.wrap((async () => new Response('ok')) as unknown as typeof fetch)
    const ran: string[] = []
    const spending = (name: string, calls: number, scope: 'cluster' | 'instance') => ({
      name,
      every: scope === 'cluster' ? 3_600_000 : 1000,
      scope,
      run: async () => {
        ran.push(name)
        for (let i = 0; i < calls; i++) await call('http://db.invalid/')
      },
    })
    const jobs = [
      spending('a.relay', 800, 'instance'),
      spending('b.hourly', 10, 'cluster'),
      spending('c.stops', 10, 'instance'),
    ]
    const edge = new JobRunner(jobs, new StoreLeases(new MemoryStore(clock)), 'isolate', clock, silentLogger)
    const due = () => meter.run(700, (budget) => edge.runDue(undefined, budget))
    expect(await due()).toEqual({
      'a.relay': { ran: true, ms: expect.any(Number) },
      'b.hourly': { ran: false, reason: 'budget' },
      'c.stops': { ran: false, reason: 'budget' },
    })
    // the next call starts with the first job left out: each gets its turn (the hourly one's lease was
    // never taken), the relay after them
    expect(await due()).toEqual({
      'b.hourly': { ran: true, ms: expect.any(Number) },
      'c.stops': { ran: true, ms: expect.any(Number) },
      'a.relay': { ran: true, ms: expect.any(Number) },
    })
    expect(ran).toEqual(['a.relay', 'b.hourly', 'c.stops', 'a.relay'])
    // fetches outside a run (the requests the isolate serves meanwhile) spend none of a call's budget
    for (let i = 0; i < 2000; i++) await call('http://db.invalid/')
    expect(await meter.run(700, async (budget) => budget.spent())).toBe(0)
  })
})

describe('a run cut off with its invocation (a Worker over its limits) never settles', () => {
  const cutOff = (ran: string[]) => [
    {
      name: 'i.cut',
      every: 60_000,
      scope: 'instance' as const,
      run: () => {
        ran.push('i')
        // the first run is cut off: workerd never goes on with it
        return ran.length === 1 ? new Promise<void>(() => {}) : Promise.resolve()
      },
    },
  ]

  /** The runner of a Worker isolate (edge), its leases in a store on the test's clock. */
  const isolateRunner = (jobs: Job[], clock: ManualClock) =>
    new JobRunner(
      jobs,
      new StoreLeases(new MemoryStore(clock)),
      'isolate',
      clock,
      silentLogger,
      undefined,
      true,
    )

  test('in a Worker isolate the job runs again once its lease would have lapsed', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 5))
    const ran: string[] = []
    const jobs = cutOff(ran)
    const edge = isolateRunner(jobs, clock)
    void edge.runDue()
    await Bun.sleep(0)
    expect((await edge.runDue())['i.cut']).toEqual({ ran: false, reason: 'busy' })
    clock.advance(leaseMs(jobs[0]) + 1)
    expect((await edge.runDue())['i.cut']).toMatchObject({ ran: true })
    expect(await edge.runOnce('i.cut')).toMatchObject({ ran: true })
    expect(ran).toEqual(['i', 'i', 'i'])
  })

  test('in a Worker isolate a cluster run that lives on past its lease keeps the next call out', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 5))
    const ran: string[] = []
    let finish = () => {}
    const job = {
      name: 'c.slow',
      every: 1000,
      scope: 'cluster' as const,
      run: () => {
        ran.push('c')
        return new Promise<void>((r) => {
          finish = r
        })
      },
    }
    const edge = isolateRunner([job], clock)
    const first = edge.runOnce('c.slow')
    await Bun.sleep(0)
    // past its lease by the clock; the run renews it (every third of the lease) as it goes on
    clock.advance(leaseMs(job) + 1)
    await Bun.sleep(1_200)
    expect(await edge.runOnce('c.slow')).toEqual({ ran: false, reason: 'busy' })
    expect(ran).toEqual(['c'])
    finish()
    expect(await first).toMatchObject({ ran: true })
  })

  test('in a server process a run that lasts is never overlapped by the same job', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 5))
    const ran: string[] = []
    const jobs = cutOff(ran)
    const server = new JobRunner(jobs, new StoreLeases(new MemoryStore(clock)), 'server', clock, silentLogger)
    void server.runOnce('i.cut')
    await Bun.sleep(0)
    clock.advance(leaseMs(jobs[0]) * 10)
    expect(await server.runOnce('i.cut')).toEqual({ ran: false, reason: 'busy' })
    expect(ran).toEqual(['i'])
  })
})

describe('a run outside the runner keeps its lease while it lasts', () => {
  const long = (owner: string, ran: string[], ms: number) => ({
    name: 'test.long-call',
    every: 200,
    scope: 'cluster' as const,
    run: async () => {
      ran.push(owner)
      await Bun.sleep(ms)
    },
  })
  const LONG = leaseMs({ every: 200 } as never)

  test('the cron route (runOnce): a call to another instance meanwhile finds the job busy', async () => {
    const store = new MemoryStore()
    const ran: string[] = []
    const one = new JobRunner(
      [long('one', ran, LONG + 1500)],
      new StoreLeases(store),
      'one',
      new ManualClock(0),
      silentLogger,
    )
    const two = new JobRunner(
      [long('two', ran, 0)],
      new StoreLeases(store),
      'two',
      new ManualClock(0),
      silentLogger,
    )
    const first = one.runOnce('test.long-call')
    // past the lease the run took
    await Bun.sleep(LONG + 500)
    expect(await two.runOnce('test.long-call')).toEqual({ ran: false, reason: 'busy' })
    expect(await first).toMatchObject({ ran: true })
    expect(ran).toEqual(['one'])
  }, 20_000)

  test('Workers scheduled() (runDue): a call of another isolate meanwhile finds the job busy', async () => {
    const store = new MemoryStore()
    const ran: string[] = []
    const one = new JobRunner(
      [long('one', ran, 1500)],
      new StoreLeases(store),
      'one',
      new ManualClock(0),
      silentLogger,
    )
    const two = new JobRunner(
      [long('two', ran, 0)],
      new StoreLeases(store),
      'two',
      new ManualClock(0),
      silentLogger,
    )
    const first = one.runDue()
    // past the period less its margin (180 ms) that marks the job as run
    await Bun.sleep(600)
    expect((await two.runDue())['test.long-call']).toEqual({ ran: false, reason: 'busy' })
    expect((await first)['test.long-call']).toMatchObject({ ran: true })
    expect(ran).toEqual(['one'])
  }, 20_000)
})

test('runDue: renewing a run does not move the end of the period it marks', async () => {
  // a reviewer's finding: each renewal set the lease to a whole period from then, so a run past a third
  // of its period pushed the next call's run a period later
  const store = new MemoryStore()
  const ran: string[] = []
  const job = (owner: string, ms: number) => ({
    name: 'test.period',
    every: 600,
    scope: 'cluster' as const,
    run: async () => {
      ran.push(owner)
      await Bun.sleep(ms)
    },
  })
  const one = new JobRunner(
    [job('one', 300)],
    new StoreLeases(store),
    'one',
    new ManualClock(0),
    silentLogger,
  )
  const two = new JobRunner([job('two', 0)], new StoreLeases(store), 'two', new ManualClock(0), silentLogger)
  const started = Date.now()
  expect((await one.runDue())['test.period']).toMatchObject({ ran: true })
  // the period less its margin (540 ms) after the first call began: due again
  await Bun.sleep(Math.max(0, started + 600 - Date.now()))
  expect((await two.runDue())['test.period']).toMatchObject({ ran: true })
  expect(ran).toEqual(['one', 'two'])
})

describe('POST /cron/{job}', () => {
  let t: TestApp
  const SECRET = 'cron-secret-for-tests-0123456789abcdef'
  const calls: number[] = []
  beforeAll(async () => {
    t = await makeTestApp({
      env: { CRON_SECRET: SECRET },
      modules: [
        defineModule({
          name: 'probe',
          tables: {},
          setup: () => ({
            jobs: [
              {
                name: 'probe.count',
                every: 60_000,
                scope: 'cluster',
                run: async () => {
                  calls.push(Date.now())
                },
              },
            ],
          }),
        }),
      ],
    })
  })
  afterAll(() => t.close())
  const cron = (job: string, secret?: string) =>
    t.request('POST', `/cron/${job}`, { headers: secret === undefined ? {} : { 'x-cron-secret': secret } })

  test('refuses a missing or wrong secret and runs nothing', async () => {
    for (const secret of [undefined, '', 'wrong', `${SECRET}x`, SECRET.slice(0, -1)]) {
      const res = await cron('probe.count', secret)
      expect([res.status, res.json.error]).toEqual([401, 'UNAUTHORIZED'])
    }
    expect(calls).toHaveLength(0)
  })

  test('runs the job with the secret; unknown jobs 404; a job another instance holds 409', async () => {
    const ok = await cron('probe.count', SECRET)
    expect(ok.status).toBe(200)
    expect(ok.json).toMatchObject({ job: 'probe.count', ran: true })
    expect(calls).toHaveLength(1)
    const unknown = await cron('nope.nothing', SECRET)
    expect([unknown.status, unknown.json.error]).toEqual([404, 'JOB_NOT_FOUND'])
    const invalid = await cron('Bad Name!', SECRET)
    expect([invalid.status, invalid.json.error]).toEqual([400, 'INVALID_DATA'])
    // a runner elsewhere holds the lease (leases in the database: no Redis in this app)
    await t.ctx.db.execute({
      sql: 'insert into job_leases (name, owner, until) values (?, ?, ?)',
      args: ['probe.count', 'other-instance', Date.now() + 60_000],
    })
    const busy = await cron('probe.count', SECRET)
    expect([busy.status, busy.json.error]).toEqual([409, 'JOB_BUSY'])
    expect(calls).toHaveLength(1)
  })

  test('without CRON_SECRET configured the route refuses everyone', async () => {
    const bare = await makeTestApp({ seed: false })
    try {
      const res = await bare.request('POST', '/cron/events.relay', {
        headers: { 'x-cron-secret': 'anything' },
      })
      expect(res.status).toBe(401)
      expect(res.json.message).toContain('CRON_SECRET')
    } finally {
      await bare.close()
    }
  })
})
