import type { z } from 'zod'
import type { Queryable, Tx } from '../db/client'

/** A typed event topic: its name (`module.fact`, e.g. `trade.closed`) and the schema of its payload. */
export interface Topic<T> {
  readonly name: string
  readonly schema: z.ZodType<T>
}

/** Each module declares its topics in its `events.ts`; consumers of other modules import them from its index. */
export const defineTopic = <T>(name: string, schema: z.ZodType<T>): Topic<T> => ({ name, schema })

/** An event as a consumer receives it. `id` is unique and stable: a consumer that has side effects outside
 * the database keys them by it (a redelivery after a crash then changes nothing). */
export interface DeliveredEvent<T> {
  id: number
  topic: string
  brandId: number
  payload: T
  createdAt: number
}

/**
 * A reaction to one topic. `handle` runs in a transaction that also records the delivery, so its database
 * writes happen exactly once; a throw rolls both back and the relay retries with backoff, then parks the
 * event in the dead-letter table for this consumer.
 */
export interface Consumer<T> {
  /** Unique and stable (deliveries are recorded under it), e.g. `notifications.trade-closed`. */
  name: string
  topic: Topic<T>
  /**
   * Whether the event can concern this consumer, from its payload alone (pure, no I/O). Asked as the event
   * is written: an event no consumer accepts is written delivered and never claimed (a client's own close
   * is nothing to the notifications of stop loss and take profit). Without it every event is accepted.
   */
  accepts?(event: { brandId: number; payload: T }): boolean
  /**
   * Which of the events being written (of this topic, accepted) can concern this consumer: asked once for
   * all of them, in the writer's transaction, so one read serves a whole batch (e.g. "which of these
   * logins is a copy master with followers"). An event no consumer is interested in is written delivered
   * and never claimed. The answer is the writer's own view: a change committed after the event (a
   * follower who subscribes after the master's open) does not concern it. Only for what the event's
   * transaction can know: a consumer whose interest may appear later uses `wants`.
   */
  interested?(tx: Queryable, events: readonly { brandId: number; payload: T }[]): Promise<boolean[]>
  /**
   * The consumer's database writes, in the delivery's transaction. A consumer without it writes nothing
   * and costs no transaction: its `after` runs once the event is claimed, and is its whole delivery.
   */
  handle?(event: DeliveredEvent<T>, tx: Tx): Promise<void>
  /**
   * Several events of a pass at once, in order, in one transaction (set-based statements where `handle`
   * would make a few round trips per event): the same writes as `handle` on each in turn. If it throws,
   * the relay undoes it and hands the events to `handle` one by one.
   */
  handleMany?(events: DeliveredEvent<T>[], tx: Tx): Promise<void>
  /**
   * Which of a relay pass's events (of this topic, accepted, not delivered yet) concern this consumer at
   * all, asked once for all of them outside any transaction before `handle` (one read per pass, e.g.
   * "which of these logins is a copy master"; a read per event was ~90 reads a second in the scale-out
   * soak): false passes an event over without a transaction or a delivery row. Without it a topic's every
   * event costs each consumer a write transaction (trade opens lost 70 % of their throughput to one
   * consumer that cared about a few logins). An answer must not depend on what `handle` of another event
   * could still change for this one.
   */
  wants?(events: readonly DeliveredEvent<T>[]): Promise<boolean[]> | boolean[]
  /**
   * Once the delivery has committed: an effect outside the database that must not run inside its
   * transaction (waking the engine, which writes on its own). Beside a `handle`, best effort: a failure is
   * logged, not retried (the delivery is written). Alone (no `handle`), it runs at least once: a failure
   * is the event's, tried again with backoff and parked past the relay's attempts, so it must be
   * idempotent (keyed by the event).
   */
  after?(event: DeliveredEvent<T>): Promise<void>
}

/** An event on its way into the outbox (written in the transaction of the change it describes). */
export interface PendingEvent {
  brandId: number
  topic: string
  payload: unknown
}

export const event = <T>(topic: Topic<T>, brandId: number, payload: T): PendingEvent => ({
  brandId,
  topic: topic.name,
  payload,
})

/** The payload type of a topic (`PayloadOf<typeof TradeClosed>`). */
export type PayloadOf<T> = T extends Topic<infer P> ? P : never
