import type { Logger } from '../logger'
import { DependencyDown } from '../resilience'
import { type BusEntry, compareIds, idTime, ZERO_ID } from './bus'

export const BUS_STREAM = 'bus:v1'
/**
 * How long the stream keeps an entry: minutes of ticks, for a takeover by the standby engine (it replays
 * up to a minute from the last engine's cursor), SSE resume (at most 4,096 entries) and an edge stream's
 * polls. Kept by age (MINID), Redis's memory is the feed's rate times this whatever its batches' sizes
 * (5,000 ticks a second: about 400 MB); kept by count, 200,000 batches of an ingest's 5,000 ticks were
 * tens of gigabytes.
 */
export const BUS_KEEP_MS = 10 * 60_000

export type Raw = [string, string[]]

export const parseEntry = ([id, fields]: Raw): BusEntry => {
  const f: Record<string, string> = {}
  for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]] = fields[i + 1]
  return { id, type: f.t ?? '', data: f.d ? JSON.parse(f.d) : null }
}

/**
 * The channels whose entries carry a deadline: those that carry prices, declared so by their module
 * (`defineChannel(..., { deadline: true })`, the ticks). A tick applied after its publisher was told it
 * failed (the ingest answered 503, the feed sent it again or went on) is applied at a price long past, and
 * one that closes positions cannot be taken back. A change notice (orders, accounts, groups, alerts, phases
 * changed) stays true however late: it carries no deadline, is delivered late rather than never, and its
 * publish never fails for lateness (some have no resync).
 */
export const DEADLINE_TYPES = new Set<string>()

/**
 * Whether an entry landed past its publish bound: it is of a DEADLINE_TYPES channel, and the time part of
 * its id (the stream's clock when Redis appended it) is later than the deadline its publisher wrote in it
 * (`l`, in the stream's clock too: Appender). Such an entry is dropped by every reader (subscriptions and
 * `range`), and its publisher, when it was still waiting, was told it failed (publishLate): a publish that
 * timed out (an ingest answered 503) is never applied later, at a price long past, when a stalled Redis
 * runs the XADD that was already on its socket (docs/adr/0014: a refused write is not half-written). The
 * rule reads only the entry, so every reader (every instance, the engine after a takeover, an SSE resume)
 * decides the same. An entry without a deadline (an older release's) is on time, and so is a change
 * notice an older release wrote one in.
 */
export function landedLate([id, fields]: Raw): boolean {
  let type: string | undefined
  let deadline: number | undefined
  for (let i = 0; i + 1 < fields.length; i += 2)
    if (fields[i] === 't') type = fields[i + 1]
    else if (fields[i] === 'l') deadline = Number(fields[i + 1])
  return deadline !== undefined && type !== undefined && DEADLINE_TYPES.has(type) && idTime(id) > deadline
}

/**
 * How late past sending an append may land, in the stream's clock, for `timeoutMs`, the bound its
 * publisher waits for the answer: BOUND_MARGIN_MS shorter (millisecond rounding of both clocks). The skew
 * of the clocks cancels (StreamClock), so an append that lands after its publisher gave up is always late,
 * and one that lands within the bound is on time whatever the skew.
 */
export const BOUND_MARGIN_MS = 50
export const lateAfter = (timeoutMs: number) => Math.max(timeoutMs - BOUND_MARGIN_MS, timeoutMs / 2)

/**
 * The stream's clock as this publisher sees it: an offset to add to this host's clock (Date.now()). Each
 * append measures it for free: its id's time `r` is the stream's clock at some moment between sending
 * (`sentAt`, this host's clock) and the answer (`answeredAt`), so the offset is in [r - answeredAt,
 * r - sentAt]. The estimate is the largest lower bound of the last WINDOW_MS to 2 * WINDOW_MS (an answer
 * held up by this host, a GC pause, only lowers its own bound and is outweighed): never above the true
 * offset by more than a millisecond, so a deadline written with it is never later than the moment its
 * publisher gives up, and within about the fastest round trip of it. A bound that an answer proves too
 * high (the offset above its upper bound: this host's clock stepped forward, or a failover to a Redis of
 * another clock) drops what was measured. Null until the first measurement (Appender asks TIME then).
 */
