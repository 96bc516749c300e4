import { type BusEntry, compareIds, ZERO_ID } from './bus'

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
 * Appending arguments of XADD, shared with the Upstash adapter. `lastMs`: the time part of the last id
 * this publisher appended (the stream's clock, not this host's): entries older than BUS_KEEP_MS before
 * it are trimmed (approximately: whole nodes of the stream). A publisher's first append trims nothing
 * (a count would cut a busy stream short of its minutes); the appends after it do.
 */
export const xaddArgs = (type: string, data: unknown, lastMs = 0, keepMs = BUS_KEEP_MS) => [
  BUS_STREAM,
  ...(lastMs > keepMs ? ['MINID', '~', String(lastMs - keepMs)] : []),
  '*',
  't',
  type,
  'd',
  JSON.stringify(data),
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
 * leaves it at 0-0.)
 */
export async function rangeOf(send: Send, after: string, limit: number) {
  if (after === ZERO_ID) {
    const rows = ((await send('XRANGE', [BUS_STREAM, '-', '+', 'COUNT', String(limit)])) ?? []) as Raw[]
    return rows.map(parseEntry)
  }
  const rows = ((await send('XRANGE', [BUS_STREAM, after, '+', 'COUNT', String(limit + 1)])) ?? []) as Raw[]
  if (rows.length > 0 && compareIds(rows[0]![0], after) === 0) return rows.slice(1).map(parseEntry)
  const [first] = ((await send('XRANGE', [BUS_STREAM, '-', '+', 'COUNT', '1'])) ?? []) as Raw[]
  if (first && compareIds(after, first[0]) < 0) return null
  return rows.slice(0, limit).map(parseEntry)
}
