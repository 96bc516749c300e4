import type { Clock } from '../clock'
import type { Db } from '../db/client'
import type { Logger } from '../logger'
import type { Events } from './events'
import type { Consumer, DeliveredEvent } from './topic'

export interface RelayOptions {
  /** This relay's name in `outbox.lease_owner` (the instance). */
  owner: string
  /** Events claimed per pass. */
  batch?: number
  /** How long a claim holds (ms): a relay that dies mid-pass leaves its events to another after it. */
  leaseMs?: number
  /** Attempts before a consumer's event is parked in the dead-letter table. */
  maxAttempts?: number
  /** Delay before attempt `n + 1` (ms). */
  backoffMs?: (attempts: number) => number
}

interface Claimed {
  id: number
  brand_id: number
  topic: string
  payload: string
  created_at: number
  attempts: number
}

interface Failure {
  consumer: Consumer<unknown>
  error: string
  /** Retrying cannot help (the payload does not parse or match its topic). */
  permanent: boolean
}

/** One event owed to one consumer in a pass. */
interface Delivery {
  row: Claimed
  consumer: Consumer<unknown>
  event: DeliveredEvent<unknown>
}

const defaultBackoff = (attempts: number) => Math.min(1000 * 2 ** (attempts - 1), 300_000)

const errorText = (e: unknown) => (e instanceof Error ? `${e.name}: ${e.message}` : String(e))

/** The longest a pass delivers without letting requests and timers in. */
const SLICE_MS = 5
/**
 * Deliveries one transaction takes at most (a run of one consumer's deliveries handled together,
 * Consumer.handleMany, counts once, up to RUN_MAX), and how long it takes further ones (the write lock's
 * budget).
 */
const TX_DELIVERIES = 20
const RUN_MAX = 200
const TX_BUDGET_MS = 8

/** The deliveries of the next transaction, from `at`. */
function nextChunk(todo: Delivery[], at: number): Delivery[] {
  const chunk: Delivery[] = []
  let units = 0
  let run = 0
  while (at + chunk.length < todo.length) {
    const d = todo[at + chunk.length]!
    const joins = chunk.at(-1)?.consumer === d.consumer && !!d.consumer.handleMany && run < RUN_MAX
    if (!joins) {
      if (units >= TX_DELIVERIES) break
      units++
      run = 0
    }
    run++
    chunk.push(d)
  }
  return chunk
}

/** Consecutive deliveries to one consumer that handles many at once; each other delivery alone. */
function runsOf(chunk: Delivery[]): Delivery[][] {
  const runs: Delivery[][] = []
  for (const d of chunk) {
    const last = runs.at(-1)
    if (last && last[0]!.consumer === d.consumer && d.consumer.handleMany && last.length < RUN_MAX)
      last.push(d)
    else runs.push([d])
  }
  return runs
}

/**
 * Delivers outbox events to their consumers, exactly once per (consumer, event):
 * - a pass claims undelivered, due events with a lease (`UPDATE ... RETURNING`), so two relays (two
 *   instances, or two processes on one database) never work on the same event at once;
 * - each consumer's `handle` runs in a transaction that also inserts its delivery row: the primary key
 *   (event, consumer) makes a second delivery fail and roll back, after a crash or an expired lease;
 * - a consumer that throws is retried with backoff; after `maxAttempts` the event is parked for it in
 *   `dead_letters` (staff see and retry them) and the other consumers are not held up; a payload that
 *   does not match its topic's schema is parked at once;
 * - an event every consumer has had is marked dispatched; the cleanup job deletes it after retention.
 * Passes run when a commit wakes the relay and on a poll, never two at once in one process.
 */
export class Relay {
  private running: Promise<void> | null = null
  private again = false
  private timer: ReturnType<typeof setInterval> | null = null
  readonly stats = { delivered: 0, failed: 0, parked: 0, passes: 0 }

  constructor(
    private readonly db: Db,
    private readonly events: Events,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly opts: RelayOptions,
  ) {}

  private paused = false

  /**
   * Runs `fn` with the relay paused (demo seeding: the consumers of what one module seeds read what a
   * later module seeds), then wakes it.
   */
  async whilePaused<T>(fn: () => Promise<T>): Promise<T> {
    this.paused = true
    await this.running
    try {
      return await fn()
    } finally {
      this.paused = false
      this.wake()
    }
  }

