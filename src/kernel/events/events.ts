import { getTableName } from 'drizzle-orm'
import { deferRows, insertRows } from '../db/bulk-insert'
import type { Queryable, Tx } from '../db/client'
import { outbox } from './schema'
import type { Consumer, PendingEvent } from './topic'

const COLUMNS = [outbox.brandId, outbox.topic, outbox.payload, outbox.createdAt, outbox.dispatchedAt].map(
  (c) => c.name,
)

/**
 * The event log of the deployment: writes events into the outbox in the caller's transaction, knows the
 * consumers of every topic (registered once, when the modules are set up), and wakes the relay after a
 * commit so an event reaches its consumers within milliseconds; the table stays the durable truth.
 */
export class Events {
  private readonly byTopic = new Map<string, Consumer<unknown>[]>()
  private readonly wakers: (() => void)[] = []

  register(consumers: readonly Consumer<unknown>[]) {
    const names = new Set([...this.byTopic.values()].flat().map((c) => c.name))
    for (const c of consumers) {
      if (names.has(c.name)) throw new Error(`consumer ${c.name} is registered twice`)
      names.add(c.name)
      const list = this.byTopic.get(c.topic.name) ?? []
      list.push(c)
      this.byTopic.set(c.topic.name, list)
    }
  }

  consumersOf(topic: string): readonly Consumer<unknown>[] {
    return this.byTopic.get(topic) ?? []
  }

  /** The consumers that accept an event by its payload (Consumer.accepts). */
  acceptedBy(topic: string, e: { brandId: number; payload: unknown }): Consumer<unknown>[] {
    return this.consumersOf(topic).filter((c) => !c.accepts || c.accepts(e))
  }

  /**
   * Writes events in the caller's transaction. An event no consumer accepts (none of its topic, or none
   * whose `accepts` takes its payload, or none `interested` in it) is written delivered: it stays in the
   * log for the retention period, and the relay never has to claim it. True when some event awaits a
   * consumer (the caller wakes the relay after its commit).
   */
  async write(tx: Queryable, events: readonly PendingEvent[], now: number): Promise<boolean> {
    if (events.length === 0) return false
    const awaited = await this.awaited(tx, events)
    const rows = events.map((e, i) => [
      e.brandId,
      e.topic,
      JSON.stringify(e.payload),
      now,
      awaited[i] ? null : now,
    ])
    // nothing reads the rows back: in a transaction they ride with its next round trip (on sqld, the commit)
    if (inTransaction(tx)) await deferRows(tx, getTableName(outbox), COLUMNS, rows)
    else await insertRows(tx, getTableName(outbox), COLUMNS, rows)
    return awaited.some(Boolean)
  }

  /**
   * Whether each event awaits a consumer: one that accepts it and has no `interested`, or one whose
   * `interested` says so, asked once per consumer for all the events it accepts (a read per batch, not
   * per event).
   */
  private async awaited(tx: Queryable, events: readonly PendingEvent[]): Promise<boolean[]> {
    const out = events.map(() => false)
    const ask = new Map<Consumer<unknown>, number[]>()
    events.forEach((e, i) => {
      for (const c of this.consumersOf(e.topic)) {
        if (c.accepts && !c.accepts(e)) continue
        if (!c.interested) {
          out[i] = true
          return
        }
        const list = ask.get(c)
        if (list) list.push(i)
        else ask.set(c, [i])
      }
    })
    for (const [c, all] of ask) {
      const open = all.filter((i) => !out[i])
      if (open.length === 0) continue
      // a question that fails is no answer: the event awaits the relay, whose `wants` asks again (the
      // change being written must not fail for it)
      const yes = await c.interested!(
        tx,
        open.map((i) => events[i]!),
      ).catch(() => open.map(() => true))
      open.forEach((i, k) => {
        if (yes[k]) out[i] = true
      })
    }
    return out
  }

  /** Called after a commit that wrote events: the local relay runs a pass right away. */
  wake() {
    for (const w of this.wakers) w()
  }

  onWake(waker: () => void) {
    this.wakers.push(waker)
  }
}

/** A transaction's handle (a value import of its class would bring the local driver into the Worker). */
const inTransaction = (q: Queryable): q is Tx => 'deferred' in q
