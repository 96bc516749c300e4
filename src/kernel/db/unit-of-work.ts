import type { Clock } from '../clock'
import type { Events } from '../events/events'
import type { PendingEvent, Topic } from '../events/topic'
import type { Logger } from '../logger'
import type { Db, Tx } from './client'
import type { WriteOrder } from './group-writer'

/** What a unit of work collects while its transaction runs. */
export interface Work {
  /** An event of the change, written in the same transaction. */
  emit<T>(topic: Topic<T>, brandId: number, payload: T): void
  /**
   * An effect that runs once after the commit (a cache invalidation, re-filing an order in a book);
   * effects under the same key run once, the last one given.
   */
  after(key: string, effect: () => unknown): void
}

/**
 * One unit of work for writes: runs the transaction, writes the events it emitted in it, and after the
 * commit applies its effects once each and wakes the event relay. A failed effect does not fail a
 * committed change: it is logged (every cache it touches also expires on its own).
 */
export class UnitOfWork {
  constructor(
    private readonly db: Db,
    private readonly events: Events,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  /** `order`: where its transaction takes its turn in this process's write queue (WriteOrder). */
  async run<T>(fn: (tx: Tx, work: Work) => Promise<T>, order?: WriteOrder): Promise<T> {
    const pending: PendingEvent[] = []
    const effects = new Map<string, () => unknown>()
    const work: Work = {
      emit: (topic, brandId, payload) => pending.push({ brandId, topic: topic.name, payload }),
      after: (key, effect) => {
        effects.delete(key)
        effects.set(key, effect)
      },
    }
    let deliver = false
    const result = await this.db.transaction(async (tx) => {
      const r = await fn(tx, work)
      deliver = await this.events.write(tx, pending, this.clock.now())
      return r
    }, order)
    for (const [key, effect] of effects)
      try {
        await effect()
      } catch (e) {
        this.logger.log('error', 'after-commit effect failed', {
          effect: key,
          err: e instanceof Error ? e.message : String(e),
        })
      }
    if (deliver) this.events.wake()
    return result
  }
}
