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
 * Whether an entry landed past its publish bound: the time part of its id (the stream's clock when Redis
 * appended it) is later than the deadline its publisher wrote in it (`l`: its own clock when it sent the
 * XADD, plus its bound). Such an entry is dropped by every reader (subscriptions and `range`), and its
 * publisher, when it was still waiting, was told it failed (publishLate): a publish that timed out (an
 * ingest answered 503) is never applied later, at a price long past, when a stalled Redis runs the XADD
 * that was already on its socket (docs/adr/0014: a refused write is not half-written). The rule reads
 * only the entry, so every reader (every instance, the engine after a takeover, an SSE resume) decides
 * the same. An entry without a deadline (an older release's) is on time.
 */
export function landedLate([id, fields]: Raw): boolean {
  for (let i = 0; i + 1 < fields.length; i += 2)
    if (fields[i] === 'l') return idTime(id) > Number(fields[i + 1])
  return false
}

/**
 * How late past sending an append may land (the stream's clock against the publisher's) for `timeoutMs`,
 * the bound its publisher waits for the answer: SKEW_MARGIN_MS shorter, so an XADD that lands after its
 * publisher gave up is late even when the stream's clock is behind the publisher's by up to that margin.
 * The stream's clock ahead of the publisher's eats the rest: at about the bound itself every append is
 * late, and every publish fails, loudly (publishLate logs the skew), never half-written.
 */
export const SKEW_MARGIN_MS = 250
export const lateAfter = (timeoutMs: number) => Math.max(timeoutMs - SKEW_MARGIN_MS, timeoutMs / 2)

/**
 * The error of an append that landed past its deadline: its readers drop it, so its publisher must not
 * take it as published. Says how far past it landed, and, when the answer came well within the bound,
 * that the stream's clock is ahead of this host's (then every append is late: the fix is the clocks).
 */
export function publishLate(id: string, deadline: number, waitedMs: number, lateMs: number, logger: Logger) {
  const past = idTime(id) - deadline
  const skewed = waitedMs < lateMs / 2
  logger.log('warn', 'bus append landed past its bound: readers drop it', {
    id,
    past_ms: past,
    waited_ms: waitedMs,
    ...(skewed ? { hint: "the stream's clock is ahead of this host's" } : {}),
  })
  return new DependencyDown('bus', `the append landed ${past} ms past its ${lateMs} ms bound`)
}

/**
 * Appending arguments of XADD, shared with the Upstash adapter. `lastMs`: the time part of the last id
 * this publisher appended (the stream's clock, not this host's): entries older than BUS_KEEP_MS before
 * it are trimmed (approximately: whole nodes of the stream). A publisher's first append trims nothing
 * (a count would cut a busy stream short of its minutes); the appends after it do. `deadline`: the latest
 * id time at which the entry counts (landedLate).
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
