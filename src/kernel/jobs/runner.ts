import type { Clock } from '../clock'
import type { Logger } from '../logger'
import { errText } from '../resilience'
import type { CallBudget } from './budget'
import { type Job, leaseOf } from './job'
import type { Leases } from './leases'

/** How long a cluster job's lease lasts: three periods (at least 3 s), renewed every period it runs. */
export const leaseMs = (job: Job) => Math.max(job.every * 3, 3000)

type RunOutcome = { ran: true; ms: number } | { ran: false; reason: 'busy' | 'unknown' | 'budget' }

/**
 * The jobs a process schedules itself (CLUSTER_JOBS): every one, or all but the cluster's when a scheduler
 * outside runs those through POST /cron/{job}.
 */
export function scheduledHere(clusterJobs: 'internal' | 'external') {
  return clusterJobs === 'external' ? (job: Job) => job.scope !== 'cluster' : undefined
}

/**
 * Starts every job on its period. A cluster job runs where its lease is held: the holder renews it each
 * period and runs; the others ask each period and, told how long the lease has left, ask again the
 * moment it lapses, so a job moves within `leaseMs` of its holder's death. A job never overlaps itself
 * in a server process; a slow run delays its next period, and its holder renews the lease meanwhile. In a
 * Worker isolate a run older than its lease counts as cut off (`marked`): a cluster job's lease still
 * keeps a run that lives on apart from the next, an instance job may then run beside it.
 */
export class JobRunner {
  private readonly timers = new Map<string, ReturnType<typeof setInterval>>()
  private readonly retries = new Map<string, ReturnType<typeof setTimeout>>()
  private stopped = false
  /** Runs of this process, by job, since when (clock ms). */
  private readonly running = new Map<string, { run: Promise<unknown>; since: number }>()
  /** Jobs whose tick is asking for the lease (since when): a tick that started meanwhile does not ask too. */
  private readonly asking = new Map<string, { since: number }>()
  private readonly held = new Set<string>()
  /** Where the next `runDue` starts: the first job the last one left for want of budget. */
  private dueFrom = 0
  readonly counts = new Map<string, number>()

  constructor(
    private readonly jobs: readonly Job[],
    private readonly leases: Leases,
    private readonly owner: string,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** Whether this instance holds the engine role now (engine jobs run only there). */
    private readonly isEngine: () => boolean = () => true,
    /** A Worker isolate: a run is cut off with its invocation and may never settle (`marked`). */
    private readonly edge = false,
  ) {}

  /**
   * Whether this process runs the job, or asks for its lease, now. In a Worker a `scheduled()` or cron
   * request cut off by its limits never settles its run, and its mark kept the job busy in that isolate
   * for the isolate's life; there a mark older than the job's lease is taken for dead, as another isolate
   * takes the lease that was not renewed (a cluster job's lease still guards a run that lives on).
   */
  private marked(job: Job) {
    const since = this.running.get(job.name)?.since ?? this.asking.get(job.name)?.since
    if (since === undefined) return false
    if (!this.edge || this.clock.now() - since <= leaseMs(job)) return true
    this.running.delete(job.name)
    this.asking.delete(job.name)
    return false
  }

  get names() {
    return this.jobs.map((j) => j.name)
  }

  start(only?: (job: Job) => boolean) {
    this.stopped = false
    for (const job of this.jobs) {
      if (only && !only(job)) continue
      this.schedule(job)
    }
  }

  /** Ticks now and every period from now (a takeover restarts the period at the moment it took over). */
  private schedule(job: Job) {
    clearInterval(this.timers.get(job.name))
    this.timers.set(
      job.name,
      setInterval(() => void this.tick(job), job.every),
    )
    void this.tick(job)
  }

  async stop() {
    this.stopped = true
    for (const t of this.timers.values()) clearInterval(t)
    this.timers.clear()
    for (const t of this.retries.values()) clearTimeout(t)
    this.retries.clear()
    await Promise.allSettled([...this.running.values()].map((r) => r.run))
    for (const name of this.held) await this.leases.release(name, this.owner).catch(() => {})
    this.held.clear()
  }