export class StreamClock {
  static readonly WINDOW_MS = 30_000
  private cur = Number.NEGATIVE_INFINITY
  private prev = Number.NEGATIVE_INFINITY
  private since = Number.NEGATIVE_INFINITY

  get offset(): number | null {
    const o = Math.max(this.cur, this.prev)
    return Number.isFinite(o) ? o : null
  }

  /** One measurement: the stream's time `streamMs` seen between `sentAt` and `answeredAt` (this host's). */
  sample(streamMs: number, sentAt: number, answeredAt: number) {
    const o = this.offset
    // a millisecond or two of rounding either way is no contradiction
    if (o !== null && o > streamMs - sentAt + 2) this.reset()
    if (answeredAt - this.since >= StreamClock.WINDOW_MS || answeredAt < this.since) {
      this.prev = this.cur
      this.cur = Number.NEGATIVE_INFINITY
      this.since = answeredAt
    }
    this.cur = Math.max(this.cur, streamMs - answeredAt)
  }

  /** Forgets what was measured (a failed call: Redis may come back as another server, of another clock). */
  reset() {
    this.cur = Number.NEGATIVE_INFINITY
    this.prev = Number.NEGATIVE_INFINITY
    this.since = Number.NEGATIVE_INFINITY
  }
}

/** The stream's clock of a TIME answer ([seconds, microseconds]), in milliseconds. */
export const timeMs = (answer: unknown) => {
  const [sec, usec] = answer as [string | number, string | number]
  return Number(sec) * 1000 + Math.floor(Number(usec) / 1000)
}

/**
 * Appends to the stream for one publisher (RedisBus, UpstashBus): trims by age (xaddArgs), measures the
 * stream's clock on every append (StreamClock: no extra round trip), and gives an entry of a
 * DEADLINE_TYPES channel its deadline in the stream's clock: this host's now, plus the offset, plus
 * lateAfter(timeoutMs). Only when the offset is unknown (the first such append, or the first after a
 * failed call) is TIME asked first, once. An answer past the deadline is a failure (publishLate): its
 * readers drop the entry. Other entries carry no deadline and their publish never fails for lateness.
 */
export class Appender {
  readonly clock = new StreamClock()
  /** The time part of the last id appended here: what the next append trims before. */
  private lastMs = 0

  constructor(
    private readonly send: Send,
    private readonly timeoutMs: number,
    private readonly logger: Logger,
    private readonly keepMs = BUS_KEEP_MS,
  ) {}

  async append(type: string, data: unknown): Promise<string> {
    try {
      const bounded = DEADLINE_TYPES.has(type)
      if (bounded && this.clock.offset === null) {
        const sentAt = Date.now()
        const t = timeMs(await this.send('TIME', []))
        this.clock.sample(t, sentAt, Date.now())
      }
      const sentAt = Date.now()
      const bound = lateAfter(this.timeoutMs)
      const deadline = bounded ? sentAt + (this.clock.offset ?? 0) + bound : undefined
      const id = String(await this.send('XADD', xaddArgs(type, data, this.lastMs, this.keepMs, deadline)))
      const answeredAt = Date.now()
      this.clock.sample(idTime(id), sentAt, answeredAt)
      this.lastMs = Math.max(this.lastMs, idTime(id))
      if (deadline !== undefined && idTime(id) > deadline)
        throw publishLate(id, deadline, answeredAt - sentAt, bound, this.logger)
      return id
    } catch (e) {
      if (!(e instanceof LatePublish)) this.clock.reset()
      throw e
    }
  }
}

/** A publish whose entry landed past its deadline (a DependencyDown: the caller answers 503). */
export class LatePublish extends DependencyDown {}

/**
 * The error of an append that landed past its deadline: its readers drop it, so its publisher must not
 * take it as published. Says how far past it landed and how long the answer took.
 */
export function publishLate(id: string, deadline: number, waitedMs: number, lateMs: number, logger: Logger) {
  const past = idTime(id) - deadline
  logger.log('warn', 'bus append landed past its bound: readers drop it', {
    id,
    past_ms: past,
    waited_ms: waitedMs,
  })
  return new LatePublish('bus', `the append landed ${past} ms past its ${lateMs} ms bound`)
}

