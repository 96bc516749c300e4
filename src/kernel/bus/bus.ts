import type { Logger } from '../logger'

/**
 * The message bus: one ordered log of what every instance must see in the same order (ticks, changes
 * of resting orders and alerts). Entries get global ids (`<ms>-<n>`, Redis stream ids), so an SSE
 * client resumes on any instance and the engine resumes where the previous one stopped.
 */
export interface BusEntry {
  id: string
  type: string
  data: unknown
}

export type BusHandler = (entries: BusEntry[]) => Promise<void> | void

export interface Subscription {
  /** Id of the last entry handed to the handler. */
  readonly position: string
  /**
   * When a read of the bus last succeeded (epoch ms; an empty blocking read counts): a reader whose last
   * read is old knows its prices may be stale (the local bus is always current).
   */
  readonly lastReadAt: number
  close(): Promise<void>
}

export interface MessageBus {
  readonly kind: 'local' | 'redis' | 'upstash'
  /**
   * Redis's clock less this host's in ms, as this instance's appends measured it (stream.ts, StreamClock):
   * null before its first append; absent on the local bus. The deadlines of ticks cancel it.
   */
  readonly clockOffsetMs?: number | null
  /**
   * Nothing of this bus outlives the request that uses it (the edge: workerd drops an ended request's
   * timers and I/O). What it must send again (backlog.ts) is sent by a later request, never by a timer.
   */
  readonly requestScoped?: boolean
  /**
   * Appends an entry; resolves with its id (the local bus: once every subscriber has handled it). `weight`:
   * what the entry costs to keep, in the units the local bus keeps a bounded number of (its ticks, for an
   * entry of ticks; 1 by default).
   */
  publish(type: string, data: unknown, weight?: number): Promise<string>
  /**
   * Hands every entry after `from` (`'$'`: after the newest now) to `handler`, in order, one batch at a
   * time: the next batch waits for the handler. `pollMs`: how often a bus that polls (Upstash) asks for
   * new entries, where the default (100 ms) is more than the reader needs.
   */
  subscribe(from: string, handler: BusHandler, opts?: { pollMs?: number }): Subscription
  /** Entries after `after`, oldest first, at most `limit`; null when `after` is older than what is kept. */
  range(after: string, limit: number): Promise<BusEntry[] | null>
  /** Id of the newest entry ('0-0' when empty). */
  newest(): Promise<string>
  close(): Promise<void>
}

export const ZERO_ID = '0-0'
const ID = /^(\d{1,15})-(\d{1,15})$/

export const isBusId = (s: string) => ID.test(s)

/** Orders two bus ids (-1, 0, 1). */
export function compareIds(a: string, b: string): number {
  const [am, an] = a.split('-').map(Number)
  const [bm, bn] = b.split('-').map(Number)
  return am !== bm ? Math.sign(am - bm) : Math.sign(an - bn)
}

/** Milliseconds part of an id: when the entry was appended. */
export const idTime = (id: string) => Number(id.split('-')[0])

/**
 * Now in the bus's clock (Redis's, in which its ids are): this host's Date.now() plus the offset the bus
 * measured (none before its first append, and on the local bus). The age of an entry is `busNow(bus) -
 * idTime(id)`, whatever the skew between this host and Redis.
 */
export const busNow = (bus: Pick<MessageBus, 'clockOffsetMs'>) => Date.now() + (bus.clockOffsetMs ?? 0)

/** When an entry was appended, in this host's clock: its id's time less the offset the bus measured. */
export const idHostTime = (bus: Pick<MessageBus, 'clockOffsetMs'>, id: string) =>
  idTime(id) - (bus.clockOffsetMs ?? 0)

/**
 * Hands entries to a subscriber's handler; its failure is the handler's (logged), not the bus's, so a
 * reader goes on reading.
 */
export async function handOver(handler: BusHandler, entries: BusEntry[], logger: Logger) {
  try {
    await handler(entries)
  } catch (e) {
    logger.log('error', 'bus handler failed', { err: e instanceof Error ? e.message : String(e) })
  }
}