  /** Marks a job as asking for its lease; the returned function ends this mark (not a later one's). */
  private ask(name: string) {
    const mark = { since: this.clock.now() }
    this.asking.set(name, mark)
    return () => {
      if (this.asking.get(name) === mark) this.asking.delete(name)
    }
  }

  /** An engine job on an instance that does not hold the engine role. */
  private offEngine(job: Job) {
    return job.scope === 'engine' && !this.isEngine()
  }

  private async tick(job: Job) {
    if (this.marked(job) || this.offEngine(job)) return
    if (job.scope === 'cluster') {
      // two ticks awaiting the lease at once (the period's and a takeover's new schedule) both got it and
      // both ran, a millisecond apart (seen in tests/integration/jobs.test.ts under load)
      const asking = this.ask(job.name)
      const lease = await this.leases
        .hold(leaseOf(job), this.owner, leaseMs(job))
        .catch((e) => {
          this.logger.log('warn', 'job lease unavailable', { job: job.name, err: errText(e) })
          return null
        })
        .finally(asking)
      if (!lease?.held) {
        this.held.delete(leaseOf(job))
        if (lease && lease.freeInMs < job.every) this.retryAt(job, lease.freeInMs)
        return
      }
      this.held.add(leaseOf(job))
    }
    await this.execute(job, job.scope === 'cluster' ? { owner: this.owner, ms: leaseMs(job) } : undefined)
  }

  /**
   * Keeps the lease of a cluster job while its run lasts, however the run was started (this runner's
   * period, the cron route, Workers `scheduled()`): unrenewed, it lapsed under a long run (a postback
   * pass with a slow endpoint) and another instance ran the same job beside it. A third of the lease
   * between renewals: with leases in the database (the embedded default) a hold is a write. A renewal
   * keeps the lease's end where it was taken (it marks the period for `runDue`) unless the run comes near
   * it: then two renewals' time ahead. Stopping waits for a renewal on its way, so a lease given back
   * after the run is not taken again by it.
   */
  private keepLease(job: Job, lease: { owner: string; ms: number }) {
    const ends = Date.now() + lease.ms
    const every = lease.ms / 3
    let asking: Promise<void> | null = null
    let stopped = false
    const renew = async () => {
      try {
        const ms = Math.max(ends - Date.now(), 2 * every)
        if (!(await this.leases.hold(leaseOf(job), lease.owner, ms)).held) {
          if (lease.owner === this.owner) this.held.delete(leaseOf(job))
          this.logger.log('warn', 'job lease lost during a run', { job: job.name })
        }
      } catch (e) {
        this.logger.log('warn', 'job lease unavailable', { job: job.name, err: errText(e) })
      }
    }
    const timer = setInterval(() => {
      if (stopped || asking) return
      asking = renew().finally(() => {
        asking = null
      })
    }, every)
    return async () => {
      stopped = true
      clearInterval(timer)
      await asking
    }
  }

  /** One extra attempt when the holder's lease lapses before our next period. */
  private retryAt(job: Job, inMs: number) {
    if (this.stopped || this.retries.has(job.name)) return
    const timer = setTimeout(() => {
      this.retries.delete(job.name)
      if (!this.stopped) this.schedule(job)
    }, inMs + 1)
    this.retries.set(job.name, timer)
  }

  private async execute(job: Job, lease?: { owner: string; ms: number }) {
    const stopRenewing = lease && this.keepLease(job, lease)
    const run = job
      .run({ now: this.clock.now() })
      .then(() => {
        this.counts.set(job.name, (this.counts.get(job.name) ?? 0) + 1)
      })
      .catch((e) => this.logger.log('error', 'job failed', { job: job.name, err: errText(e) }))
      .finally(async () => {
        await stopRenewing?.()
        // a later run may hold the mark (at the edge, after this one was taken for dead)
        if (this.running.get(job.name) === mark) this.running.delete(job.name)
      })
    const mark = { run, since: this.clock.now() }
    this.running.set(job.name, mark)
    await run
  }

