import { type BusEntry, compareIds, ZERO_ID } from './bus'

export const BUS_STREAM = 'bus:v1'
/** Entries kept in the stream (approximately): minutes of ticks, for SSE resume and engine takeover. */
const BUS_KEEP = 200_000

export type Raw = [string, string[]]

export const parseEntry = ([id, fields]: Raw): BusEntry => {
  const f: Record<string, string> = {}
  for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]] = fields[i + 1]
  return { id, type: f.t ?? '', data: f.d ? JSON.parse(f.d) : null }
}

/** Appending arguments of XADD, shared with the Upstash adapter. */
export const xaddArgs = (type: string, data: unknown) => [
  BUS_STREAM,
  'MAXLEN',
  '~',
  String(BUS_KEEP),
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