/**
 * Appending arguments of XADD, shared with the Upstash adapter. `lastMs`: the time part of the last id
 * this publisher appended (the stream's clock, not this host's): entries older than BUS_KEEP_MS before
 * it are trimmed (approximately: whole nodes of the stream). A publisher's first append trims nothing
 * (a count would cut a busy stream short of its minutes); the appends after it do. `deadline`: the latest
 * id time at which the entry counts, in the stream's clock (landedLate; only on DEADLINE_TYPES).
 */
export const xaddArgs = (
  type: string,
  data: unknown,
  lastMs = 0,
  keepMs = BUS_KEEP_MS,
  deadline?: number,
) => [
  BUS_STREAM,
  ...(lastMs > keepMs ? ['MINID', '~', String(lastMs - keepMs)] : []),
  '*',
  't',
  type,
  'd',
  JSON.stringify(data),
  ...(deadline === undefined ? [] : ['l', String(deadline)]),
]

export type Send = (cmd: string, args: string[]) => Promise<unknown>

export async function newestOf(send: Send) {
  const [last] = ((await send('XREVRANGE', [BUS_STREAM, '+', '-', 'COUNT', '1'])) ?? []) as Raw[]
  return last?.[0] ?? ZERO_ID
}

/**
 * XRANGE after an id, or null when the stream was trimmed past it: what lay between may be gone. One call
 * on the common path (at the edge every call is a subrequest of its request, and a stream polls twice a
 * second): the range starts at `after` itself, which a reader that got it from the stream finds there.
 * Only when it is not there (trimmed; or lost with the tail of a Redis that failed over or restarted from
 * a snapshot) is the stream's first entry read: trimmed past it when that entry is later, else what
 * follows it is all there and is answered. (XINFO's max-deleted-entry-id cannot tell: trimming by MAXLEN
 * leaves it at 0-0.) The rows as stored: late ones too (a reader positions itself past them).
 */
export async function rowsAfter(send: Send, after: string, limit: number): Promise<Raw[] | null> {
  if (after === ZERO_ID)
    return ((await send('XRANGE', [BUS_STREAM, '-', '+', 'COUNT', String(limit)])) ?? []) as Raw[]
  const rows = ((await send('XRANGE', [BUS_STREAM, after, '+', 'COUNT', String(limit + 1)])) ?? []) as Raw[]
  if (rows.length > 0 && compareIds(rows[0]![0], after) === 0) return rows.slice(1)
  const [first] = ((await send('XRANGE', [BUS_STREAM, '-', '+', 'COUNT', '1'])) ?? []) as Raw[]
  if (first && compareIds(after, first[0]) < 0) return null
  return rows.slice(0, limit)
}

/**
 * The entries after `after` that landed on time (landedLate), at most `limit`; null when the stream was
 * trimmed past `after`. Late entries do not count against `limit`: a full answer still says more may
 * follow (an SSE resume cut short answers a snapshot instead).
 */
export async function rangeOf(send: Send, after: string, limit: number): Promise<BusEntry[] | null> {
  const out: BusEntry[] = []
  let from = after
  for (;;) {
    const want = limit - out.length
    const rows = await rowsAfter(send, from, want)
    if (rows === null) return null
    for (const r of rows) if (!landedLate(r)) out.push(parseEntry(r))
    if (rows.length < want || out.length >= limit) return out
    from = rows.at(-1)![0]
  }
}

/** The rows' entries that landed on time, and how many did not (a reader logs them: dropLogger). */
export function onTime(rows: Raw[]): { entries: BusEntry[]; late: number } {
  const entries: BusEntry[] = []
  for (const r of rows) if (!landedLate(r)) entries.push(parseEntry(r))
  return { entries, late: rows.length - entries.length }
}

/** A reader's word on late entries it dropped: at once, then at most once a minute with the count since. */
export function dropLogger(logger: Logger) {
  let since = 0
  let loggedAt = Number.NEGATIVE_INFINITY
  return (late: number, lastId: string) => {
    if (late === 0) return
    since += late
    if (Date.now() - loggedAt < 60_000) return
    logger.log('warn', 'bus entries that landed past their publish bound dropped', {
      dropped: since,
      last: lastId,
    })
    since = 0
    loggedAt = Date.now()
  }
}