  /**
   * Runs one job now (the cron route, Workers `scheduled()`): a cluster job only when its lease can be
   * taken, so it never runs beside the runner of another instance. A lease taken only for this run is
   * given back after it: the external scheduler sets the pace, and its next call may land elsewhere.
   */
  async runOnce(name: string): Promise<RunOutcome> {
    const job = this.jobs.find((j) => j.name === name)
    if (!job) return { ran: false, reason: 'unknown' }
    if (this.marked(job) || this.offEngine(job)) return { ran: false, reason: 'busy' }
    const borrowed = job.scope === 'cluster' && !this.held.has(leaseOf(job))
    // at the edge each call holds the lease under a name of its own: a run taken for dead there (marked)
    // that still lives renews its lease, which then refuses the next call as it refuses another instance
    const owner = this.edge ? `${this.owner}/${crypto.randomUUID()}` : this.owner
    if (job.scope === 'cluster') {
      // two calls at once on one instance hold the lease under one owner: both were granted it and ran
      // side by side (a hostile probe, with sqld slow); the second now finds the first asking
      const asking = this.ask(name)
      try {
        if (!(await this.leases.hold(leaseOf(job), owner, leaseMs(job))).held)
          return { ran: false, reason: 'busy' }
      } finally {
        asking()
      }
    }
    const started = performance.now()
    try {
      await this.execute(job, job.scope === 'cluster' ? { owner, ms: leaseMs(job) } : undefined)
    } finally {
      if (borrowed && !this.held.has(leaseOf(job)))
        await this.leases.release(leaseOf(job), owner).catch(() => {})
    }
    return { ran: true, ms: Math.round(performance.now() - started) }
  }

  /**
   * Every job once, for a scheduler that calls at a fixed pace (Workers `scheduled()`, every minute): an
   * instance job runs each call; a cluster job runs when no caller ran it within its period, marked by its
   * lease, kept (not released) for the period less a margin so a call a moment early still finds it due.
   * Each call holds it under a name of its own, so no call renews what an earlier one took. `only`: the
   * jobs scheduled here (scheduledHere), as the server's timers take them. `budget`: what the call may
   * spend (a Worker invocation's subrequests): a job not started within it answers `budget` and runs on a
   * later call (its lease not taken).
   */
  async runDue(only?: (job: Job) => boolean, budget?: CallBudget): Promise<Record<string, RunOutcome>> {
    const out: Record<string, RunOutcome> = {}
    // a call starts where the last one ran out of budget: a fixed order would leave the jobs at its end
    // (the equity stops) without a turn whenever those before them spend the budget
    const from = this.dueFrom % Math.max(1, this.jobs.length)
    let stopped: number | undefined
    for (let n = 0; n < this.jobs.length; n++) {
      const at = (from + n) % this.jobs.length
      const job = this.jobs[at]!
      // not scheduled here (CLUSTER_JOBS=external: an external scheduler calls POST /cron/{job})
      if (only && !only(job)) continue
      if (budget && budget.spent() >= budget.startBelow) {
        out[job.name] = { ran: false, reason: 'budget' }
        stopped ??= at
        continue
      }
      if (this.marked(job) || this.offEngine(job)) {
        out[job.name] = { ran: false, reason: 'busy' }
        continue
      }
      let lease: { owner: string; ms: number } | undefined
      if (job.scope === 'cluster') {
        lease = {
          owner: `${this.owner}/${crypto.randomUUID()}`,
          ms: job.every - Math.min(job.every / 10, 5000),
        }
        if (!(await this.leases.hold(leaseOf(job), lease.owner, lease.ms)).held) {
          out[job.name] = { ran: false, reason: 'busy' }
          continue
        }
      }
      const started = performance.now()
      await this.execute(job, lease)
      out[job.name] = { ran: true, ms: Math.round(performance.now() - started) }
    }
    this.dueFrom = stopped ?? 0
    return out
  }
}
