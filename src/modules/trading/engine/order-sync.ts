import { and, eq, gt, inArray, lte, ne, type SQL } from 'drizzle-orm'
import { readSkippingBadRows } from '../../../kernel/db/tolerant'
import type { OrderRow } from '../book/positions'
import type { TradingCtx } from '../context'
import { orders } from '../schema'

/** Another instance's transaction may commit a little after its clock stamped updated_at. */
const RESYNC_OVERLAP_MS = 5000
/**
 * The resync window is read in slices with a turn of the event loop between them: under load it holds
 * tens of thousands of this instance's own writes, which the index still walks, and in one statement
 * that walk was a 6-17 ms stall of every request in flight.
 */
const RESYNC_SLICE_MS = 500

/** What the sync reads of the trigger engine's book and files into it. */
interface SyncedBook {
  resting(ticket: number): { order: OrderRow; groupId: number } | undefined
  track(o: OrderRow, groupId: number): Promise<void>
}

/** The engine's book kept in step with the database (the orders other instances write). */
export class OrderSync {
  /** updated_at of other instances' orders read recently, so a resync skips what it already knows. */
  readonly seen = new Map<number, number>()
  private syncedUpTo = 0

  constructor(
    private readonly ctx: TradingCtx,
    private readonly book: SyncedBook,
  ) {}

  /** Forgets everything: the next run loads every active order. */
  reset() {
    this.seen.clear()
    this.syncedUpTo = 0
  }

  /**
   * Loads every active order (start-up), then keeps up with other instances' writes: the tickets and
   * update times another instance changed in the last few seconds (every write stamps `origin`, so this
   * instance's own are left out) are compared with what was read before, and only the unknown ones are
   * read in full.
   */
  async run() {
    const now = this.ctx.clock.now()
    // the group of each order's account, from the accounts module (orders of a login that is gone are left out)
    const full = async (where: SQL) => {
      const found = await this.ctx.db.select().from(orders).where(where)
      const groups = await this.ctx.accounts.groupIdsOf(this.ctx.db, [...new Set(found.map((o) => o.login))])
      return found.flatMap((order) => {
        const groupId = groups.get(order.login)
        return groupId === undefined ? [] : [{ order, groupId }]
      })
    }
    let rows: { order: OrderRow; groupId: number }[]
    const active = inArray(orders.state, ['open', 'pending'])
    if (this.syncedUpTo === 0)
      rows = await readSkippingBadRows(this.ctx.logger, 'resting orders', {
        all: () => full(active),
        keys: async () =>
          (await this.ctx.db.select({ t: orders.ticket }).from(orders).where(active)).map((r) => r.t),
        one: (ticket) => full(eq(orders.ticket, ticket)),
      })
    else {
      const since = this.syncedUpTo - RESYNC_OVERLAP_MS
      const changed: { ticket: number; updatedAt: number }[] = []
      for (let from = since; ; from += RESYNC_SLICE_MS) {
        // the last slice is open-ended: another instance's clock may run ahead of this one
        const last = from + RESYNC_SLICE_MS >= now
        const to = last ? undefined : lte(orders.updatedAt, from + RESYNC_SLICE_MS)
        changed.push(
          ...(await this.ctx.db
            .select({ ticket: orders.ticket, updatedAt: orders.updatedAt })
            .from(orders)
            .where(and(gt(orders.updatedAt, from), to, ne(orders.origin, this.ctx.origin)))),
        )
        if (last) break
        await new Promise((r) => setImmediate(r))
      }
      const unknown = changed.filter((c) => this.seen.get(c.ticket) !== c.updatedAt).map((c) => c.ticket)
      rows = []
      for (let i = 0; i < unknown.length; i += 500)
        rows.push(...(await full(inArray(orders.ticket, unknown.slice(i, i + 500)))))
      for (const [ticket, at] of this.seen) if (at <= since) this.seen.delete(ticket)
    }
    for (const r of rows) {
      this.seen.set(r.order.ticket, r.order.updatedAt)
      const known = this.book.resting(r.order.ticket)
      if (known && known.order.updatedAt > r.order.updatedAt) continue
      await this.book.track(r.order, r.groupId)
    }
    this.syncedUpTo = now
  }
}