  /** Runs a pass soon (coalesced: one more after the current one at most). */
  wake() {
    if (this.paused) return
    if (this.running) {
      this.again = true
      return
    }
    this.running = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.loop())
      .finally(() => {
        this.running = null
      })
  }

  private async loop() {
    do {
      this.again = false
      try {
        // keep going while full batches come back
        while ((await this.pass()) === (this.opts.batch ?? 200));
      } catch (e) {
        this.logger.log('error', 'event relay pass failed', {
          err: e instanceof Error ? e.message : String(e),
        })
      }
    } while (this.again)
  }

  /** Polls for events of other instances and for retries that came due. */
  start(pollMs: number) {
    this.timer ??= setInterval(() => this.wake(), pollMs)
    this.wake()
  }

  async stop() {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    await this.running
  }

  /** Passes until nothing is due (tests, shutdown, the cron route). */
  async drain() {
    await this.running
    while ((await this.pass()) > 0);
  }

  /** Claims one batch (at most `limit` events) and delivers it; the number of events claimed. */
  async pass(limit = this.opts.batch ?? 200): Promise<number> {
    this.stats.passes++
    const now = this.clock.now()
    const leaseMs = this.opts.leaseMs ?? 30_000
    // a read first: most passes find nothing, and a claim is a write (the writer's turn on a local file)
    const due = await this.db.execute({
      sql: `select 1 from outbox where dispatched_at is null and next_at <= ? and (lease_until is null or lease_until < ?)
            limit 1`,
      args: [now, now],
    })
    if (due.rows.length === 0) return 0
    const claimed = (
      await this.db.execute({
        sql: `update outbox set lease_owner = ?, lease_until = ?
              where id in (select id from outbox
                           where dispatched_at is null and next_at <= ? and (lease_until is null or lease_until < ?)
                           order by id limit ?)
              returning id, brand_id, topic, payload, created_at, attempts`,
        args: [this.opts.owner, now + leaseMs, now, now, limit],
      })
    ).rows as unknown as Claimed[]
    if (claimed.length === 0) return 0
    claimed.sort((a, b) => a.id - b.id)
    const had = await this.deliveries(claimed.map((c) => c.id))
    const failures = new Map<number, Failure[]>()
    const fail = (f: Failure & { row: Claimed }) => {
      const list = failures.get(f.row.id) ?? []
      list.push(f)
      failures.set(f.row.id, list)
    }
    // what each event owes each consumer, asked before any transaction (wants reads, side by side)
    const plan = await this.plan(claimed, had, fail)
    // the consumers' writes, many to a transaction, each under its own savepoint; then their after-steps
    const ids = claimed.map((c) => c.id)
    // a consumer with only an after-step has no delivery row: until its events are marked dispatched, a
    // relay that takes them over runs it (at least once, across a crash), so then they are marked after it
    const afterOnly = plan.some((d) => !d.consumer.handle)
    const { committed: delivered, marked } = await this.deliverAll(
      plan.filter((d) => d.consumer.handle),
      fail,
      // the last delivery transaction of a pass where nothing failed marks the events dispatched too
      { ids, clean: () => failures.size === 0 && !afterOnly },
    )
    let slice = performance.now()
    for (const d of plan) {
      if (d.consumer.handle && !delivered.has(d)) continue
      // on a local file every statement resolves at once: without a turn of the event loop now and then,
      // the after-steps of a pass (the closes of 1,000 copies) held every request and timer for ~0.5 s
      if (performance.now() - slice > SLICE_MS) {
        await new Promise((r) => setImmediate(r))
        slice = performance.now()
      }
      await d.consumer.after?.(d.event).catch((e: unknown) => {
        const err = e instanceof Error ? e.message : String(e)
        this.logger.log('warn', 'event consumer after-commit step failed', {
          consumer: d.consumer.name,
          event_id: d.event.id,
          err,
        })
        // an after-step alone is the consumer's whole delivery (no row records it): its failure is the
        // event's, tried again with backoff and parked past maxAttempts, as a handler's (it runs at least
        // once). One that follows a committed handler stays best effort: its delivery is written.
        if (!d.consumer.handle) fail({ row: d.row, consumer: d.consumer, error: err, permanent: false })
      })
    }
    const done: number[] = []
    for (const row of claimed) {
      const failed = failures.get(row.id) ?? []
      if (failed.length === 0) done.push(row.id)
      else if (row.attempts + 1 >= (this.opts.maxAttempts ?? 8) || failed.every((f) => f.permanent)) {
        await this.park(row, failed)
        done.push(row.id)
      } else await this.retryLater(row)
    }
    if (done.length > 0 && !marked)
      await this.db.execute({
        sql: `update outbox set dispatched_at = ?, lease_owner = null, lease_until = null
              where id in (${done.map(() => '?').join(',')})`,
        args: [this.clock.now(), ...done],
      })
    return claimed.length
  }

  private async deliveries(ids: number[]) {
    const rows = (
      await this.db.execute({
        sql: `select event_id, consumer from event_deliveries where event_id in (${ids.map(() => '?').join(',')})`,
        args: ids,
      })
    ).rows as unknown as { event_id: number; consumer: string }[]
    const had = new Map<number, Set<string>>()
    for (const r of rows) {
      const set = had.get(r.event_id) ?? new Set<string>()
      set.add(r.consumer)
      had.set(r.event_id, set)
    }
    return had
  }

  /**
   * The deliveries a pass owes, in event order: every consumer that accepts the event, has not had it,
   * and wants it. A payload that does not parse or match its topic is a permanent failure (parked at once:
   * no retry changes a payload).
   */
  private async plan(
    claimed: Claimed[],
    had: Map<number, Set<string>>,
    fail: (f: Failure & { row: Claimed }) => void,
  ): Promise<Delivery[]> {
    const owed: (Delivery | null)[] = []
    /** per consumer with `wants`: the places in `owed` of the events it is asked about */
    const asked = new Map<Consumer<unknown>, number[]>()
    for (const row of claimed) {
      let payload: unknown
      try {
        payload = JSON.parse(row.payload)
      } catch (e) {
        for (const consumer of this.events.consumersOf(row.topic))
          if (!had.get(row.id)?.has(consumer.name))
            fail({ row, consumer, error: `payload is not JSON: ${(e as Error).message}`, permanent: true })
        continue
      }
      for (const consumer of this.events.acceptedBy(row.topic, { brandId: row.brand_id, payload })) {
        if (had.get(row.id)?.has(consumer.name)) continue
        const parsed = consumer.topic.schema.safeParse(payload)
        if (!parsed.success) {
          fail({
            row,
            consumer,
            error: `payload does not match ${row.topic}: ${parsed.error.message}`,
            permanent: true,
          })
          continue
        }
        const event: DeliveredEvent<unknown> = {
          id: row.id,
          topic: row.topic,
          brandId: row.brand_id,
          payload: parsed.data,
          createdAt: row.created_at,
        }
        const at = owed.push({ row, consumer, event }) - 1
        if (consumer.wants) {
          const list = asked.get(consumer)
          if (list) list.push(at)
          else asked.set(consumer, [at])
        }
      }
    }
    // an event a consumer has no business with is passed over: no transaction, no delivery row; each
    // consumer is asked once for all its events of the pass (one read, not one per event), side by side.
    // A question that fails for many is asked again event by event, so one bad event fails alone.
    const ask = async (consumer: Consumer<unknown>, places: number[]) => {
      const yes = await consumer.wants!(places.map((at) => owed[at]!.event))
      if (yes.length !== places.length)
        throw new Error(`wants answered ${yes.length} times for ${places.length} events`)
      places.forEach((at, k) => {
        if (!yes[k]) owed[at] = null
      })
    }
    // an event whose question failed is not delivered in this pass: retried later like a failed delivery
    const refuse = (consumer: Consumer<unknown>, at: number, e: unknown) => {
      const { row } = owed[at]!
      owed[at] = null
      this.failed(consumer, row, e)
      fail({ row, consumer, error: errorText(e), permanent: false })
    }
    await Promise.all(
      [...asked].map(([consumer, places]) =>
        ask(consumer, places).catch(async (e: unknown) => {
          if (places.length === 1) return refuse(consumer, places[0]!, e)
          for (const at of places) await ask(consumer, [at]).catch((e1: unknown) => refuse(consumer, at, e1))
        }),
      ),
    )
    return owed.filter((d): d is Delivery => d !== null)
  }

  /**
   * Runs the consumers' `handle`s of a pass in as few transactions as the write lock's budget allows:
   * each transaction first records its deliveries in one statement (a delivery another relay recorded
   * first is left out: it was done), then runs each consumer under a savepoint of its own; one that throws
   * is undone, its delivery row removed, and retried later, the others commit. The set of deliveries
   * that committed.
   */
  private async deliverAll(
    todo: Delivery[],
    fail: (f: Failure & { row: Claimed }) => void,
    finish: { ids: number[]; clean: () => boolean },
  ): Promise<{ committed: Set<Delivery>; marked: boolean }> {
    const committed = new Set<Delivery>()
    let marked = false
    let at = 0
    while (at < todo.length) {
      const chunk = nextChunk(todo, at)
      const ran: Delivery[] = []
      const failed: { d: Delivery; e: unknown }[] = []
      let marking = false
      try {
        await this.db.transaction(async (tx) => {
          ran.length = 0
          failed.length = 0
          marking = false
          const now = this.clock.now()
          const mine = new Set(
            (
              await tx.execute({
                sql: `insert into event_deliveries (event_id, consumer, status, at) values ${chunk
                  .map(() => `(?, ?, 'delivered', ?)`)
                  .join(',')} on conflict do nothing returning event_id, consumer`,
                args: chunk.flatMap((d) => [d.row.id, d.consumer.name, now]),
              })
            ).rows.map((r) => `${r.event_id}\u0000${r.consumer}`),
          )
          const started = performance.now()
          let slice = started
          const owned = (d: Delivery) => mine.has(`${d.row.id}\u0000${d.consumer.name}`)
          const undo = (d: Delivery) =>
            tx.deferred(`delete from event_deliveries where event_id = ? and consumer = ?`, [
              d.row.id,
              d.consumer.name,
            ])
          for (const run of runsOf(chunk)) {
            // past the budget, the rest waits for the next transaction: its rows go with it
            if (ran.length + failed.length > 0 && performance.now() - started > TX_BUDGET_MS) {
              for (const d of run) if (owned(d)) await undo(d)
              continue
            }
            if (performance.now() - slice > SLICE_MS) {
              await new Promise((r) => setImmediate(r))
              slice = performance.now()
            }
            // another relay recorded it first (its lease ran out on us): it is done
            const todoRun = run.filter(owned)
            const consumer = run[0]!.consumer
            if (todoRun.length > 1 && consumer.handleMany) {
              try {
                await tx.savepoint(() =>
                  consumer.handleMany!(
                    todoRun.map((d) => d.event),
                    tx,
                  ),
                )
                ran.push(...run)
                continue
              } catch {
                // one of them failed: each alone, so the others are not held up
              }
            }
            for (const d of run) {
              if (!owned(d)) {
                ran.push(d)
                continue
              }
              try {
                await tx.savepoint(() => d.consumer.handle!(d.event, tx))
                ran.push(d)
              } catch (e) {
                failed.push({ d, e })
                await undo(d)
              }
            }
          }
          // every delivery of the pass done, none failed: the events are dispatched in this commit (on
          // sqld a write transaction fewer per pass; the statement rides with the commit)
          if (failed.length === 0 && at + ran.length === todo.length && finish.clean()) {
            await tx.deferred(
              `update outbox set dispatched_at = ?, lease_owner = null, lease_until = null
               where id in (${finish.ids.map(() => '?').join(',')})`,
              [this.clock.now(), ...finish.ids],
            )
            marking = true
          }
        })
      } catch (e) {
        // the transaction itself failed: none of its deliveries happened; the chunk is tried again later
        for (const d of chunk) {
          this.failed(d.consumer, d.row, e)
          fail({ row: d.row, consumer: d.consumer, error: errorText(e), permanent: false })
        }
        at += chunk.length
        continue
      }
      if (marking) marked = true
      for (const d of ran) committed.add(d)
      this.stats.delivered += ran.length
      for (const { d, e } of failed) {
        this.failed(d.consumer, d.row, e)
        fail({ row: d.row, consumer: d.consumer, error: errorText(e), permanent: false })
      }
      at += ran.length + failed.length
    }
    return { committed, marked }
  }

  private failed(consumer: Consumer<unknown>, row: Claimed, e: unknown) {
    this.stats.failed++
    this.logger.log('warn', 'event consumer failed', {
      consumer: consumer.name,
      event_id: row.id,
      topic: row.topic,
      attempt: row.attempts + 1,
      err: errorText(e),
    })
  }

  private async retryLater(row: Claimed) {
    const delay = (this.opts.backoffMs ?? defaultBackoff)(row.attempts + 1)
    await this.db.execute({
      sql: `update outbox set attempts = attempts + 1, next_at = ?, lease_owner = null, lease_until = null
            where id = ?`,
      args: [this.clock.now() + delay, row.id],
    })
  }

  private async park(row: Claimed, failures: Failure[]) {
    const now = this.clock.now()
    await this.db.transaction(async (tx) => {
      for (const f of failures) {
        await tx.execute({
          sql: `insert into dead_letters (event_id, consumer, brand_id, topic, payload, error, attempts, failed_at)
                values (?, ?, ?, ?, ?, ?, ?, ?)`,
          args: [
            row.id,
            f.consumer.name,
            row.brand_id,
            row.topic,
            row.payload,
            f.error,
            row.attempts + 1,
            now,
          ],
        })
        await tx.execute({
          sql: `insert into event_deliveries (event_id, consumer, status, at) values (?, ?, 'dead', ?)
                on conflict do nothing`,
          args: [row.id, f.consumer.name, now],
        })
      }
    })
    this.stats.parked += failures.length
    this.logger.log('error', 'event parked in dead letters', {
      event_id: row.id,
      topic: row.topic,
      consumers: failures.map((f) => f.consumer.name),
    })
  }
}
