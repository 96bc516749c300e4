import type { z } from 'zod'
import type { Logger } from '../logger'
import { backlogIfAny, backlogOf, EDGE_FLUSH_MAX } from './backlog'
import type { BusEntry, MessageBus } from './bus'
import { DEADLINE_TYPES } from './stream'

/**
 * A typed channel of the bus, declared by the module that publishes on it (like an outbox topic): its
 * name and, for changes, the schema its entries are checked against when the engine reads them. A hot
 * channel (ticks) may go without a schema: its type is then the publisher's promise alone.
 */
export interface Channel<T> {
  readonly name: string
  readonly schema?: z.ZodType<T>
  /** What an entry costs the bus to keep (kernel/bus/local.ts), where entries vary in size (a batch of ticks). */
  readonly weight?: (data: T) => number
}

export function defineChannel<T>(
  name: string,
  schema?: z.ZodType<T>,
  /** `deadline`: its entries carry prices, and one Redis appended after its publisher gave up is dropped (stream.ts). */
  opts: { weight?: (data: T) => number; deadline?: true } = {},
): Channel<T> {
  if (opts.deadline) DEADLINE_TYPES.add(name)
  return { name, schema, weight: opts.weight }
}

/** An entry of a channel as a handler receives it: its bus id and its typed data. */
export interface ChannelEntry<T> extends BusEntry {
  data: T
}

/** A module's reaction to a channel while its instance holds the engine role; `replay` after a takeover. */
export interface ChannelHandler<T> {
  channel: Channel<T>
  handle(entries: ChannelEntry<T>[], at: { replay: boolean }): Promise<void>
}

/** Declares a handler with its channel's type (a list of handlers holds several types). */
export const onChannel = <T>(
  channel: Channel<T>,
  handle: ChannelHandler<T>['handle'],
): ChannelHandler<T> => ({
  channel,
  handle,
})

/**
 * Tells the engine of a change already committed to the database. Never throws: while the bus is away the
 * answer must not turn a committed write into an error. A change the bus refuses is not dropped: it waits
 * in the bus's backlog (backlog.ts), in order, and is sent again once the bus answers; a later change of
 * the same channel waits behind it. Only past the backlog's bounds (its size, its age) or a close that
 * could not send it is one lost (logged as an error); the engine finds it then through its safety nets
 * (the resync jobs re-read changed rows; a takeover reloads every book).
 */
export async function publishChange<T>(
  bus: MessageBus,
  logger: Logger,
  channel: Channel<T>,
  data: T,
): Promise<void> {
  const type = channel.name
  const waiting = backlogIfAny(bus)
  if (waiting?.holds(type)) {
    waiting.add(type, data)
    // at the edge no timer sends it: this request does, behind the ones waiting
    if (bus.requestScoped) await waiting.flush(EDGE_FLUSH_MAX)
    return
  }
  try {
    await bus.publish(type, data)
  } catch (e) {
    backlogOf(bus, logger).add(type, data, e)
  }
}

/** Appends typed data to a channel; resolves with the entry's id. */
export const publishTo = <T>(bus: MessageBus, channel: Channel<T>, data: T) =>
  bus.publish(channel.name, data, channel.weight?.(data))
